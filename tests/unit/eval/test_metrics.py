"""Retrieval metrics on hand-computed cases: budget truncation, exact and fuzzy recall, first-hit rank,
aggregation over repeats and question types."""

from __future__ import annotations

import pytest

from driftrag.eval.metrics import (
    Tokens,
    aggregate,
    cut,
    fuzzy_contains,
    metrics_table,
    row_metrics,
    truncate,
    words,
)
from driftrag.eval.questions import QuestionItem
from driftrag.models.search import Source


class WordTokens:
    """One token per whitespace-separated word, so budgets can be computed by hand."""

    def encode(self, text: str) -> list[str]:  # type: ignore[override]
        return text.split()

    def decode(self, tokens: list[str]) -> str:
        return " ".join(tokens)


def chunk(i: int, text: str) -> Source:
    return Source(id=f"chunk-{i}", kind="chunk", text=text)


# Each source is charged as rendered: its heading `[chunk-i]` (1 token here), its text, a blank line (1).
A = chunk(1, "the lamp went dark at midnight")  # 6 tokens of text, 8 charged
B = chunk(2, "a heron button lay on the stairs")  # 7 tokens of text, 9 charged
C = chunk(3, "the ledger records every boat after dark")  # 7 tokens of text, 9 charged
SOURCES = [A, B, C]
TOKENS = WordTokens()


def question(*evidence: str, qid: str = "q1", kind: str = "local") -> QuestionItem:
    return QuestionItem(id=qid, type=kind, question="?", evidence=list(evidence))  # type: ignore[arg-type]


def test_truncate_keeps_whole_sources_then_cuts_the_last() -> None:
    assert truncate(SOURCES, 100, TOKENS) == [A.text, B.text, C.text]
    assert truncate(SOURCES, 17, TOKENS) == [A.text, B.text]
    assert truncate(SOURCES, 22, TOKENS) == [A.text, B.text, "the ledger records"]
    assert truncate(SOURCES, 6, TOKENS) == ["the lamp went dark"]
    assert truncate(SOURCES, 0, TOKENS) == []
    # What the cut charged: all of a budget it filled, the rendered sources when they all fit.
    assert cut(SOURCES, 22, TOKENS).tokens == 22 and cut(SOURCES, 100, TOKENS).tokens == 26


def test_truncate_with_cl100k_never_exceeds_the_budget() -> None:
    tokens = Tokens()
    long = [chunk(i, "Alice was beginning to get very tired of sitting by her sister. " * 20) for i in range(5)]
    assert truncate(long, 1, tokens) == []  # not even a source's heading fits
    for budget in (17, 250, 1000):
        kept = truncate(long, budget, tokens)
        assert sum(len(tokens.encode(text)) for text in kept) <= budget + 1  # a cut may re-tokenise by one
        assert kept[0].startswith("Alice")
        assert cut(long, budget, tokens).tokens == budget  # long enough to fill every budget


def test_recall_and_first_hit_rank_at_a_budget() -> None:
    q = question("heron button", "every boat after dark", "midnight")
    full = row_metrics(q, "basic", 0, SOURCES, 100, TOKENS)
    assert (full.evidence, full.exact_hits, full.first_hit_rank) == (3, 3, 1)
    assert full.recall == 1.0 and full.context_tokens == 20
    # 22 tokens: C is cut to "the ledger records", so its evidence is lost.
    short = row_metrics(q, "basic", 0, SOURCES, 22, TOKENS)
    assert (short.exact_hits, short.first_hit_rank) == (2, 1)
    assert short.recall == pytest.approx(2 / 3)
    assert short.context_tokens == 20  # the whole context, before the cut
    assert (full.kept_tokens, short.kept_tokens) == (26, 22)


def test_first_hit_rank_is_the_first_source_with_any_evidence() -> None:
    q = question("every boat after dark", "heron button")
    assert row_metrics(q, "local", 0, SOURCES, 100, TOKENS).first_hit_rank == 2
    assert row_metrics(q, "local", 0, [C, A, B], 100, TOKENS).first_hit_rank == 1
    assert row_metrics(q, "local", 0, [A], 100, TOKENS).first_hit_rank is None


