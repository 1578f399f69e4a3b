"""Context building within a token budget: the generic assembler and the local-search context.

A context is made of sections, each with a share of the budget and ranked items (a section may have
several parts, each rendered under its own heading: local search's graph section has entities, then
relationships). Assembly:

1. Headings are paid for first. Each section then takes its items in rank order while they fit its
   share; an item that does not fit is skipped, so a smaller one after it can still be taken. An
   item may carry a short form (a community's title and summary) used when its full text does not fit.
2. Unused budget flows: whatever the sections left of their shares is offered to the sections again,
   in `overflow_order`, each going down its ranked list again: items shown by their short form get
   their full text back if the room allows, skipped items are taken if they now fit. For local search
   the order is text, then entities/relationships, then communities, so a context with few source
   chunks spends the rest on more relationships (neighbours) and reports.
3. The rendered text is counted once more (tokens can merge across item boundaries) and the items
   taken last are dropped until it fits, so `n_tokens <= budget_tokens` always holds.

Every item is rendered headed by its id in square brackets (`[chunk-…] title`), which is what answers
cite. Tokens are cl100k tokens, counted locally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from driftrag.models.search import ChunkRow, CommunityRow, EntityRow, RelationshipRow, Source, community_source
from driftrag.providers.tokens import count_tokens
from driftrag.search.models import SearchContext
from driftrag.search.ranking import GRAPH_WEIGHT, QUESTION_WEIGHT, Ranking, relevance_order

_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ContextItem:
    source: Source
    short_text: str | None = None


@dataclass(frozen=True)
class ContextPart:
    heading: str
    items: Sequence[ContextItem]


@dataclass(frozen=True)
class ContextSection:
    name: str
    share: float
    parts: Sequence[ContextPart]


@dataclass
class _Taken:
    order: int
    source: Source
    block: str
    tokens: int


@dataclass
class _Fill:
    section: ContextSection
    candidates: list[tuple[int, int, ContextItem]]
    taken: dict[tuple[int, int], _Taken] = field(default_factory=dict)
    next_index: int = 0


def render_item(source: Source, text: str | None = None) -> str:
    """`[id] title` then the text (`source.text` unless given); the title is left out when the text
    already starts with it."""
    text = source.text if text is None else text
    head = f"[{source.id}]"
    if source.title and not text.startswith(source.title):
        head += f" {source.title}"
    return f"{head}\n{text}".strip()


def assemble_context(
    sections: Sequence[ContextSection], budget_tokens: int, *, overflow_order: Sequence[str] = ()
) -> SearchContext:
    """Fill the sections within `budget_tokens` (see the module docstring for the rules)."""
    fills = [
        _Fill(section, [(p, i, item) for p, part in enumerate(section.parts) for i, item in enumerate(part.items)])
        for section in sections
    ]
    headings = [f"## {part.heading}" for s in sections for part in s.parts if part.items]
    available = max(budget_tokens - sum(count_tokens(h) + 1 for h in headings), 0)
    order = 0

    def fill(state: _Fill, room: int) -> int:
        """Take untaken items in rank order while they fit `room`; return what is left of it."""
        nonlocal order
        for part_index, item_index, item in state.candidates:
            key = (part_index, item_index)
            held = state.taken.get(key)
            if held is not None and held.source.text == item.source.text:
                continue
            # An item shown by its short form gets its full text back when the room allows.
            texts = [item.source.text] + ([item.short_text] if item.short_text and held is None else [])
            for text in texts:
                block = render_item(item.source, text)
                tokens = count_tokens(block) + 1  # + the blank line between items
                cost = tokens - (held.tokens if held is not None else 0)
                if cost <= room:
                    # Copied only when taken in its short form: most candidates of a context do not fit.
                    source = item.source if text == item.source.text else item.source.model_copy(update={"text": text})
                    state.taken[key] = _Taken(held.order if held is not None else order, source, block, tokens)
                    order += held is None
                    room -= cost
                    break
        return room

    leftover = 0
    for state in fills:
        share = max(0, int(available * state.section.share))
        leftover += fill(state, share)
    by_name = {state.section.name: state for state in fills}
    for name in overflow_order:
        if name in by_name:
            leftover = fill(by_name[name], leftover)

    while True:
        text, sources = _render(fills)
        n_tokens = count_tokens(text)
        if n_tokens <= budget_tokens:
            break
        last = max((t for s in fills for t in s.taken.values()), key=lambda t: t.order)
        for state in fills:
            state.taken = {k: t for k, t in state.taken.items() if t is not last}
    tokens_by_kind: dict[str, int] = {}
    for state in fills:
        for taken in state.taken.values():
            tokens_by_kind[taken.source.kind] = tokens_by_kind.get(taken.source.kind, 0) + taken.tokens
    return SearchContext(
        text=text, n_tokens=n_tokens, budget_tokens=budget_tokens, sources=sources, tokens_by_kind=tokens_by_kind
    )


def _render(fills: Sequence[_Fill]) -> tuple[str, list[Source]]:
    blocks: list[str] = []
    sources: list[Source] = []
    for state in fills:
        for part_index, part in enumerate(state.section.parts):
            taken = [state.taken[(part_index, i)] for i in range(len(part.items)) if (part_index, i) in state.taken]
            if not taken:
                continue
            blocks.append(f"## {part.heading}")
            blocks += [t.block for t in taken]
            sources += [t.source for t in taken]
    return _SEPARATOR.join(blocks), sources


# --- sources of the local context -------------------------------------------------------------------------


def chunk_source(row: ChunkRow, *, origin: str, score: float | None = None) -> Source:
    return Source(
        id=row.id, kind="chunk", title=row.title, text=row.text, score=score, origin=origin, **row.positions()
    )


def entity_source(row: EntityRow, *, origin: str) -> Source:
    return Source(
        id=row.id, kind="entity", title=row.name, text=f"{row.name}: {row.description}".strip(), origin=origin
    )


def relationship_source(row: RelationshipRow, *, origin: str) -> Source:
    title = f"{row.source} -> {row.target}"
    kind = f" ({row.type}, weight {row.weight:g})" if row.type else f" (weight {row.weight:g})"
    return Source(
        id=row.id,
        kind="relationship",
        title=title,
        text=f"{title}{kind}: {row.description}".strip(),
        score=row.weight,
        origin=origin,
    )


def community_short_text(row: CommunityRow) -> str:
    rating = f"\nRating: {row.rating:g}" if row.rating is not None else ""
    return f"# {row.title}\n\n{row.summary}{rating}".strip()


def local_context(
    question: str,
    entities: Sequence[Source],
    relationships: Sequence[RelationshipRow],
    neighbour_relationships: Sequence[RelationshipRow],
    chunks: Sequence[ChunkRow],
    communities: Sequence[CommunityRow],
    *,
    budget_tokens: int,
    text_proportion: float,
    community_proportion: float,
    similar_chunks: Sequence[Source] = (),
    question_rankings: Sequence[Ranking] | None = None,
) -> SearchContext:
    """The context of a local search from its top entities (ranked), what the graph holds on them, and
    the question's own chunks (`similar_chunks`, ranked by `question_rankings`: the question's vector and
    word searches, `driftrag.search.question_chunks`; without them, `similar_chunks`' order).

    Shares: source chunks `text_proportion`, community reports `community_proportion`, entities and
    relationships the rest (if the two proportions add up to more than 1 they are scaled to sum to 1).
    Everything gathered is ranked by relevance to `question` (`driftrag.search.ranking.relevance_order`),
    fusing the question's chunk search, the BM25 ranking of the question over the whole pool and the
    graph's own rankings: chunks by how many of the entities they mention, then by the best entity's
    rank; entities in their given order; relationships among the entities by weight, then those to
    outside neighbours by weight; communities by rating, then by how many of the entities they contain.
    Each section takes its items in that order. So the question's nearest chunks reach the answer even
    where the entity layer missed the evidence (offline graphs, where names are the only entities), and
    the graph's material is kept, ranked against the question. Overflow order: text,
    entities/relationships, communities.
    """
    text_share, community_share = max(text_proportion, 0.0), max(community_proportion, 0.0)
    if text_share + community_share > 1:
        total = text_share + community_share
        text_share, community_share = text_share / total, community_share / total
    graph_share = max(1.0 - text_share - community_share, 0.0)
    rank = {entity.id: i for i, entity in enumerate(entities)}
    ranked_chunks = sorted(
        chunks, key=lambda c: (-len(c.entity_ids), min((rank.get(e, len(rank)) for e in c.entity_ids), default=0), c.id)
    )
    ranked_communities = sorted(communities, key=lambda c: (-(c.rating or 0.0), -c.n_entities, c.id))
    linked = [chunk_source(c, origin=f"mentions:{len(c.entity_ids)}", score=len(c.entity_ids)) for c in ranked_chunks]
    relations = [relationship_source(r, origin="among") for r in sorted(relationships, key=_by_weight)]
    relations += [relationship_source(r, origin="neighbour") for r in sorted(neighbour_relationships, key=_by_weight)]
    reports = [
        ContextItem(
            community_source(c, score=float(c.n_entities), origin="membership"), short_text=community_short_text(c)
        )
        for c in ranked_communities
    ]
    texts = unique_sources([*similar_chunks, *linked])
    pool = [*texts, *entities, *relations, *(item.source for item in reports)]
    graph_rankings = [linked, entities, relations, [item.source for item in reports]]
    order = relevance_order(
        question,
        pool,
        [
            *(question_rankings or [Ranking("question", QUESTION_WEIGHT, [c.id for c in similar_chunks])]),
            *(Ranking(f"graph-{i}", GRAPH_WEIGHT, [s.id for s in ranked]) for i, ranked in enumerate(graph_rankings)),
        ],
    )
    position = {source_id: i for i, source_id in enumerate(order)}

    def by_relevance(items: Sequence[ContextItem]) -> list[ContextItem]:
        return sorted(items, key=lambda item: position[item.source.id])

    sections = [
        # Source text first: it holds the evidence, and a reader cutting the context keeps the head.
        ContextSection("text", text_share, [ContextPart("Sources", by_relevance([ContextItem(c) for c in texts]))]),
        ContextSection(
            "graph",
            graph_share,
            [
                ContextPart("Entities", by_relevance([ContextItem(e) for e in entities])),
                ContextPart("Relationships", by_relevance([ContextItem(r) for r in relations])),
            ],
        ),
        ContextSection("communities", community_share, [ContextPart("Community reports", by_relevance(reports))]),
    ]
    return assemble_context(sections, budget_tokens, overflow_order=("text", "graph", "communities"))


def _by_weight(row: RelationshipRow) -> tuple[float, str]:
    return -row.weight, row.id


def unique_sources(sources: Sequence[Source]) -> list[Source]:
    """Each id once, at its first place."""
    unique: dict[str, Source] = {}
    for source in sources:
        unique.setdefault(source.id, source)
    return list(unique.values())
