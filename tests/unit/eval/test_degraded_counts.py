"""Evaluation runs count degraded and ungrounded answers per method (issue 34)."""

from __future__ import annotations

from driftrag.eval.records import RunRow
from driftrag.eval.summary import method_cost
from driftrag.search.models import Degradation


def row(n: int, degraded: list[Degradation]) -> RunRow:
    return RunRow(
        question_id=f"q{n}",
        question_type="local",
        question="Who?",
        method="global",
        repeat=0,
        kb="kb1",
        answer="An answer.",
        sources=[],
        cited_ids=[],
        llm_calls=2,
        prompt_tokens=10,
        completion_tokens=5,
        embedding_requests=1,
        seconds=0.1,
        extractive=False,
        error=None,
        recorded_at="2026-01-01T00:00:00+00:00",
        degraded=degraded,
    )


def test_degraded_and_ungrounded_rows_are_counted() -> None:
    copied = Degradation(step="global reduce", reason="ungrounded", detail="repeats the prompt example's names")
    scoreless = Degradation(step="global map", reason="missing_score")
    cost = method_cost([row(1, []), row(2, [scoreless]), row(3, [scoreless, copied])])
    assert (cost.degraded, cost.ungrounded) == (2, 1)
    # Rows written before the accounting existed read as not degraded.
    legacy = row(4, []).model_dump(exclude={"degraded"})
    assert RunRow.model_validate(legacy).degraded == []
