"""Question sets: one JSON object per line, validated; evidence checked against the corpus it quotes.

Evidence strings are verbatim substrings of the corpus under one normalisation rule, applied to both
sides before comparing: CRLF (and lone CR) becomes LF, then every run of whitespace, newlines
included, becomes a single space (see data/README.md).

A shipped set also fixes a split: each question is `tune` (choose weights, shares and thresholds on
these) or `report` (the figures that are published). `select_split` picks one half, or all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from driftrag.errors import ConfigurationError

QuestionType = Literal["local", "multi-hop", "global"]
QUESTION_TYPES: tuple[QuestionType, ...] = ("local", "multi-hop", "global")
Split = Literal["tune", "report"]
SplitChoice = Literal["tune", "report", "all"]
SPLIT_CHOICES: tuple[SplitChoice, ...] = ("tune", "report", "all")
# Corpus files taken from a folder, in name order.
CORPUS_SUFFIXES = (".md", ".txt")
_WHITESPACE = re.compile(r"\s+")


class QuestionSetError(ConfigurationError):
    """A question file cannot be read, has an invalid line, or repeats an id."""


class QuestionItem(BaseModel):
    """One evaluation question. `evidence` holds verbatim corpus passages that answer it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=128)
    type: QuestionType
    question: str = Field(min_length=1)
    reference_answer: str = ""
    evidence: list[str] = Field(default_factory=list)
    split: Split | None = Field(default=None, description="The fixed half it belongs to; None: no split.")

    @field_validator("id", "question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("evidence")
    @classmethod
    def _no_blank_evidence(cls, value: list[str]) -> list[str]:
        if any(not normalise(item) for item in value):
            raise ValueError("evidence strings must not be blank")
        return value


def normalise(text: str) -> str:
    """CRLF / CR to LF, then each run of whitespace (newlines included) to one space, trimmed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _WHITESPACE.sub(" ", text).strip()


def parse_questions(text: str, origin: str = "<text>") -> list[QuestionItem]:
    """Questions from JSONL text; blank lines are skipped, any invalid line or repeated id is refused."""
    items: list[QuestionItem] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = QuestionItem.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise QuestionSetError(f"{origin}:{number}: invalid question: {exc}") from None
        if item.id in seen:
            raise QuestionSetError(f"{origin}:{number}: id {item.id!r} already used on line {seen[item.id]}")
        seen[item.id] = number
        items.append(item)
    return items


def load_questions(path: str | Path) -> list[QuestionItem]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionSetError(f"cannot read question file {path}: {exc}") from None
    items = parse_questions(text, str(path))
    if not items:
        raise QuestionSetError(f"{path}: no questions")
    return items


def dump_questions(items: Iterable[QuestionItem]) -> str:
    """JSONL text, one question per line, fields in schema order (no `split` key for a set without one)."""
    return "".join(
        json.dumps(item.model_dump(mode="json", exclude_none=True), ensure_ascii=False) + "\n" for item in items
    )


def select_split(items: Sequence[QuestionItem], split: SplitChoice) -> list[QuestionItem]:
    """The questions of one half (`tune`, `report`), or all of them; refuses a half that is empty."""
    if split == "all":
        return list(items)
    if split not in SPLIT_CHOICES:
        raise QuestionSetError(f"unknown split {split!r}: one of {', '.join(SPLIT_CHOICES)}")
    chosen = [item for item in items if item.split == split]
    if not chosen:
        raise QuestionSetError(f"no question of the set is in the {split!r} split (the set may have no split)")
    return chosen


def questions_digest(items: Sequence[QuestionItem]) -> str:
    """A content hash of a question set: a resumed run must use the set it started with."""
    return hashlib.sha256(dump_questions(items).encode("utf-8")).hexdigest()


def corpus_files(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; a folder contributes its .md/.txt files in name order."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in CORPUS_SUFFIXES))
        else:
            files.append(path)
    return files


def read_corpus(paths: Sequence[str | Path]) -> str:
    """The corpus as the evidence rule sees it: files joined with a newline, then normalised."""
    texts = []
    for path in corpus_files(paths):
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise QuestionSetError(f"cannot read corpus file {path}: {exc}") from None
    return normalise("\n".join(texts))


def missing_evidence(items: Iterable[QuestionItem], corpus: str) -> list[tuple[str, str]]:
    """(question id, evidence) for each evidence string not found in the normalised `corpus`."""
    return [(item.id, evidence) for item in items for evidence in item.evidence if normalise(evidence) not in corpus]
