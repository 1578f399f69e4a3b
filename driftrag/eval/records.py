"""The files of a results folder and their row models.

A results folder holds `run.json` (what was run: kb, question-set hash, model mode, methods,
repeats, context budgets), `questions.jsonl` (the question set, so reports need nothing else),
`corpus.jsonl` (the kb's chunks, for the floor and ceiling), `runs.jsonl` (one row per question, method
and repeat), `summary.json`, and after judging `judgments.jsonl` and
`judge.json`; `driftrag eval report` adds `report.md`, `metrics.json` and `plots/`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from driftrag.eval.jsonl import ResultsFileError, read_rows
from driftrag.eval.methods import Method
from driftrag.eval.questions import QuestionItem, QuestionType, load_questions
from driftrag.models.search import Source
from driftrag.search.models import Degradation

MANIFEST = "run.json"
QUESTIONS = "questions.jsonl"
ROWS = "runs.jsonl"
SUMMARY = "summary.json"
CORPUS = "corpus.jsonl"
JUDGMENTS = "judgments.jsonl"
JUDGE_SUMMARY = "judge.json"
REPORT = "report.md"
METRICS = "metrics.json"
PLOTS = "plots"

RunKey = tuple[str, str, int]


class RunRow(BaseModel):
    """One method's answer to one question, with what it retrieved and what it cost."""

    model_config = ConfigDict(extra="forbid")

    question_id: str
    question_type: QuestionType
    question: str
    method: Method
    repeat: int = Field(ge=0)
    kb: str
    answer: str
    sources: list[Source] = Field(description="Retrieved material, best-ranked first.")
    cited_ids: list[str]
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    embedding_requests: int
    seconds: float
    extractive: bool
    error: str | None
    recorded_at: str
    # Rows written before weak-model accounting have none.
    degraded: list[Degradation] = Field(default_factory=list, description="What the steps tolerated or replaced.")

    @property
    def ungrounded(self) -> bool:
        return any(item.reason == "ungrounded" for item in self.degraded)

    @property
    def key(self) -> RunKey:
        return (self.question_id, self.method, self.repeat)


class RunManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kb: str
    questions_file: str
    questions_sha256: str
    split: str = Field(default="all", description="The half of the question set that was run: tune, report or all.")
    mode: str = Field(description="`offline` or `openai`: rows of one run come from one kind of model.")
    mode_description: str
    methods: list[Method]
    repeats: int
    started_at: str
    budgets: list[int] = Field(
        default_factory=list,
        description="Context budgets (cl100k tokens) the report cuts every method to; the methods ran at the "
        "largest. Empty in runs recorded before budgets were kept: they ran at DRIFTRAG_LOCAL_CONTEXT_TOKENS.",
    )

    run_budget: int | None = Field(
        default=None,
        description="The context budget (local_context_tokens, fitted to the model's window) the methods ran at.",
    )

    def report_budgets(self, default: int) -> list[int]:
        return list(self.budgets) or [default]


def latest_rows(rows: Sequence[RunRow]) -> list[RunRow]:
    """The newest row of each key, in first-recorded order (a retried row replaces its error row)."""
    latest: dict[RunKey, RunRow] = {}
    for row in rows:
        latest[row.key] = row
    return list(latest.values())


def load_run(out_dir: Path) -> tuple[RunManifest, list[QuestionItem], list[RunRow]]:
    """What a results folder holds: manifest, question set and the current rows."""
    manifest_path = out_dir / MANIFEST
    if not manifest_path.is_file():
        raise ResultsFileError(f"{out_dir} holds no evaluation run ({MANIFEST} missing)")
    manifest = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
    questions = load_questions(out_dir / QUESTIONS)
    return manifest, questions, latest_rows(read_rows(out_dir / ROWS, RunRow))


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_json(path: Path, model: BaseModel) -> None:
    """Write-then-rename, so a kill never leaves a half-written manifest or summary."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(model.model_dump_json(indent=2) + "\n", encoding="utf-8")
    partial.replace(path)
