"""Test data builders for the evaluation harness: run rows, a fake method runner, settings-only deps.

`FakeMethods` stands in for the query methods (no Neo4j, no model): each method answers with a
fixed-length text and retrieves sources from a small dict, so metrics and judgments are known in
advance. `kill_after` raises `Killed` (a BaseException, as a SIGINT would) after that many calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from driftrag.eval.methods import MethodOutput
from driftrag.eval.records import RunRow
from driftrag.models.search import Source
from driftrag.settings import Settings

# Words per answer: the scripted judge's "length" policy prefers longer answers.
ANSWER_WORDS = {"drift": 40, "local": 20, "basic": 10, "entity": 5}


class Killed(BaseException):
    """A simulated kill in the middle of a run."""


@dataclass
class SettingsOnlyDeps:
    """What the runner reads from `QueryDeps` when the methods are faked."""

    settings: Settings = field(default_factory=lambda: Settings(_env_file=None))


def source(source_id: str, text: str) -> Source:
    return Source(id=source_id, kind="chunk", text=text)


@dataclass
class FakeMethods:
    """A `MethodRunner` double: deterministic answers and sources per method."""

    sources: dict[str, list[Source]] = field(default_factory=dict)
    fail: set[tuple[str, str]] = field(default_factory=set)
    kill_after: int | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def __call__(self, deps: object, kb: str, method: str, question: str) -> MethodOutput:
        if self.kill_after is not None and len(self.calls) >= self.kill_after:
            raise Killed(f"killed after {self.kill_after} rows")
        self.calls.append((method, question))
        if (method, question) in self.fail:
            return MethodOutput(method=method, error="BackendUnavailableError: Neo4j went away")  # type: ignore[arg-type]
        words = " ".join(f"{method}{i}" for i in range(ANSWER_WORDS[method]))
        return MethodOutput(
            method=method,  # type: ignore[arg-type]
            answer=f"{words} about {question}",
            sources=self.sources.get(method, []),
            cited_ids=[s.id for s in self.sources.get(method, [])[:1]],
            llm_calls={"drift": 7}.get(method, 1),
            prompt_tokens=100,
            completion_tokens=10,
            seconds=0.01,
        )


def run_row(question_id: str, method: str, answer: str, *, repeat: int = 0, error: str | None = None) -> RunRow:
    return RunRow(
        question_id=question_id,
        question_type="global",
        question=f"question {question_id}?",
        method=method,  # type: ignore[arg-type]
        repeat=repeat,
        kb="kb1",
        answer=answer,
        sources=[],
        cited_ids=[],
        llm_calls=0,
        prompt_tokens=0,
        completion_tokens=0,
        embedding_requests=0,
        seconds=0.0,
        extractive=False,
        error=error,
        recorded_at="2026-12-01T00:00:00+00:00",
    )
