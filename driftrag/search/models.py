"""Typed results of the query modes: sources, the rendered context, answers.

Every source is identified by the id it carries in the graph (`chunk-…`, `entity-…`,
`relationship-…`, `community-…`), so an answer's citations can be checked against the graph.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from driftrag.models.bounds import Cap
from driftrag.models.search import Source
from driftrag.providers.usage import Usage

# Bounds of the answers (`driftrag.providers.structured`): the answer well above `answer_max_tokens`'
# default, so that it stops a looping model without cutting a real answer; the lists after it short (a
# small model fills every slot a schema leaves open: 20 follow-ups and 100 citations were 80 % of its
# output). Citations are handles (S1) or ids.
MAX_ANSWER_CHARS = 8000
MAX_FOLLOW_UPS = 10
MAX_CITATIONS = 20
Citations = Annotated[list[Annotated[str, Cap(64)]], Cap(MAX_CITATIONS)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Why a step's result is less than the model's own well-formed answer (`Degradation.reason`):
# - missing_score / malformed_score: the neutral score (`NEUTRAL_SCORE`) stands in for it;
# - answer_key: the answer text was under another key ("response", "text"…);
# - prose_answer: the re-asked model still wrote no JSON, and its prose was taken as the answer;
# - think_block / code_fence: a `<think>…</think>` block or a Markdown fence was stripped first;
# - fallback: the step's output stayed unusable, and the offline extractive step (or, for the DRIFT
#   primer, the question's own local search) answered instead;
# - dropped: a DRIFT follow-up whose answer stayed unusable was left out;
# - ungrounded: the final answer repeats a prompt example's names, or every citation it made is unknown.
# - degenerate: the final answer is a loop (one phrase or token repeated), a lone citation id, or the
#   prompt's example retold from sources that copy it (`driftrag.search.degenerate`).
DegradedReason = Literal[
    "missing_score",
    "malformed_score",
    "answer_key",
    "prose_answer",
    "think_block",
    "code_fence",
    "fallback",
    "dropped",
    "ungrounded",
    "degenerate",
    "time_limit",
]
NEUTRAL_SCORE = 50


class Degradation(_Model):
    """One thing a query step had to tolerate or replace in a model's answer (weak and local models)."""

    step: str = Field(description="The step: answer, primer, follow-up, reduce, global map, global reduce…")
    reason: DegradedReason
    detail: str = Field(default="", description="What exactly, e.g. the parse error that led to a fallback.")

    def __str__(self) -> str:
        return f"{self.step}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


class DegradedLog:
    """The degradations of one query, in the order they happened (one per query, shared by its tasks)."""

    def __init__(self) -> None:
        self._items: list[Degradation] = []

    def add(self, step: str, reason: DegradedReason, detail: str = "") -> None:
        self._items.append(Degradation(step=step, reason=reason, detail=detail[:300]))

    def items(self) -> list[Degradation]:
        return list(self._items)


def degraded_summary(degraded: list[Degradation]) -> str:
    """One line: each step's reasons, counted (`answer: missing_score; reduce: fallback ×2`)."""
    counts: dict[str, int] = {}
    for item in degraded:
        key = f"{item.step}: {item.reason}"
        counts[key] = counts.get(key, 0) + 1
    return "; ".join(key + (f" ×{n}" if n > 1 else "") for key, n in counts.items())


class SearchContext(_Model):
    """The material an answer is built from, rendered within a token budget."""

    text: str = Field(description="The rendered context, each source headed by its id.")
    n_tokens: int = Field(ge=0)
    budget_tokens: int = Field(ge=0)
    sources: list[Source] = Field(default_factory=list)
    tokens_by_kind: dict[str, int] = Field(default_factory=dict)

    def ids(self) -> set[str]:
        return {source.id for source in self.sources}


class AnswerPayload(_Model):
    """The JSON protocol of an answer over a context (local, basic, entity, DRIFT primer/follow-ups).

    Every field is asked for; the parser tolerates a missing score (`NEUTRAL_SCORE`, and says so in
    `tolerated`) rather than throw a good answer away."""

    answer: Annotated[str, Cap(MAX_ANSWER_CHARS)] = Field(
        description="The answer in Markdown; say plainly when the context does not answer."
    )
    score: int = Field(ge=0, le=100, description="How well the context answers the question, 0-100.")
    follow_up_queries: Annotated[list[Annotated[str, Cap(200)]], Cap(MAX_FOLLOW_UPS)] = Field(
        description="Questions that would complete it."
    )
    citations: Citations = Field(description="Ids of the context sources used.")
    # Set by the parser, never asked of the model: cited handles or ids the context did not show.
    unknown_citations: SkipJsonSchema[int | None] = None
    # Set by the parser: what it had to tolerate (`DegradedReason` values).
    tolerated: SkipJsonSchema[list[DegradedReason] | None] = None


