"""The bundled question sets (data/questions/*.jsonl): well-formed, enough of each type, evidence verbatim.

Loading, validation and the evidence normalisation rule live in `driftrag.eval.questions`; this file
holds the extra requirements of the shipped sets.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from driftrag.eval.questions import QuestionItem, load_questions, missing_evidence, read_corpus

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "data" / "questions"
SAMPLE_DIR = ROOT / "data" / "sample"

FIELDS = set(QuestionItem.model_fields)
# Minimum number of questions per type, and allowed evidence length in words, for each set.
MIN_COUNTS = {
    "sample": {"local": 6, "multi-hop": 5, "global": 4},
    "alice": {"local": 12, "multi-hop": 10, "global": 8},
}
EVIDENCE_WORDS = {"sample": (5, 25), "alice": (4, 25)}
SETS = sorted(MIN_COUNTS)


def load_set(name: str) -> list[QuestionItem]:
    return load_questions(QUESTIONS / f"{name}.jsonl")


@pytest.mark.parametrize("name", SETS)
def test_questions_are_well_formed(name: str) -> None:
    # load_questions already refuses invalid lines, unknown fields and repeated ids.
    low, high = EVIDENCE_WORDS[name]
    for q in load_set(name):
        assert q.model_fields_set == FIELDS, f"{q.id}: the shipped sets state every field"
        assert q.reference_answer.strip(), f"{q.id}: empty reference answer"
        if q.type != "global":
            assert q.evidence, f"{q.id}: a {q.type} question needs evidence"
        for evidence in q.evidence:
            words = len(evidence.split())
            assert low <= words <= high, f"{q.id}: evidence of {words} words: {evidence!r}"


@pytest.mark.parametrize("name", SETS)
def test_enough_questions_of_each_type(name: str) -> None:
    counts = Counter(q.type for q in load_set(name))
    for kind, minimum in MIN_COUNTS[name].items():
        assert counts[kind] >= minimum, f"{name}: {counts[kind]} {kind} questions, need at least {minimum}"


def test_sample_corpus_is_four_titled_story_files() -> None:
    files = sorted(SAMPLE_DIR.iterdir())
    assert [path.suffix for path in files] == [".md"] * 4, "data/sample holds exactly the four story files"
    for path in files:
        assert path.read_text(encoding="utf-8").startswith("# "), f"{path.name} must start with a '# Title' line"


def test_sample_evidence_is_verbatim() -> None:
    assert missing_evidence(load_set("sample"), read_corpus([SAMPLE_DIR])) == []


def test_alice_evidence_is_verbatim(alice_book: Path) -> None:
    assert missing_evidence(load_set("alice"), read_corpus([alice_book])) == []
