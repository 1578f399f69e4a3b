"""One adapter over the query methods, so an evaluation runs DRIFT, local, basic and entity search alike.

Each method yields a `MethodOutput`: the answer, its retrieved sources in rank order (the order the
retrieval metrics truncate them in), the ids the answer cites, model calls and tokens, wall time, and
the error if it failed. A failure never raises: it is recorded in the output.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from driftrag.models.search import Source
from driftrag.search.deps import QueryDeps
from driftrag.search.drift.models import DriftResult
from driftrag.search.models import SearchResult

Method = Literal["drift", "local", "basic", "entity"]
METHODS: tuple[Method, ...] = get_args(Method)


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
    """Run `method` on `question`; any failure is caught and recorded (cancellation still propagates)."""
    started = time.perf_counter()
    try:
        if method == "drift":
            output = from_drift(await _drift(deps, kb, question))
        else:
            output = from_search(method, await _search(deps, kb, method, question))
    except Exception as exc:  # one failed question must not stop an evaluation
        output = MethodOutput(method=method, error=f"{type(exc).__name__}: {exc}")
    return output.model_copy(update={"seconds": round(time.perf_counter() - started, 4)})


async def _search(deps: QueryDeps, kb: str, method: Method, question: str) -> SearchResult:
    # Imported here: the modes load their own modules (and the offline tasks) only when used.
    if method == "basic":
        from driftrag.search.basic import basic_search

        return await basic_search(deps, kb, question)
    if method == "local":
        from driftrag.search.local import local_search

        return await local_search(deps, kb, question)
    from driftrag.search.entity import entity_search

    return await entity_search(deps, kb, question)


async def _drift(deps: QueryDeps, kb: str, question: str) -> DriftResult:
    from driftrag.workflows.drift import DriftStart, DriftWorkflow

    return await DriftWorkflow(deps).run(start_event=DriftStart(kb=kb, question=question))


def from_search(method: Method, result: SearchResult) -> MethodOutput:
    """A basic/local/entity result: the context's own order is the method's ranking."""
    return MethodOutput(
        method=method,
        answer=result.answer,
        sources=list(result.context.sources),
        cited_ids=list(result.source_ids),
        llm_calls=result.usage.chat_calls,
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        embedding_requests=result.usage.embedding_requests,
        extractive=result.extractive,
    )


def from_drift(result: DriftResult) -> MethodOutput:
    return MethodOutput(
        method="drift",
        answer=result.answer,
        sources=rank_drift_sources(result),
        cited_ids=list(result.source_ids),
        llm_calls=result.llm_calls,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        embedding_requests=result.usage.embedding_requests,
        extractive=result.extractive,
    )


def rank_drift_sources(result: DriftResult) -> list[Source]:
    """DRIFT gathers sources from many steps and has no single ranking, so this defines one:
    sources the final answer cites first, then by the best score of the intermediate answers that
    cite them (sources no intermediate answer cites come last), then by id."""
    return rank_sources(result.sources, result.source_ids, [(a.score, a.source_ids) for a in result.intermediate])


def rank_sources(
    sources: Sequence[Source], final_citations: Sequence[str], intermediate: Sequence[tuple[int, Sequence[str]]]
) -> list[Source]:
    cited = set(final_citations)
    best: dict[str, int] = {}
    for score, ids in intermediate:
        for source_id in ids:
            best[source_id] = max(best.get(source_id, -1), score)
    unique = {source.id: source for source in reversed(sources)}
    return sorted(unique.values(), key=lambda s: (s.id not in cited, -best.get(s.id, -1), s.id))
