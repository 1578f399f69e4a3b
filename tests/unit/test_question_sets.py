"""The bundled question sets (data/questions/*.jsonl): well-formed, enough of each type, evidence verbatim.

Evidence strings are compared after normalising both sides the same way: CRLF (and lone CR) becomes LF,
then every run of whitespace, newlines included, becomes a single space (see data/README.md).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "data" / "questions"
SAMPLE_DIR = ROOT / "data" / "sample"
DEFAULT_ALICE_PATH = Path("/work/shared/data/alice_in_wonderland.txt")

TYPES = {"local", "multi-hop", "global"}
FIELDS = {"id", "type", "question", "reference_answer", "evidence"}
# Minimum number of questions per type, and allowed evidence length in words, for each set.
MIN_COUNTS = {
    "sample": {"local": 6, "multi-hop": 5, "global": 4},
    "alice": {"local": 12, "multi-hop": 10, "global": 8},
}
EVIDENCE_WORDS = {"sample": (5, 25), "alice": (4, 25)}
SETS = sorted(MIN_COUNTS)


def normalise(text: str) -> str:
    """CRLF / CR to LF, then each run of whitespace (newlines included) to one space."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"\s+", " ", text).strip()


def load_questions(name: str) -> list[dict]:
    path = QUESTIONS / f"{name}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def sample_corpus() -> str:
    files = sorted(SAMPLE_DIR.glob("*.md"))
    return normalise("\n".join(path.read_text(encoding="utf-8") for path in files))


def alice_path() -> Path:
    configured = os.environ.get("DRIFTRAG_ALICE_PATH")
    return Path(configured) if configured else DEFAULT_ALICE_PATH


@pytest.mark.parametrize("name", SETS)
def test_questions_are_well_formed(name: str) -> None:
    questions = load_questions(name)
    ids = [q.get("id") for q in questions]
    assert len(ids) == len(set(ids)), f"duplicate ids: {[i for i, n in Counter(ids).items() if n > 1]}"
    low, high = EVIDENCE_WORDS[name]
    for q in questions:
        assert set(q) == FIELDS, f"{q.get('id')}: fields {sorted(q)}"
        assert isinstance(q["id"], str) and q["id"].strip()
        assert q["type"] in TYPES, f"{q['id']}: type {q['type']!r}"
        assert isinstance(q["question"], str) and q["question"].strip(), f"{q['id']}: empty question"
        assert isinstance(q["reference_answer"], str) and q["reference_answer"].strip(), f"{q['id']}: empty answer"
        assert isinstance(q["evidence"], list), f"{q['id']}: evidence must be a list"
        if q["type"] != "global":
            assert q["evidence"], f"{q['id']}: a {q['type']} question needs evidence"
        for evidence in q["evidence"]:
            assert isinstance(evidence, str)
            words = len(evidence.split())
            assert low <= words <= high, f"{q['id']}: evidence of {words} words: {evidence!r}"


@pytest.mark.parametrize("name", SETS)
def test_enough_questions_of_each_type(name: str) -> None:
    counts = Counter(q["type"] for q in load_questions(name))
    for kind, minimum in MIN_COUNTS[name].items():
        assert counts[kind] >= minimum, f"{name}: {counts[kind]} {kind} questions, need at least {minimum}"


def test_sample_corpus_is_four_titled_story_files() -> None:
    files = sorted(SAMPLE_DIR.iterdir())
    assert [path.suffix for path in files] == [".md"] * 4, "data/sample holds exactly the four story files"
    for path in files:
        assert path.read_text(encoding="utf-8").startswith("# "), f"{path.name} must start with a '# Title' line"


def assert_evidence_in(questions: list[dict], corpus: str) -> None:
    missing = [
        (q["id"], evidence) for q in questions for evidence in q["evidence"] if normalise(evidence) not in corpus
    ]
    assert missing == []


def test_sample_evidence_is_verbatim() -> None:
    assert_evidence_in(load_questions("sample"), sample_corpus())


def test_alice_evidence_is_verbatim() -> None:
    path = alice_path()
    if not path.is_file():
        pytest.skip(f"Alice text not found at {path}; set DRIFTRAG_ALICE_PATH to check the Alice evidence")
    assert_evidence_in(load_questions("alice"), normalise(path.read_text(encoding="utf-8")))
