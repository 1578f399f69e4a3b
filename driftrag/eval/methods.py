"""One adapter over the query methods, so an evaluation runs DRIFT, local, basic and entity search alike.

Each method yields a `MethodOutput`: the answer, its retrieved sources in rank order (the order the
retrieval metrics truncate them in), the ids the answer cites, model calls and tokens, wall time, and
the error if it failed. A failure never raises: it is recorded in the output.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from driftrag.models.search import Source
from driftrag.search.deps import QueryDeps
from driftrag.search.models import Degradation, QueryResult
from driftrag.search.modes import MODE_NAMES, ModeName

Method = ModeName
METHODS: tuple[str, ...] = MODE_NAMES


class MethodOutput(BaseModel):
    """What one method did for one question."""

    model_config = ConfigDict(extra="forbid")

    method: Method
    answer: str = ""
    sources: list[Source] = Field(default_factory=list, description="Retrieved material, best-ranked first.")
    cited_ids: list[str] = Field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_requests: int = 0
    seconds: float = 0.0
    extractive: bool = False
    degraded: list[Degradation] = Field(default_factory=list, description="What the steps tolerated or replaced.")
    error: str | None = None


def parse_methods(text: str) -> list[Method]:
    """`drift,local` → ["drift", "local"]; unknown or repeated names are refused."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METHODS]
    if unknown or not names:
        raise ValueError(f"unknown methods {unknown}; choose from {', '.join(METHODS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"a method is listed twice: {text!r}")
    return [method for name in names for method in METHODS if method == name]


async def run_method(deps: QueryDeps, kb: str, method: Method, question: str) -> MethodOutput:
    """Run `method` on `question` through the one query front; any failure is caught and recorded
    (cancellation still propagates)."""
    from driftrag.workflows.query import run_query

    started = time.perf_counter()
    try:
        output = from_result(method, await run_query(deps, method, kb, question))
    except Exception as exc:  # one failed question must not stop an evaluation
        output = MethodOutput(method=method, error=f"{type(exc).__name__}: {exc}")
    return output.model_copy(update={"seconds": round(time.perf_counter() - started, 4)})


def from_result(method: Method, result: QueryResult) -> MethodOutput:
    """Every mode alike: its own ranking of what it retrieved, and calls and tokens from its budget."""
    return MethodOutput(
        method=method,
        answer=result.answer,
        sources=result.retrieved_sources(),
        cited_ids=list(result.source_ids),
        llm_calls=result.llm_calls,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        embedding_requests=result.usage.embedding_requests,
        extractive=result.extractive,
        degraded=result.degraded,
    )
