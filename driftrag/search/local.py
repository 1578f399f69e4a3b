"""Local search: the question's nearest entities, and what the graph holds on them, answered from.

Query embedding → top `local_top_k_entities` valid entities → in one read, the enabled chunks that
mention them, the reported communities they belong to, the relationships among them and to their
neighbours; beside it, the question's own chunk search by meaning and by words
(`driftrag.search.question_chunks`) → all of it ranked by relevance to the question (rank fusion,
`driftrag.search.ranking`) into a context within `local_context_tokens` that keeps every part (see
`driftrag.search.context.local_context`) → an answer citing the ids of that context. DRIFT builds the
local context of each follow-up from a vector it embedded in a batch, and answers it within its own run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from driftrag.models.identifiers import validate_kb_id
from driftrag.models.seen_rows import SeenRows
from driftrag.search.context import local_context
from driftrag.search.deps import QueryDeps
from driftrag.search.models import SearchContext
from driftrag.search.question_chunks import search_question_chunks
from driftrag.search.run import QueryRun

# Candidates read per kind: more than any budget of a few thousand tokens can hold, bounded anyway.
MAX_CANDIDATE_CHUNKS = 50
MAX_CANDIDATE_COMMUNITIES = 30
MAX_CANDIDATE_RELATIONSHIPS = 100


async def build_local_context(
    deps: QueryDeps, kb: str, question: str, question_vector: Sequence[float], *, seen: SeenRows | None = None
) -> SearchContext:
    """The local context of `question`, whose embedding is `question_vector` (module docstring). `seen`:
    the vector-search candidates the query has read so far (a DRIFT query's follow-ups share them)."""
    settings = deps.settings
    store = deps.stores.search
    kb = validate_kb_id(kb)
    # The question's chunk searches need only the vector and the words: they run beside the entity search.
    similar_chunks = asyncio.ensure_future(
        search_question_chunks(store, kb, question, question_vector, settings, seen=seen)
    )
    try:
        entities = await store.search_entities(kb, question_vector, settings.local_top_k_entities, seen=seen)
        around, similar = await asyncio.gather(
            store.entity_surroundings(
                kb,
                [entity.id for entity in entities],
                chunk_limit=MAX_CANDIDATE_CHUNKS,
                community_limit=MAX_CANDIDATE_COMMUNITIES,
                relationship_limit=MAX_CANDIDATE_RELATIONSHIPS,
            ),
            similar_chunks,
        )
    finally:
        similar_chunks.cancel()  # a no-op once done; an entity search that failed leaves nothing running
    return local_context(
        question,
        entities,
        around.among,
        around.outside,
        around.chunks,
        around.communities,
        budget_tokens=settings.local_context_tokens,
        text_proportion=settings.local_text_proportion,
        community_proportion=settings.local_community_proportion,
        similar_chunks=similar.sources,
        question_rankings=similar.rankings(),
    )


async def retrieve_local(run: QueryRun) -> SearchContext:
    """The local context of the run's question."""
    vector = await run.deps.embedder.aget_query_embedding(run.question)
    return await build_local_context(run.deps, run.kb, run.question, vector)
