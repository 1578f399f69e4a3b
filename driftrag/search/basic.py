"""Basic vector search over chunks (the evaluation baseline): the retriever of the `basic` mode.

The question's embedding retrieves the top `basic_top_k` enabled chunks; they are rendered within
`local_context_tokens` (the one context budget of the answering modes) and answered from.
"""

from __future__ import annotations

from driftrag.models.search import Source
from driftrag.search.context import ContextItem, ContextPart, ContextSection, assemble_context
from driftrag.search.models import SearchContext
from driftrag.search.run import QueryRun


def chunks_context(chunks: list[Source], budget_tokens: int, heading: str = "Sources") -> SearchContext:
    """Chunks in the given (similarity) order under one heading, within the budget."""
    section = ContextSection("text", 1.0, [ContextPart(heading, [ContextItem(chunk) for chunk in chunks])])
    return assemble_context([section], budget_tokens)


async def retrieve_basic(run: QueryRun) -> SearchContext:
    """The top `basic_top_k` enabled chunks by similarity to the question, as a context."""
    settings = run.settings
    vector = await run.deps.embedder.aget_query_embedding(run.question)
    chunks = await run.deps.stores.search.search_chunks(run.kb, vector, settings.basic_top_k)
    return chunks_context(chunks, settings.local_context_tokens)