def test_evidence_is_normalised_but_case_sensitive() -> None:
    spaced = [chunk(9, "a heron\r\n   button lay")]
    assert row_metrics(question("heron button"), "basic", 0, spaced, 100, TOKENS).exact_hits == 1
    assert row_metrics(question("Heron button"), "basic", 0, spaced, 100, TOKENS).exact_hits == 0


def test_fuzzy_window_overlap() -> None:
    text = words("one two three four five six seven eight nine ten eleven twelve")
    assert fuzzy_contains(text, words("three four five six seven eight nine ten eleven twelve"))
    # 9 of 10 evidence tokens in one window: >= 90 %.
    assert fuzzy_contains(text, words("three four five six seven EIGHT, nine ten eleven thirteen"))
    # 8 of 10: below.
    assert not fuzzy_contains(text, words("three four five six seven eight nine ten fourteen thirteen"))
    # The words exist, but not within one window as long as the evidence.
    assert not fuzzy_contains(text, words("one two twelve"))
    assert not fuzzy_contains(text, [])


def test_fuzzy_recall_forgives_evidence_cut_at_the_budget_edge() -> None:
    long = chunk(4, " ".join(f"w{i}" for i in range(30)))
    q = question(" ".join(f"w{i}" for i in range(10, 30)))  # the last 20 words
    # Budget 31 (29 words once the heading and blank line are paid): the last word is cut off; exact
    # misses, fuzzy (19/20 = 95 %) finds it.
    metrics = row_metrics(q, "basic", 0, [long], 31, TOKENS)
    assert (metrics.exact_hits, metrics.fuzzy_hits) == (0, 1)
    assert metrics.first_hit_rank is None


def test_failed_rows_count_as_empty_contexts_and_questions_without_evidence_are_left_out() -> None:
    rows = [
        row_metrics(question("heron button", qid="q1"), "drift", 0, SOURCES, 100, TOKENS),
        row_metrics(question("heron button", qid="q2"), "drift", 0, [], 100, TOKENS, failed=True),
        row_metrics(question(qid="q3", kind="global"), "drift", 0, SOURCES, 100, TOKENS),
    ]
    result = aggregate(rows)
    assert result.rows == 3 and result.questions_with_evidence == 2 and result.failed == 1
    assert result.recall == 0.5 and result.hit_rate == 0.5
    assert result.mean_first_hit_rank == 2.0 and result.mrr == pytest.approx(0.25)
    assert result.mean_context_tokens == pytest.approx(40 / 3)


def test_repeats_are_averaged_per_question_before_the_mean() -> None:
    q1, q2 = question("heron button", qid="q1"), question("midnight", qid="q2")
    rows = [
        row_metrics(q1, "basic", 0, SOURCES, 100, TOKENS),  # 1
        row_metrics(q1, "basic", 1, [C], 100, TOKENS),  # 0
        row_metrics(q1, "basic", 2, [C], 100, TOKENS),  # 0 -> q1 = 1/3
        row_metrics(q2, "basic", 0, SOURCES, 100, TOKENS),  # 1 -> q2 = 1
    ]
    assert aggregate(rows).recall == pytest.approx((1 / 3 + 1) / 2)


def test_table_by_method_and_question_type() -> None:
    rows = [
        row_metrics(question("heron button", qid="l1"), "basic", 0, SOURCES, 100, TOKENS),
        row_metrics(question("midnight", "absent", qid="m1", kind="multi-hop"), "basic", 0, SOURCES, 100, TOKENS),
        row_metrics(question("heron button", qid="l1"), "local", 0, [C], 100, TOKENS),
    ]
    table = metrics_table(rows, ["basic", "local"], 100)
    assert table.by_method["basic"].recall == pytest.approx(0.75)
    assert table.by_method_and_type["basic"]["local"].recall == 1.0
    assert table.by_method_and_type["basic"]["multi-hop"].recall == 0.5
    assert table.by_method_and_type["basic"]["global"].recall is None
    assert table.by_method["local"].recall == 0.0
