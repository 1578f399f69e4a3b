"""The notebook display helpers on hand-built results: tables, answers with sources, the follow-up tree, progress."""

from __future__ import annotations

from driftrag.ingestion.requests import Progress
from driftrag.models.search import Source
from driftrag.notebook import AnswerView, FollowUpTree, ProgressPrinter, Table, cited_sources
from driftrag.search.drift.models import DriftProgress, DriftResult, FollowUp, IntermediateAnswer
from driftrag.search.global_search.models import GlobalResult
from driftrag.search.models import SearchContext, SearchResult


def source(source_id: str, kind: str = "chunk", text: str = "text") -> Source:
    return Source(id=source_id, kind=kind, title=source_id.upper(), text=text)  # type: ignore[arg-type]


def answer(answer_id: str, depth: int, query: str, score: int, parent: str | None) -> IntermediateAnswer:
    return IntermediateAnswer(id=answer_id, depth=depth, query=query, answer="…", score=score, parent_id=parent)


def follow_up(node_id: str, query: str, depth: int, parent: str, status: str, **extra) -> FollowUp:
    searched = status == "searched"
    return FollowUp(
        id=node_id,
        query=query,
        depth=depth,
        parent_id=parent,
        relevance=0.8,
        status=status,  # type: ignore[arg-type]
        answer_id=node_id if searched else None,
        **extra,
    )


def drift_result() -> DriftResult:
    return DriftResult(
        kb="kb",
        question='Who is the "White Rabbit"?',
        answer="He is late [chunk-2].",
        source_ids=["chunk-2", "community-1", "chunk-gone"],
        sources=[source("community-1", "community"), source("chunk-1"), source("chunk-2")],
        intermediate=[
            answer("primer", 0, "Who is the White Rabbit?", 70, None),
            answer("d1-1", 1, "How is the Rabbit related to Alice?", 83, "primer"),
            answer("d2-1", 2, "What does the Rabbit carry?", 60, "d1-1"),
        ],
        follow_ups=[
            follow_up("d1-1", "How is the Rabbit related to Alice?", 1, "primer", "searched"),
            follow_up("d1-x1", "How is [Dinah] related to Alice?", 1, "primer", "over_cap"),
            follow_up("d2-1", "What does the Rabbit carry?", 2, "d1-1", "searched"),
            follow_up(
                "d2-x1",
                "What is the Rabbit carrying?",
                2,
                "d1-1",
                "duplicate",
                duplicate_of="What does the Rabbit carry?",
            ),
        ],
    )


def test_table_cuts_cells_and_escapes_html() -> None:
    table = Table([{"name": "<Alice>", "summary": "x " * 100}, {"name": "Dinah"}], ["name", "summary"], width=10)
    text = str(table)
    assert text.splitlines()[0].split() == ["name", "summary"]
    assert "x x x x x…" in text
    assert "&lt;Alice&gt;" in table._repr_html_() and "<Alice>" not in table._repr_html_()
    assert str(Table([], title="graph search 'Queen'")) == "graph search 'Queen'\n(no rows)"


def test_cited_sources_follow_the_citation_order_and_skip_unknown_ids() -> None:
    assert [s.id for s in cited_sources(drift_result())] == ["chunk-2", "community-1"]


def test_answer_view_shows_the_answer_then_each_cited_source() -> None:
    result = SearchResult(
        mode="local",
        kb="kb",
        question="q",
        answer="An answer [chunk-1].",
        source_ids=["chunk-1", "chunk-3"],
        context=SearchContext(
            text="", n_tokens=0, budget_tokens=10, sources=[source(f"chunk-{i}", text=f"text {i}") for i in range(4)]
        ),
    )
    view = AnswerView(result, max_sources=1)
    text = str(view)
    assert text.startswith("local answer in 0.0 s, 0 model calls, 2 cited sources")
    assert "- [chunk-1] chunk 'CHUNK-1': text 1" in text
    assert "- … and 1 more" in text
    assert "`chunk-1`" in view._repr_markdown_()


def test_answer_view_shows_a_global_search_result_like_any_other() -> None:
    result = GlobalResult(
        kb="kb",
        question="What are the themes?",
        answer="Growing up [chunk-2], and time [community-1].",
        source_ids=["chunk-2", "community-1"],
        sources=[source("community-1", "community"), source("chunk-2", text="text 2")],
        ranking=["chunk-2", "community-1"],
        llm_calls=3,
    )
    text = str(AnswerView(result))
    assert text.startswith("global answer in 0.0 s, 3 model calls, 2 cited sources")
    assert "- [chunk-2] chunk 'CHUNK-2': text 2" in text and "- [community-1] community" in text


def test_follow_up_tree_nests_follow_ups_under_the_answer_that_proposed_them() -> None:
    lines = FollowUpTree(drift_result()).lines()
    assert lines == [
        'Q: Who is the "White Rabbit"?',
        "└─ primer (score 70, 0 community reports)",
        "   ├─ How is the Rabbit related to Alice?  [searched as d1-1, score 83; relevance 0.80]",
        "   │  ├─ What does the Rabbit carry?  [searched as d2-1, score 60; relevance 0.80]",
        "   │  └─ What is the Rabbit carrying?  [duplicate of 'What does the Rabbit carry?'; relevance 0.80]",
        "   └─ How is [Dinah] related to Alice?  [over cap; relevance 0.80]",
    ]


def test_follow_up_tree_without_a_primer_starts_from_the_question() -> None:
    result = DriftResult(
        kb="kb",
        question="q",
        answer="a",
        intermediate=[answer("d1-1", 1, "q", 40, "question")],
        follow_ups=[follow_up("d1-1", "q", 1, "question", "searched")],
    )
    assert FollowUpTree(result).lines() == ["Q: q", "└─ q  [searched as d1-1, score 40; relevance 0.80]"]


def test_follow_up_mermaid_escapes_labels_and_greys_dropped_queries() -> None:
    mermaid = FollowUpTree(drift_result()).mermaid
    assert mermaid.startswith('graph TD\n  question["Who is the #quot;White Rabbit#quot;?"]')
    assert "question --> primer" in mermaid
    assert 'f1("How is #91;Dinah#93; related to Alice? · over cap")' in mermaid
    assert "primer --> f0" in mermaid and "f0 --> f2" in mermaid and "f0 --> f3" in mermaid
    assert "class f1,f3 dropped" in mermaid
    assert FollowUpTree(drift_result())._repr_markdown_().startswith("```mermaid\ngraph TD")


def test_progress_printer_prints_each_stage_by_quarters_and_every_drift_phase(capsys) -> None:
    printer = ProgressPrinter()
    for done in range(9):
        printer(Progress(stage="extract", done=done, total=8))
    printer(Progress(stage="embed-chunk", done=20, total=20))
    printer(DriftProgress(phase="local_search", message="How?", depth=1, score=50))
    printer(DriftProgress(phase="depth", message="round 1: 2 answers", depth=1, done=2, total=2))
    printer(DriftProgress(phase="reduce", message="reducing"))
    lines = [line.split("] ", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "extract: 0/8",
        "extract: 2/8",
        "extract: 4/8",
        "extract: 6/8",
        "extract: 8/8",
        "embed-chunk: 20/20",
        "local_search depth 1: How? (score 50)",
        "depth 1: round 1: 2 answers",
        "reduce: reducing",
    ]
