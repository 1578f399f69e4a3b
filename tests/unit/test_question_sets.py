"""The bundled question sets (data/questions/*.jsonl): well-formed, enough of each type, evidence verbatim,
and a fixed tuning/reporting split, balanced per type; and the imported sets shipped in data/imported/.

Loading, validation and the evidence normalisation rule live in `driftrag.eval.questions`; this file
holds the extra requirements of the shipped sets.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from driftrag import corpora
from driftrag.eval.questions import QUESTION_TYPES, QuestionItem, load_questions, missing_evidence, read_corpus

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "data" / "questions"
SAMPLE_DIR = ROOT / "data" / "sample"
IMPORTED = sorted(path for path in (ROOT / "data" / "imported").iterdir() if path.is_dir())

FIELDS = set(QuestionItem.model_fields)
# Minimum number of questions per type, and allowed evidence length in words, for each set.
MIN_COUNTS = {
    "sample": {"local": 20, "multi-hop": 15, "global": 8},
    "alice": {"local": 60, "multi-hop": 45, "global": 30},
    "verne": {"local": 45, "multi-hop": 35, "global": 25},
}
EVIDENCE_WORDS = {"sample": (5, 25), "alice": (4, 25), "verne": (4, 25)}
# The language of each set's questions, answers and corpus (data/README.md).
LANGUAGES = {"sample": "en", "alice": "en", "verne": "fr"}
SETS = sorted(MIN_COUNTS)
MIN_TOTAL = 300  # over all the sets
MIN_LANGUAGES = 2


def load_set(name: str) -> list[QuestionItem]:
    return load_questions(QUESTIONS / f"{name}.jsonl")


def test_every_set_in_the_folder_is_checked() -> None:
    assert sorted(path.stem for path in QUESTIONS.glob("*.jsonl")) == SETS


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


def test_enough_questions_over_all_sets_and_unique_ids_across_them() -> None:
    ids = [q.id for name in SETS for q in load_set(name)]
    assert len(ids) >= MIN_TOTAL
    assert len(set(ids)) == len(ids), "an id is used in two sets"
    assert sorted(LANGUAGES) == SETS and len(set(LANGUAGES.values())) >= MIN_LANGUAGES


@pytest.mark.parametrize("name", SETS)
def test_the_split_alternates_within_each_type(name: str) -> None:
    # The documented rule (data/README.md): within each type, in file order, tune, report, tune, ...
    items = load_set(name)
    for kind in QUESTION_TYPES:
        splits = [q.split for q in items if q.type == kind]
        assert splits == [("tune", "report")[i % 2] for i in range(len(splits))], f"{name}: {kind} split"
        assert abs(splits.count("tune") - splits.count("report")) <= 1


@pytest.mark.parametrize("name", SETS)
def test_no_question_is_repeated(name: str) -> None:
    questions = [" ".join(q.question.lower().split()) for q in load_set(name)]
    assert len(set(questions)) == len(questions)


def test_sample_corpus_is_four_titled_story_files() -> None:
    files = sorted(SAMPLE_DIR.iterdir())
    assert [path.suffix for path in files] == [".md"] * 4, "data/sample holds exactly the four story files"
    for path in files:
        assert path.read_text(encoding="utf-8").startswith("# "), f"{path.name} must start with a '# Title' line"


def test_sample_evidence_is_verbatim() -> None:
    assert missing_evidence(load_set("sample"), read_corpus([SAMPLE_DIR])) == []


def test_alice_evidence_is_verbatim(alice_book: Path) -> None:
    assert missing_evidence(load_set("alice"), read_corpus([alice_book])) == []


@pytest.mark.parametrize("folder", IMPORTED, ids=lambda path: path.name)
def test_imported_sets_are_well_formed_split_and_verbatim(folder: Path) -> None:
    # `driftrag eval import` output (data/README.md): corpus/, questions.jsonl, import.json.
    items = load_questions(folder / "questions.jsonl")
    manifest = json.loads((folder / "import.json").read_text(encoding="utf-8"))
    assert manifest["questions"] == len(items) and manifest["evidence_verbatim"] == manifest["evidence"]
    assert manifest["documents"] == len(list((folder / "corpus").glob("*.md")))
    for kind in QUESTION_TYPES:
        splits = [q.split for q in items if q.type == kind]
        assert splits == [("tune", "report")[i % 2] for i in range(len(splits))], f"{folder.name}: {kind} split"
    assert missing_evidence(items, read_corpus([folder / "corpus"])) == []
    own = {q.id for name in SETS for q in load_set(name)}
    assert not own & {q.id for q in items}, "an imported id is also used in an own set"


def test_verne_evidence_is_verbatim_in_the_shipped_text() -> None:
    shipped = corpora.get_corpus("verne").shipped_text_path
    assert shipped is not None
    assert missing_evidence(load_set("verne"), read_corpus([shipped])) == []
