"""A query result's repr: the workflow runtime summarises every step's output with repr(), once per query."""

from __future__ import annotations

from driftrag.models.search import Source
from driftrag.search.drift.models import DriftResult


def test_a_results_repr_names_its_lists_lengths_not_their_items() -> None:
    sources = [Source(id=f"chunk-{i}", kind="chunk", title="t", text="x" * 2000) for i in range(500)]
    result = DriftResult(kb="kb", question="Who?", answer="Alice.", sources=sources, ranking=["chunk-1", "chunk-2"])

    text = repr(result)

    assert "sources=[500 items]" in text and "chunk-499" not in text
    assert "ranking=['chunk-1', 'chunk-2']" in text  # short lists stay readable
    assert "answer='Alice.'" in text and len(text) < 2000
