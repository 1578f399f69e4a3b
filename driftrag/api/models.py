"""Request and response bodies of the HTTP API (the graph-search response is the search layer's own model)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from driftrag.models.graph import FailedChunk, KbCounts, KbSummary
from driftrag.models.search import Source
from driftrag.providers.usage import Usage
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.graph_search import MAX_QUERY_CHARS, MAX_ROWS_LIMIT, MAX_SEEDS_LIMIT
from driftrag.search.models import Degradation, QueryResult
from driftrag.search.modes import DEFAULT_MODE, MODE_NAMES, ModeName

MAX_QUESTION_CHARS = MAX_QUERY_CHARS
MAX_TEXTS = 1000
MAX_CHUNK_IDS = 10_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain at least one non-whitespace character")
    return value


# Kept as given (a leading space can be meant), but a blank text would match or mean everything.
NonBlank = Annotated[str, AfterValidator(_not_blank)]


# --- errors -------------------------------------------------------------------------------------------


class FieldProblem(_Model):
    location: str = Field(
        description="Where the problem is, e.g. `body.query` or `path.kb`: the schema's names and list indexes "
        "only (an unknown field is at its parent's location, a caller's own mapping key is `(key not shown)`)."
    )
    message: str


class ErrorBody(_Model):
    """Every error answer has this shape; `code` is stable, `detail` is for people."""

    code: str = Field(
        description="unauthorized, forbidden, kb_not_found, document_not_found, job_not_found, not_found, "
        "method_not_allowed, payload_too_large, request_timeout, headers_too_large, invalid_request, model_required, "
        "too_many_jobs, "
        "model_error, backend_unavailable, graph_disabled, internal_error",
        examples=["kb_not_found"],
    )
    detail: str
    problems: list[FieldProblem] = Field(
        default_factory=list,
        description="Per-field problems of a 422: distinct ones (a repeated one says `(×N)`), at most 20.",
    )
    problems_omitted: int = Field(default=0, ge=0, description="Distinct problems found beyond those listed.")


# --- graph search -------------------------------------------------------------------------------------


class GraphSearchBody(_Model):
    query: NonBlank = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="Case-sensitive substring of entity names."
    )
    max_seeds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_SEEDS_LIMIT,
        description="Seeds at most; may only lower the server's cap (default and ceiling: its setting, 200); "
        "a larger value is a 422.",
    )
    max_rows: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ROWS_LIMIT,
        description="Rows at most; may only lower the server's cap (default and ceiling: its setting, 2000); "
        "a larger value is a 422.",
    )


# --- query ----------------------------------------------------------------------------------------------


class QueryBody(_Model):
    question: NonBlank = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    mode: ModeName = Field(default=DEFAULT_MODE, description=f"One of: {', '.join(MODE_NAMES)}.")
    community_level: int | None = Field(
        default=None,
        ge=0,
        description="Global search only: the community level to map over (0 = coarsest); default: the server's "
        "setting, else the finest level that fits the query budget.",
    )


class QueryResponse(_Model):
    """The answer of one query, whatever its mode, with every source it drew on."""

    kb: str
    mode: ModeName
    question: str
    answer: str = Field(description="Markdown; cites sources by id in square brackets.")
    extractive: bool = Field(description="True in the offline mode: sentences picked, not written by a model.")
    cited_source_ids: list[str] = Field(description="Ids the answer cites; each is in `sources`.")
    sources: list[Source] = Field(description="Every source the query used, once each, with its id and text.")
    intermediate_answers: list[IntermediateAnswer] = Field(
        description="DRIFT: the primer's and each follow-up search's answer; empty in the other modes."
    )
    follow_up_queries: list[str] = Field(description="Questions that would complete the answer (local modes).")
    notes: list[str] = Field(description="What was skipped or cut, and why (DRIFT, global).")
    community_level: int | None = Field(
        default=None, description="Global search: the community level its map went over."
    )
    llm_calls: int = Field(description="Model calls this query made (cache hits are free); 0 offline.")
    prompt_tokens: int = Field(
        description="Prompt tokens of those calls: the model's own count when it reports one, else cl100k; 0 offline."
    )
    completion_tokens: int = Field(description="Completion tokens of those calls, counted the same way; 0 offline.")
    unknown_citations: int = Field(
        description="Citations the model made to sources its context did not show (dropped from the answer)."
    )
    degraded: list[Degradation] = Field(
        default_factory=list,
        description="What the query's steps tolerated or replaced in the model's answers (a missing score, "
        "prose, a think block, a step that fell back to the offline extractive answer, an ungrounded or a "
        "degenerate answer); "
        "empty when every answer was well-formed.",
    )
    usage: Usage = Field(
        description="The engine's model counters over the query's time (embedding requests, cache hits, retries). "
        "A server answering several queries at once counts them all here; `llm_calls` and the token fields "
        "are this query's own."
    )
    seconds: float

    @classmethod
    def from_result(cls, result: QueryResult) -> QueryResponse:
        """Any mode's result: the fields of the result base, plus what its mode adds (`extras()`)."""
        extras = result.extras()
        return cls(
            kb=result.kb,
            mode=result.mode,
            question=result.question,
            answer=result.answer,
            extractive=result.extractive,
            cited_source_ids=result.source_ids,
            sources=result.retrieved_sources(),
            intermediate_answers=extras.intermediate_answers,
            follow_up_queries=extras.follow_up_queries,
            notes=extras.notes,
            community_level=extras.community_level,
            llm_calls=result.llm_calls,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            unknown_citations=result.unknown_citations,
            degraded=result.degraded,
            usage=result.usage,
            seconds=result.seconds,
        )