@functools.cache
def cited_answer_payload(handles: tuple[str, ...]) -> type[AnswerPayload]:
    """`AnswerPayload` whose schema lets the citations be only the handles the context showed (`S1`…):
    a model constrained to it cannot cite a source it did not see (a 0.5B model listed 20 invented ones).
    The prompt still describes them as strings; parsing is the same."""
    if not handles:
        return AnswerPayload
    cited = Annotated[str, Field(json_schema_extra={"enum": list(handles)})]
    return create_model(
        AnswerPayload.__name__,
        __base__=AnswerPayload,
        citations=(
            Annotated[list[cited], Cap(min(MAX_CITATIONS, len(handles)))],
            Field(description="Ids of the context sources used."),
        ),
    )


class ReducedAnswer(_Model):
    """The JSON protocol of the DRIFT reduce step."""

    answer: Annotated[str, Cap(MAX_ANSWER_CHARS)]
    citations: Citations = Field(default_factory=list)
    unknown_citations: SkipJsonSchema[int | None] = None
    tolerated: SkipJsonSchema[list[DegradedReason] | None] = None


class _Items:
    """Stands for a list in a result's repr: its length."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __repr__(self) -> str:
        return f"[{self.count} items]"


class QueryResult(_Model):
    """What every mode's result carries: the answer, its citations, and the run's accounting."""

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # The workflow runtime summarises each step's output with repr(): a DRIFT result's hundreds of
        # sources and answers cost 4-8 ms of every query's CPU that way, so lists show their length.
        for name, value in super().__repr_args__():
            yield name, _Items(len(value)) if isinstance(value, list) and len(value) > 3 else value

    mode: str
    kb: str
    question: str
    answer: str
    source_ids: list[str] = Field(default_factory=list, description="Cited ids that exist in what was retrieved.")
    extractive: bool = Field(default=False, description="True when produced by the offline extractive mode.")
    usage: Usage = Field(default_factory=Usage)
    unknown_citations: int = Field(
        default=0, description="Citations the model made to handles or ids its context did not show (dropped)."
    )
    llm_calls: int = Field(default=0, description="Model calls spent from the query's budget (cache hits are free).")
    prompt_tokens: int = Field(default=0, description="Prompt tokens spent from the query's budget.")
    completion_tokens: int = Field(default=0, description="Completion tokens of the query's model calls.")
    degraded: list[Degradation] = Field(
        default_factory=list,
        description="What the query's steps tolerated or replaced in the model's answers (empty: none).",
    )
    seconds: float = 0.0

    @property
    def ungrounded(self) -> bool:
        return any(item.reason == "ungrounded" for item in self.degraded)

    @property
    def degenerate(self) -> bool:
        """The final answer is a loop, a lone citation id or a retold example (`driftrag.search.degenerate`)."""
        return any(item.reason == "degenerate" for item in self.degraded)

    def retrieved_sources(self) -> list[Source]:
        """Everything retrieved, best-ranked first (the order retrieval metrics truncate in). Each mode's
        result says it; the base knows no sources."""
        return []

    def cited_sources(self) -> list[Source]:
        cited = set(self.source_ids)
        return [source for source in self.retrieved_sources() if source.id in cited]

    def extras(self) -> ResultExtras:
        """What this mode adds to the common fields, as the HTTP API and LlamaIndex metadata show it."""
        return ResultExtras()

    def markdown(self, *, with_answer: bool = True) -> str:
        """The result in Markdown (Jupyter, the CLI); `with_answer=False` after a streamed answer. A mode's
        result may say more; this is the question, the answer and its cited sources."""
        from driftrag.search.markdown import query_result_markdown

        return query_result_markdown(self, with_answer=with_answer)

    def _repr_markdown_(self) -> str:
        return self.markdown()


class ResultExtras(_Model):
    """The fields some modes add to a result. Lists of models are typed where the API declares them
    (`driftrag.api.models.QueryResponse`): DRIFT's intermediate answers and follow-up tree."""

    intermediate_answers: list[Any] = Field(default_factory=list, description="DRIFT: `IntermediateAnswer`s.")
    follow_ups: list[Any] = Field(default_factory=list, description="DRIFT: the follow-up tree (`FollowUp`s).")
    follow_up_queries: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    community_level: int | None = None


class SearchResult(QueryResult):
    """The outcome of one single-pass search (basic, local, entity…)."""

    score: int | None = None
    follow_up_queries: list[str] = Field(default_factory=list)
    context: SearchContext

    def retrieved_sources(self) -> list[Source]:
        # The context's own order is the mode's ranking.
        return list(self.context.sources)

    def extras(self) -> ResultExtras:
        return ResultExtras(follow_up_queries=self.follow_up_queries)

    def markdown(self, *, with_answer: bool = True) -> str:
        from driftrag.search.markdown import search_result_markdown

        return search_result_markdown(self, with_answer=with_answer)
