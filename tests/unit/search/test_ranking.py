"""DRIFT's final ranking: weighted reciprocal rank fusion and the lexical ranking of the pool."""

from __future__ import annotations

from driftrag.models.search import Source
from driftrag.search.ranking import Ranking, final_order, fuse, lexical_ranking, relevance_order


def chunk(source_id: str, text: str) -> Source:
    return Source(id=source_id, kind="chunk", title=source_id, text=text)


def test_the_heavier_ranking_leads_and_agreement_lifts_a_source() -> None:
    question = Ranking("question", 3.0, ["a", "b", "c"])
    follow_ups = [Ranking(f"f{i}", 1.0, ["d", "x"]) for i in range(3)]
    fused = fuse([question, *follow_ups])
    assert fused[0] == "a"
    # Three follow-ups at rank 1 outweigh the question's third chunk; they only tie its first.
    assert fused.index("d") < fused.index("c")
    assert sorted(fused) == ["a", "b", "c", "d", "x"]


def test_ties_keep_the_first_ranking_order() -> None:
    assert fuse([Ranking("one", 1.0, ["a", "b"]), Ranking("two", 1.0, ["b", "a"])]) == ["a", "b"]


def test_final_order_puts_sources_no_ranking_holds_last() -> None:
    assert final_order(["b", "a"], ["a", "z", "b", "c"]) == ["b", "a", "c", "z"]


def test_lexical_ranking_prefers_the_source_holding_the_rare_question_words() -> None:
    sources = [
        chunk("plain", "The day was long and the road was long."),
        chunk("match", "The lighthouse keeper rowed to the reef at dawn."),
        chunk("half", "A keeper of the road."),
    ]
    assert lexical_ranking("Why did the lighthouse keeper row out?", sources)[:2] == ["match", "half"]
    assert lexical_ranking("?", sources) == []


def test_relevance_order_adds_the_questions_lexical_ranking_over_the_whole_pool() -> None:
    pool = [chunk("a", "gulls over the harbour"), chunk("b", "the copper bell of the tower"), chunk("z", "rain")]
    graph = Ranking("graph", 1.0, ["a", "b"])
    # Without a word of the question in the pool, the given rankings decide; ids none holds come last.
    assert relevance_order("nothing shared", pool, [graph]) == ["a", "b", "z"]
    # The question's words lift the source that holds them over the graph's first one.
    assert relevance_order("Where is the copper bell?", pool, [graph]) == ["b", "a", "z"]
