"""Basic vector search over chunks (the evaluation baseline): the retriever of the `basic` mode.

The question's embedding ranks the kb's enabled chunks by similarity; basic search takes them in that
order until `local_context_tokens` (the one context budget of the answering modes) is full, and answers
from them. It reads `basic_top_k` chunks first and twice as many each time they all fit, so a budget
larger than ten chunks is filled as well as a small one, the way the graph modes fill theirs: compared at
one budget, every mode then reads as much text.
"""

from __future__ import annotations

from driftrag.models.search import Source
from driftrag.search.context import ContextItem, ContextPart, ContextSection, assemble_context
from driftrag.search.models import SearchContext
from driftrag.search.run import QueryRun

# Bounds the doubling: far more chunks than any answering budget holds.
MAX_BASIC_CHUNKS = 1000


def chunks_context(chunks: list[Source], budget_tokens: int, heading: str = "Sources") -> SearchContext:
    """Chunks in the given (similarity) order under one heading, within the budget."""
    section = ContextSection("text", 1.0, [ContextPart(heading, [ContextItem(chunk) for chunk in chunks])])
    return assemble_context([section], budget_tokens)


async def retrieve_basic(run: QueryRun) -> SearchContext:
    """The enabled chunks most similar to the question, in rank order, until the budget is full."""
    settings = run.settings
    vector = await run.deps.embedder.aget_query_embedding(run.question)
    k = settings.basic_top_k
    while True:
        chunks = await run.deps.stores.search.search_chunks(run.kb, vector, k)
        context = chunks_context(chunks, settings.local_context_tokens)
        # Full when a chunk was left out, or when the kb has no more chunks to give.
        if len(context.sources) < len(chunks) or len(chunks) < k or k >= MAX_BASIC_CHUNKS:
            return context
        k = min(2 * k, MAX_BASIC_CHUNKS)
