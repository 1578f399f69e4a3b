"""Entity search: chunks reached through the entities a question names, beside plain vector search.

The namer task lists the names in the question while the question is embedded. Vector search returns
the top `basic_top_k` enabled chunks. Valid entities whose name contains one of the names
(case-sensitive; exact matches first, then shorter names; at most `entity_search_max_entities`) and
their one-hop neighbours (at most as many again, nearest to the best-ranked match first) lead to the
enabled chunks that mention them; those the vector search did not already return are added as extra
sources with origin `entity:<name>` (the best-ranked entity the chunk mentions).

The context shows both groups and the entities: similar passages and linked passages get
`ENTITY_CHUNK_SHARE` of the budget each, the matched entities and neighbours the rest; unused budget
flows to the linked passages first, then to the similar ones, then to the entities.
"""

from __future__ import annotations

import asyncio

from driftrag.models.search import EntityRow, Source
from driftrag.search.context import ContextItem, ContextPart, ContextSection, assemble_context, chunk_source
from driftrag.search.models import SearchContext
from driftrag.search.run import QueryRun

ENTITY_CHUNK_SHARE = 0.45
MAX_LINKED_CHUNKS = 50


def _entity_source(row: EntityRow, origin: str) -> Source:
    return Source(
        id=row.id, kind="entity", title=row.name, text=f"{row.name}: {row.description}".strip(), origin=origin
    )


def entity_context(
    similar: list[Source], linked: list[Source], entities: list[Source], budget_tokens: int
) -> SearchContext:
    sections = [
        ContextSection(
            "similar", ENTITY_CHUNK_SHARE, [ContextPart("Passages similar to the question", map_items(similar))]
        ),
        ContextSection(
            "linked",
            ENTITY_CHUNK_SHARE,
            [ContextPart("Passages linked to entities named in the question", map_items(linked))],
        ),
        ContextSection(
            "entities",
            max(1.0 - 2 * ENTITY_CHUNK_SHARE, 0.0),
            [ContextPart("Entities named in the question, and their neighbours", map_items(entities))],
        ),
    ]
    return assemble_context(sections, budget_tokens, overflow_order=("linked", "similar", "entities"))


def map_items(sources: list[Source]) -> list[ContextItem]:
    return [ContextItem(source) for source in sources]


async def retrieve_entity(run: QueryRun) -> SearchContext:
    """Similar chunks, plus the chunks linked to the entities the question names (module docstring)."""
    settings, store, kb = run.settings, run.deps.stores.search, run.kb
    names, vector = await asyncio.gather(
        run.tasks.namer.entity_names(run.question), run.deps.embedder.aget_query_embedding(run.question)
    )
    similar, matched = await asyncio.gather(
        store.search_chunks(kb, vector, settings.basic_top_k),
        store.match_entity_names(kb, names, settings.entity_search_max_entities),
    )
    neighbours = await store.entity_neighbours(kb, [e.id for e in matched], settings.entity_search_max_entities)
    ranked = matched + neighbours
    rows = await store.entity_chunks(kb, [e.id for e in ranked], MAX_LINKED_CHUNKS, order="rank")
    returned = {chunk.id for chunk in similar}
    linked = [
        chunk_source(row, origin=f"entity:{ranked[row.best_rank].name}") for row in rows if row.id not in returned
    ]
    entities = [_entity_source(e, "name-match") for e in matched] + [
        _entity_source(n, f"neighbour:{matched[n.via_rank or 0].name}") for n in neighbours
    ]
    return entity_context(similar, linked, entities, settings.local_context_tokens)
