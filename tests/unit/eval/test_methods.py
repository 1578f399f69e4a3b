"""The method adapter: method names, each mode's source ranking, one result mapping, failures recorded."""

from __future__ import annotations

import pytest

from driftrag.eval.methods import from_result, parse_methods, run_method
from driftrag.models.search import Source
from driftrag.providers.usage import Usage
from driftrag.search.drift.models import DriftResult, IntermediateAnswer
from driftrag.search.models import SearchContext, SearchResult
from tests.fakes.eval_results import SettingsOnlyDeps


def src(source_id: str, kind: str = "chunk") -> Source:
    return Source(id=source_id, kind=kind, text=f"text of {source_id}")  # type: ignore[arg-type]


def intermediate(answer_id: str, score: int, cited: list[str]) -> IntermediateAnswer:
    return IntermediateAnswer(id=answer_id, depth=1, query="q", answer="a", score=score, source_ids=cited)


def test_parse_methods() -> None:
    assert parse_methods(" drift, basic ") == ["drift", "basic"]
    assert parse_methods("global,drift") == ["global", "drift"]
    with pytest.raises(ValueError, match="unknown"):
        parse_methods("drift,everything")
    with pytest.raises(ValueError, match="twice"):
        parse_methods("basic,basic")
    with pytest.raises(ValueError):
        parse_methods(" , ")


def test_drift_sources_are_ranked_cited_first_then_best_intermediate_score_then_id() -> None:
    result = DriftResult(
        kb="kb1",
        question="?",
        answer="final",
        source_ids=["chunk-z", "community-c"],
        sources=[
            src("chunk-a"),
            src("chunk-b"),
            src("chunk-z"),
            src("community-c", "community"),
            src("entity-e", "entity"),
            src("chunk-0"),
        ],
        intermediate=[
            intermediate("primer", 60, ["community-c", "chunk-b"]),
            intermediate("d1-1", 90, ["chunk-z", "chunk-a"]),
            intermediate("d1-2", 30, ["chunk-b", "entity-e"]),
        ],
        llm_calls=9,
        prompt_tokens=1234,
        usage=Usage(completion_tokens=56, embedding_requests=3),
    )
    output = from_result("drift", result)
    # Cited: chunk-z (best 90) before community-c (60). Then chunk-a (90), chunk-b (60), entity-e (30),
    # then chunk-0 (no intermediate answer cites it).
    assert [s.id for s in output.sources] == ["chunk-z", "community-c", "chunk-a", "chunk-b", "entity-e", "chunk-0"]
    assert (output.llm_calls, output.prompt_tokens, output.completion_tokens, output.embedding_requests) == (
        9,
        1234,
        56,
        3,
    )
    assert output.cited_ids == ["chunk-z", "community-c"] and output.answer == "final"


def test_ties_in_drift_ranking_fall_back_to_the_id() -> None:
    result = DriftResult(kb="kb1", question="?", answer="", sources=[src("chunk-b"), src("chunk-a")])
    assert [s.id for s in from_result("drift", result).sources] == ["chunk-a", "chunk-b"]


def test_search_results_keep_the_context_order_and_count_calls_from_the_budget() -> None:
    context = SearchContext(
        text="...", n_tokens=3, budget_tokens=10, sources=[src("entity-1", "entity"), src("chunk-9")]
    )
    result = SearchResult(
        mode="local",
        kb="kb1",
        question="?",
        answer="an answer",
        source_ids=["chunk-9"],
        context=context,
        extractive=True,
        usage=Usage(chat_calls=1, prompt_tokens=400, completion_tokens=50),
        llm_calls=1,
        prompt_tokens=400,
    )
    output = from_result("local", result)
    assert [s.id for s in output.sources] == ["entity-1", "chunk-9"]
    assert (output.llm_calls, output.prompt_tokens, output.extractive) == (1, 400, True)


@pytest.mark.parametrize("method", ["basic", "local", "entity", "drift"])
async def test_a_failing_method_is_recorded_not_raised(method: str) -> None:
    # Settings-only deps have no store: every method fails inside, and says why.
    output = await run_method(SettingsOnlyDeps(), "kb1", method, "Who rang the bell?")  # type: ignore[arg-type]
    assert output.method == method and output.error and output.answer == "" and output.seconds >= 0
