"""Importers of public benchmark formats: a corpus, questions, reference answers and evidence, written out
as a corpus folder and a question set in the harness's format.

    driftrag eval import multihop-rag PATH --out DIR
    import_benchmark("fairytaleqa", path, out)

Each format's module reads its source files and returns an `ImportedSet` (documents and questions, the
source's ids and question types kept in the ids, its types mapped to local / multi-hop / global as the
module says). `write_import` then writes, under `--out`:

- `corpus/`: one Markdown file per source document, in the source's order (ingest the folder);
- `questions.jsonl`: the questions, with the harness's tuning/reporting split (within each type, in the
  source's order: tune, report, tune, …);
- `import.json`: the format, each source file's SHA-256 (and whether it is the pinned release), the
  counts, the questions left out and why, and how many evidence strings occur verbatim in the corpus.

A source file that cannot be read or does not have the format's shape is refused with
`BenchmarkFormatError`, whose message names the file (and the item or line).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from driftrag.eval.questions import (
    QUESTION_TYPES,
    QuestionItem,
    QuestionSetError,
    dump_questions,
    normalise,
)

CORPUS_DIR = "corpus"
QUESTIONS_FILE = "questions.jsonl"
MANIFEST_FILE = "import.json"


class BenchmarkFormatError(QuestionSetError):
    """A benchmark's source file is missing, unreadable, or not in the format it is imported as."""


class SourceDocument(BaseModel):
    """One document of the imported corpus: written as `corpus/<name>.md`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    text: str


class SourceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Relative to the PATH given to the importer.")
    sha256: str
    pinned_sha256: str | None = Field(default=None, description="The release the importer was built on.")

    @property
    def is_pinned_release(self) -> bool | None:
        return None if self.pinned_sha256 is None else self.sha256 == self.pinned_sha256


class ImportedSet(BaseModel):
    """What a format's reader returns, before anything is written."""

    model_config = ConfigDict(extra="forbid")

    documents: list[SourceDocument]
    questions: list[QuestionItem]
    sources: list[SourceFile]
    skipped: dict[str, int] = Field(default_factory=dict, description="Questions left out, by reason.")
    type_mapping: dict[str, str] = Field(description="The source's question type -> local / multi-hop / global.")


class ImportSummary(BaseModel):
    """What `write_import` wrote (also saved as `import.json`; its paths are relative to the output folder)."""

    model_config = ConfigDict(extra="forbid")

    format: str
    corpus: str = CORPUS_DIR
    questions_file: str = QUESTIONS_FILE
    documents: int
    questions: int
    by_type: dict[str, int]
    by_split: dict[str, int]
    skipped: dict[str, int]
    type_mapping: dict[str, str]
    evidence: int
    evidence_verbatim: int = Field(description="Evidence strings found in the written corpus (normalised).")
    sources: list[SourceFile]


def source_file(path: Path, root: Path, pinned_sha256: str | None = None) -> SourceFile:
    """A source file's record: its path relative to `root` (the PATH given) and its SHA-256."""
    return SourceFile(path=path.relative_to(root).as_posix(), sha256=file_sha256(path), pinned_sha256=pinned_sha256)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return digest.hexdigest()


def read_json(path: Path) -> object:
    """A JSON file, or `BenchmarkFormatError` naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchmarkFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None


def with_splits(items: list[QuestionItem]) -> list[QuestionItem]:
    """The harness's rule: within each type, in the given order, tune, report, tune, …"""
    seen: Counter[str] = Counter()
    split_items = []
    for item in items:
        split = ("tune", "report")[seen[item.type] % 2]
        seen[item.type] += 1
        split_items.append(item.model_copy(update={"split": split}))
    return split_items


def write_import(format_name: str, imported: ImportedSet, out: Path) -> ImportSummary:
    """Write `corpus/`, `questions.jsonl` and `import.json` under `out`; refuses a non-empty `corpus/`."""
    corpus = out / CORPUS_DIR
    if corpus.is_dir() and any(corpus.iterdir()):
        raise BenchmarkFormatError(f"{corpus} is not empty: import into a new folder")
    if not imported.questions:
        raise BenchmarkFormatError(f"{format_name}: the source has no question to import")
    corpus.mkdir(parents=True, exist_ok=True)
    for document in imported.documents:
        (corpus / f"{document.name}.md").write_text(document.text, encoding="utf-8")
    items = with_splits(imported.questions)
    (out / QUESTIONS_FILE).write_text(dump_questions(items), encoding="utf-8")
    text = normalise("\n".join(document.text for document in imported.documents))
    evidence = [normalise(e) for item in items for e in item.evidence]
    summary = ImportSummary(
        format=format_name,
        documents=len(imported.documents),
        questions=len(items),
        by_type={kind: n for kind in QUESTION_TYPES if (n := sum(item.type == kind for item in items))},
        by_split=dict(Counter(item.split or "none" for item in items)),
        skipped=imported.skipped,
        type_mapping=imported.type_mapping,
        evidence=len(evidence),
        evidence_verbatim=sum(e in text for e in evidence),
        sources=imported.sources,
    )
    (out / MANIFEST_FILE).write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return summary


def _readers() -> dict[str, Callable[[Path], ImportedSet]]:
    from driftrag.eval.importers import fairytaleqa, multihop_rag

    return {"multihop-rag": multihop_rag.read_multihop_rag, "fairytaleqa": fairytaleqa.read_fairytaleqa}


IMPORT_FORMATS: tuple[str, ...] = ("multihop-rag", "fairytaleqa")


def import_benchmark(format_name: str, path: str | Path, out: str | Path) -> ImportSummary:
    """Read `path` as `format_name` (one of `IMPORT_FORMATS`) and write the set under `out`."""
    readers = _readers()
    if format_name not in readers:
        raise BenchmarkFormatError(f"unknown format {format_name!r}: one of {', '.join(IMPORT_FORMATS)}")
    path = Path(path)
    if not path.exists():
        raise BenchmarkFormatError(f"{path}: no such file or folder")
    return write_import(format_name, readers[format_name](path), Path(out))