class StreamError(_Model):
    """The `error` event of a streamed query: what the unstreamed route would have answered."""

    status: int
    code: str
    detail: str


# --- system -------------------------------------------------------------------------------------------


class SystemInfo(_Model):
    name: Literal["driftrag"] = "driftrag"
    version: str
    api_version: Literal["v1"] = "v1"
    graph_engine: Literal["Neo4j", "Not Enabled"] = Field(
        description='"Neo4j" when the server answers now, "Not Enabled" when it cannot be reached.'
    )
    graph_engine_version: str | None = None
    model_mode: Literal["offline", "openai", "llm", "local"] = Field(
        description="offline = extractive answers without a language model; openai = an OpenAI-compatible model "
        "from the settings; local = a GGUF model served by llama.cpp in the server's process; llm = a "
        "LlamaIndex LLM passed to the engine."
    )
    auth: Literal["api-key", "none"] = Field(description='"none" only when started with --insecure-no-auth.')


# --- manage ---------------------------------------------------------------------------------------------


class TextDocument(_Model):
    title: str = Field(min_length=1, max_length=512, description="Identifies the document across versions.")
    text: NonBlank = Field(min_length=1)


class IngestBody(_Model):
    texts: list[TextDocument] = Field(min_length=1, max_length=MAX_TEXTS)

    @field_validator("texts")
    @classmethod
    def _distinct_titles(cls, texts: list[TextDocument]) -> list[TextDocument]:
        titles = [doc.title for doc in texts]
        if len(set(titles)) != len(titles):
            raise ValueError("titles must be distinct within one request")
        return texts


class DeleteDocumentResponse(_Model):
    kb: str
    document_id: str
    deleted: Literal[True] = True
    counts: KbCounts = Field(description="The knowledge base after the deletion.")


class DeleteKbResponse(_Model):
    kb: str
    deleted: Literal[True] = True


class ChunkIdsBody(_Model):
    chunk_ids: list[str] = Field(min_length=1, max_length=MAX_CHUNK_IDS, description="Chunk ids (chunk-…).")


class ChunkSwitchResponse(_Model):
    kb: str
    enabled: bool
    requested: int = Field(description="Distinct ids in the request.")
    matched: int = Field(description="Of them, chunks that exist in the kb; the others were ignored.")


class GraphSwitchBody(_Model):
    enabled: bool


class GraphSwitchResponse(_Model):
    kb: str
    graph_enabled: bool


class StatsResponse(_Model):
    kb: str
    graph_enabled: bool
    stale: bool = Field(
        description="Half-built: chunks changed since the derived layers were last rebuilt completely (a killed "
        "run, an ingestion without its kb-wide half); the next ingestion or repair rebuilds them."
    )
    incomplete: bool = Field(
        description="Something the model failed on is missing: failed chunks, placeholder summaries or reports "
        "(counted in `counts`); the next ingestion or `POST …/repair` asks for them again."
    )
    counts: KbCounts
    failed_chunks: list[FailedChunk]


class RepairResponse(_Model):
    kb: str
    retried: KbCounts = Field(description="The counts before: their failed chunks and placeholders were asked again.")
    remaining: KbCounts = Field(description="The counts after: what is still incomplete.")
    stale: bool = Field(description="Whether the kb is still stale (e.g. some vectors could not be made).")
    complete: bool = Field(description="Nothing the model failed on is missing and the kb is not stale.")
    failed_chunks: list[FailedChunk] = Field(description="The chunks whose extraction still fails.")


class KbListResponse(_Model):
    knowledge_bases: list[KbSummary] = Field(
        description="The kbs the key may use, by id: counts, and the mode and embedder of the last ingestion."
    )
