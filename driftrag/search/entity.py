"""Entity search: chunks reached through the entities a question names, beside plain vector search.

The namer task lists the names in the question while the question is embedded. The question's own
chunk search (`driftrag.search.question_chunks`: by meaning and by words) returns its enabled chunks. Valid entities
whose name contains one of the names (case-sensitive; exact matches first, then shorter names; at most
`entity_search_max_entities`) and their one-hop neighbours (at most as many again, nearest to the
best-ranked match first) lead to the enabled chunks that mention them; those the vector search did not
already return are added as extra sources with origin `entity:<name>` (the best-ranked entity the
chunk mentions).

The context shows both groups and the entities, each ranked by relevance to the question across
everything gathered (`entity_context`): similar passages get `SIMILAR_SHARE` of the budget, linked
passages `LINKED_SHARE`, the matched entities and neighbours the rest; unused budget flows to the
linked passages first, then to the similar ones, then to the entities.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from driftrag.models.search import Source
from driftrag.search.context import (
    ContextItem,
    ContextPart,
    ContextSection,
    assemble_context,
    chunk_source,
    entity_source,
)
from driftrag.search.models import SearchContext
from driftrag.search.question_chunks import search_question_chunks
from driftrag.search.ranking import GRAPH_WEIGHT, QUESTION_WEIGHT, Ranking, relevance_order
from driftrag.search.run import QueryRun

# Shares of the budget: the question's own chunks (by meaning and by words) hold the evidence most often;
# the linked chunks (those the question's own searches did not return) add the graph's reach, and take
# unused budget first. Chosen on the tuning halves of the question sets.
SIMILAR_SHARE = 0.85
LINKED_SHARE = 0.10
MAX_LINKED_CHUNKS = 50


def entity_context(
    question: str,
    similar: list[Source],
    linked: list[Source],
    entities: list[Source],
    budget_tokens: int,
    *,
    graph_ranking: Sequence[str] = (),
    question_rankings: Sequence[Ranking] | None = None,
) -> SearchContext:
    """The three groups, each ranked by relevance to `question` across all of them: the fusion of the
    question's own chunk rankings (`question_rankings`; without them `similar`'s order), the graph's
    ranking of the chunks (`graph_ranking`, the order the named entities lead to them, `similar` ones
    included), the entities' own order and the BM25 ranking of the question over everything
    (`driftrag.search.ranking`)."""
    order = relevance_order(
        question,
        [*similar, *linked, *entities],
        [
            *(question_rankings or [Ranking("question", QUESTION_WEIGHT, [s.id for s in similar])]),
            Ranking("graph", GRAPH_WEIGHT, graph_ranking or [s.id for s in linked]),
            Ranking("entities", GRAPH_WEIGHT, [s.id for s in entities]),
        ],
    )
    position = {source_id: i for i, source_id in enumerate(order)}

    def items(sources: list[Source]) -> list[ContextItem]:
        return [ContextItem(source) for source in sorted(sources, key=lambda source: position[source.id])]

    sections = [
        ContextSection("similar", SIMILAR_SHARE, [ContextPart("Passages similar to the question", items(similar))]),
        ContextSection(
            "linked",
            LINKED_SHARE,
            [ContextPart("Passages linked to entities named in the question", items(linked))],
        ),
        ContextSection(
            "entities",
            max(1.0 - SIMILAR_SHARE - LINKED_SHARE, 0.0),
            [ContextPart("Entities named in the question, and their neighbours", items(entities))],
        ),
    ]
    return assemble_context(sections, budget_tokens, overflow_order=("linked", "similar", "entities"))


async def retrieve_entity(run: QueryRun) -> SearchContext:
    """Similar chunks, plus the chunks linked to the entities the question names (module docstring)."""
    settings, store, kb = run.settings, run.deps.stores.search, run.kb
    names, vector = await asyncio.gather(
        run.tasks.namer.entity_names(run.question), run.deps.embedder.aget_query_embedding(run.question)
    )
    question_chunks, matched = await asyncio.gather(
        search_question_chunks(store, kb, run.question, vector, settings),
        store.match_entity_names(kb, names, settings.entity_search_max_entities),
    )
    similar = question_chunks.sources
    neighbours = await store.entity_neighbours(kb, [e.id for e in matched], settings.entity_search_max_entities)
    ranked = matched + neighbours
    rows = await store.entity_chunks(kb, [e.id for e in ranked], MAX_LINKED_CHUNKS, order="rank")
    returned = {chunk.id for chunk in similar}
    linked = [
        chunk_source(row, origin=f"entity:{ranked[row.best_rank].name}") for row in rows if row.id not in returned
    ]
    entities = [entity_source(e, origin="name-match") for e in matched] + [
        entity_source(n, origin=f"neighbour:{matched[n.via_rank or 0].name}") for n in neighbours
    ]
    return entity_context(
        run.question,
        similar,
        linked,
        entities,
        settings.local_context_tokens,
        graph_ranking=[row.id for row in rows],
        question_rankings=question_chunks.rankings(),
    )
