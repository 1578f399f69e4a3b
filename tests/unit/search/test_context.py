"""The context builder: budget shares, ranking, ids in the rendering, and the flow of unused budget."""

from __future__ import annotations

import re

from driftrag.models.search import ChunkRow, CommunityRow, RelationshipRow, Source
from driftrag.providers.tokens import tokenizer
from driftrag.search.context import ContextItem, ContextPart, ContextSection, assemble_context, local_context

COUNT = tokenizer()
FILLER = "the harbour lamps burn through the night while the tide turns slowly "


def text_of(tokens: int) -> str:
    words = (FILLER * (tokens // 10 + 2)).split()
    text = " ".join(words[:tokens])
    while len(COUNT(text)) > tokens:
        text = text.rsplit(" ", 1)[0]
    return text


def entity(i: int, tokens: int = 20) -> Source:
    return Source(id=f"entity-e{i}", kind="entity", title=f"Name {i}", text=f"Name {i}: {text_of(tokens)}", score=0.9)


def chunk(i: int, entity_ids: list[str], tokens: int = 60) -> ChunkRow:
    return ChunkRow(id=f"chunk-c{i}", title=f"doc{i}.txt", text=text_of(tokens), entity_ids=entity_ids)


def relationship(i: int, weight: float, tokens: int = 15) -> RelationshipRow:
    return RelationshipRow(
        id=f"relationship-r{i}",
        source_id="entity-e0",
        source="Name 0",
        target_id=f"entity-e{i}",
        target=f"Name {i}",
        type="RELATED_TO",
        description=text_of(tokens),
        weight=weight,
    )


def community(i: int, rating: float, n_entities: int = 1, tokens: int = 80) -> CommunityRow:
    return CommunityRow(
        id=f"community-0-{i}",
        title=f"Community {i}",
        summary=f"Summary of community {i}.",
        full_content=f"# Community {i}\n\n{text_of(tokens)}",
        rating=rating,
        size=5,
        n_entities=n_entities,
    )


def build(
    *,
    entities=(),
    among=(),
    outside=(),
    chunks=(),
    communities=(),
    budget=2000,
    text=0.5,
    community_share=0.15,
    question="",
):
    return local_context(
        question,
        list(entities),
        list(among),
        list(outside),
        list(chunks),
        list(communities),
        budget_tokens=budget,
        text_proportion=text,
        community_proportion=community_share,
    )


def abundant(budget: int = 2000):
    entities = [entity(i) for i in range(5)]
    return build(
        entities=entities,
        among=[relationship(i, weight=float(i)) for i in range(1, 40)],
        chunks=[chunk(i, ["entity-e0"]) for i in range(40)],
        communities=[community(i, rating=5.0) for i in range(40)],
        budget=budget,
    )


def test_each_kind_gets_its_share_when_every_section_has_plenty() -> None:
    context = abundant(2000)
    kinds = context.tokens_by_kind
    assert context.n_tokens <= context.budget_tokens == 2000
    assert len(COUNT(context.text)) == context.n_tokens
    # Shares of the budget, give or take one item per section flowing over as scraps.
    assert abs(kinds["chunk"] - 0.5 * 2000) <= 3 * 70
    assert abs(kinds["community"] - 0.15 * 2000) <= 3 * 90
    assert abs(kinds["entity"] + kinds["relationship"] - 0.35 * 2000) <= 3 * 70
    assert sum(kinds.values()) <= 2000


def test_every_item_is_headed_by_its_id_in_the_rendering() -> None:
    context = abundant(1500)
    assert context.sources
    for source in context.sources:
        assert re.search(rf"^\[{re.escape(source.id)}\]", context.text, re.MULTILINE), source.id
    headed = re.findall(r"^\[([a-z]+-[A-Za-z0-9_-]+)\]", context.text, re.MULTILINE)
    assert headed == [source.id for source in context.sources]
    assert context.ids() == set(headed)


def test_chunks_rank_by_entities_mentioned_then_by_the_best_entity_rank() -> None:
    entities = [entity(i) for i in range(3)]
    chunks = [
        chunk(1, ["entity-e2"]),
        chunk(2, ["entity-e1", "entity-e2"]),
        chunk(3, ["entity-e0"]),
        chunk(4, ["entity-e0", "entity-e1", "entity-e2"]),
        chunk(5, ["entity-e1"]),
    ]
    context = build(entities=entities, chunks=chunks, budget=4000)
    order = [s.id for s in context.sources if s.kind == "chunk"]
    assert order == ["chunk-c4", "chunk-c2", "chunk-c3", "chunk-c5", "chunk-c1"]


def test_communities_rank_by_rating_then_members_and_relationships_by_weight() -> None:
    communities = [community(1, 4.0, 3), community(2, 9.0, 1), community(3, 4.0, 5), community(4, 7.5, 2)]
    among = [relationship(1, 2.0), relationship(2, 8.0), relationship(3, 5.0)]
    outside = [relationship(7, 9.5), relationship(8, 1.0)]
    context = build(entities=[entity(0)], among=among, outside=outside, communities=communities, budget=6000)
    assert [s.id for s in context.sources if s.kind == "community"] == [
        "community-0-2",
        "community-0-4",
        "community-0-3",
        "community-0-1",
    ]
    assert context.sources[[s.id for s in context.sources].index("community-0-2")].rating == 9.0
    # Relationships among the entities first (by weight), then those to neighbours (by weight).
    assert [s.id for s in context.sources if s.kind == "relationship"] == [
        "relationship-r2",
        "relationship-r3",
        "relationship-r1",
        "relationship-r7",
        "relationship-r8",
    ]
    assert [s.origin for s in context.sources if s.kind == "relationship"][-2:] == ["neighbour", "neighbour"]


def test_unused_budget_flows_to_the_other_sections() -> None:
    # No source chunks: their half of the budget goes to relationships and reports.
    relationships = [relationship(i, weight=float(i)) for i in range(1, 60)]
    communities = [community(i, rating=5.0) for i in range(30)]
    context = build(entities=[entity(0)], among=relationships, communities=communities, budget=2000)
    kinds = context.tokens_by_kind
    assert "chunk" not in kinds
    assert kinds["entity"] + kinds["relationship"] > 0.35 * 2000 + 200
    assert context.n_tokens > 0.9 * 2000
    assert context.n_tokens <= 2000


def test_a_small_text_section_leaves_its_rest_to_the_graph_first() -> None:
    relationships = [relationship(i, weight=float(i)) for i in range(1, 80)]
    context = build(
        entities=[entity(0)],
        among=relationships,
        chunks=[chunk(1, ["entity-e0"], tokens=30)],
        communities=[community(i, rating=5.0) for i in range(30)],
        budget=2000,
    )
    kinds = context.tokens_by_kind
    assert kinds["chunk"] < 60
    # Text comes first in the overflow order but has nothing more: the graph section takes the rest.
    assert kinds["entity"] + kinds["relationship"] > 0.35 * 2000 + 0.4 * 2000


def test_an_item_too_big_for_its_share_is_skipped_and_a_smaller_one_taken() -> None:
    chunks = [chunk(1, ["entity-e0"], tokens=900), chunk(2, ["entity-e0"], tokens=50)]
    context = build(entities=[entity(0)], chunks=chunks, budget=1000, text=0.5)
    chunk_ids = [s.id for s in context.sources if s.kind == "chunk"]
    # c1 (900 tokens) fits neither the text share nor the leftovers of a 1000-token budget.
    assert chunk_ids == ["chunk-c2"]


def test_a_report_too_long_for_the_budget_is_shown_by_its_summary() -> None:
    context = build(entities=[entity(0)], communities=[community(1, 8.0, tokens=3000)], budget=800)
    reports = [s for s in context.sources if s.kind == "community"]
    assert len(reports) == 1
    assert reports[0].text.startswith("# Community 1\n\nSummary of community 1.")
    assert "Rating: 8" in reports[0].text


def test_the_budget_holds_for_tiny_budgets_and_empty_inputs() -> None:
    for budget in (1, 10, 50, 200):
        context = abundant(budget)
        assert context.n_tokens <= budget
        assert len(COUNT(context.text)) == context.n_tokens
    empty = build(budget=500)
    assert empty.text == "" and empty.sources == [] and empty.n_tokens == 0


def test_proportions_above_one_are_scaled() -> None:
    context = build(
        entities=[entity(i) for i in range(20)],
        chunks=[chunk(i, ["entity-e0"]) for i in range(40)],
        communities=[community(i, rating=5.0) for i in range(40)],
        budget=2000,
        text=0.9,
        community_share=0.9,
    )
    kinds = context.tokens_by_kind
    assert abs(kinds["chunk"] - kinds["community"]) <= 200


def test_assemble_context_renders_parts_under_their_headings_in_section_order() -> None:
    a = Source(id="chunk-a", kind="chunk", title="a.txt", text="Alpha text.")
    b = Source(id="entity-b", kind="entity", title="Beta", text="Beta: a thing.")
    sections = [
        ContextSection("one", 0.5, [ContextPart("First", [ContextItem(a)])]),
        ContextSection("two", 0.5, [ContextPart("Empty", []), ContextPart("Second", [ContextItem(b)])]),
    ]
    context = assemble_context(sections, 200)
    assert context.text == "## First\n\n[chunk-a] a.txt\nAlpha text.\n\n## Second\n\n[entity-b]\nBeta: a thing."
    assert set(context.tokens_by_kind) == {"chunk", "entity"}


def test_a_report_shown_by_its_summary_gets_its_full_text_back_from_unused_budget() -> None:
    # 0.15 x 600 tokens cannot hold the 80-token report, but the other sections leave plenty unused.
    context = build(entities=[entity(0)], communities=[community(1, 7.0, tokens=80)], budget=600)
    (report,) = [s for s in context.sources if s.kind == "community"]
    assert report.text == community(1, 7.0, tokens=80).full_content
    assert context.tokens_by_kind["community"] > 0.15 * 600


def similar_chunk(i: int, text: str) -> Source:
    return Source(id=f"chunk-s{i}", kind="chunk", title=f"near{i}.txt", text=text, score=0.9, origin="vector")


def test_the_questions_nearest_chunks_lead_and_the_question_lifts_what_it_names() -> None:
    entities = [entity(i) for i in range(3)]
    linked = [chunk(i, ["entity-e0"]) for i in range(1, 6)]
    # The last chunk the graph ranks is the only one that writes the question's words.
    linked[-1] = linked[-1].model_copy(update={"text": f"The copper bell hangs in the tower. {text_of(50)}"})
    similar = [similar_chunk(i, text_of(60)) for i in range(1, 4)]
    context = local_context(
        "Where does the copper bell hang?",
        entities,
        [relationship(1, 2.0)],
        [relationship(2, 1.0)],
        linked,
        [community(1, 5.0)],
        budget_tokens=700,
        text_proportion=0.6,
        community_proportion=0.15,
        similar_chunks=similar,
    )
    chunks = [s.id for s in context.sources if s.kind == "chunk"]
    # The question's own search weighs most; lexical agreement lifts the graph's last chunk above its first.
    assert chunks[:4] == ["chunk-s1", "chunk-s2", "chunk-s3", "chunk-c5"]
    assert chunks.index("chunk-c5") < chunks.index("chunk-c1")
    # The graph's parts are still in the context.
    assert {"entity", "relationship", "community"} <= set(context.tokens_by_kind)
