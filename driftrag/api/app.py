"""The HTTP API: the bounded graph-search contract, queries in every mode, and knowledge-base management.

    app = create_app(DriftRAG(settings), ApiKeys.from_file(path))   # no I/O here
    uvicorn.run(app, host="127.0.0.1", port=8000)                   # the lifespan connects and closes

When Neo4j cannot be reached at start-up the server still starts: `/system` then says "Not Enabled",
and every call that needs the graph answers 503 with Retry-After until Neo4j is back (never a 200 with
an empty result).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, File, Query, Request, UploadFile
from fastapi import Path as PathParam
from fastapi.responses import Response
from fastapi_offline import FastAPIOffline
from sse_starlette import EventSourceResponse

from driftrag import __version__
from driftrag.api.auth import ApiKeys
from driftrag.api.backend import Backend
from driftrag.api.chat import router as openai_router
from driftrag.api.dependencies import BackendDep, KeysDep, ManageKb, PrincipalDep, ReadKb, ReadKbFromUrl
from driftrag.api.errors import RETRY_AFTER_UNAVAILABLE_S, ApiError, install_error_handlers
from driftrag.api.jobs import JOB_ID_PATTERN, IngestJob, JobList, JobTexts, TooManyJobsError
from driftrag.api.limits import DOCS_STATIC_PREFIX, RequestLimits
from driftrag.api.models import (
    MAX_QUESTION_CHARS,
    ChunkIdsBody,
    ChunkSwitchResponse,
    DeleteDocumentResponse,
    DeleteKbResponse,
    ErrorBody,
    GraphSearchBody,
    GraphSwitchBody,
    GraphSwitchResponse,
    IngestBody,
    KbListResponse,
    QueryBody,
    QueryResponse,
    RepairResponse,
    StatsResponse,
    SystemInfo,
)
from driftrag.api.sse import event_stream, opened, query_frames
from driftrag.api.uploads import ClientGone, read_uploads, until_disconnected
from driftrag.collector import freeze_startup_objects
from driftrag.errors import InvalidIdentifierError, KnowledgeBaseDeletingError
from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import InputError
from driftrag.models.identifiers import validate_job_id, validate_node_id
from driftrag.search.graph_search import GraphSearchResponse
from driftrag.search.modes import DEFAULT_MODE, MODE_NAMES, ModeName
from driftrag.search.question import check_question

log = logging.getLogger("driftrag.api")

API_PREFIX = "/api/v1"


# --- responses ------------------------------------------------------------------------------------------


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        401: "No API key, or an unknown one.",
        403: "The key may not use this knowledge base, or lacks the scope.",
        404: "No such knowledge base (or document, or job).",
        409: "The route needs a language model, and the server runs offline.",
        413: "The body is over the route's limit (checked before it is read).",
        422: "Invalid input; `problems` says where.",
        429: "Too many ingestion jobs queued or running on this server. Retry after `Retry-After` seconds.",
        502: "The language model failed after its retries.",
        504: "The query ran longer than the server's query timeout.",
        503: "Neo4j is unreachable, or the graph of the kb is disabled. Retry after `Retry-After` seconds.",
    }
    # Every authenticated route goes through RequestLimits, so every one can answer 413.
    statuses = tuple(sorted({*statuses, 413})) if 401 in statuses else statuses
    responses: dict[int | str, dict[str, Any]] = {
        status: {"model": ErrorBody, "description": descriptions[status]} for status in statuses
    }
    for status in (429, 503):
        if status in responses:
            responses[status]["headers"] = {
                "Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}
            }
    return responses


def _json(model: Any) -> Response:
    # Serialised once: the response model is for the OpenAPI document; re-validating a 2000-row answer costs.
    return Response(content=model.model_dump_json(), media_type="application/json")


# --- routes ---------------------------------------------------------------------------------------------

router = APIRouter(prefix=API_PREFIX)


async def _system(backend: Backend, keys: ApiKeys) -> SystemInfo:
    info = await backend.probe()
    return SystemInfo(
        version=__version__,
        graph_engine="Neo4j" if info is not None else "Not Enabled",
        graph_engine_version=info.version if info is not None else None,
        model_mode=backend.rag.mode,  # type: ignore[arg-type]
        auth="none" if keys.insecure else "api-key",
    )


@router.get(
    "/system",
    response_model=SystemInfo,
    tags=["system"],
    summary="Version, graph engine and model mode",
    responses=_errors(401),
)
async def system(backend: BackendDep, keys: KeysDep, _: PrincipalDep) -> SystemInfo:
    """`graph_engine` is "Neo4j" when the server answers now and "Not Enabled" when it cannot be reached."""
    return await _system(backend, keys)


@router.post(
    "/knowledge-bases/{kb}/graph-search",
    response_model=GraphSearchResponse,
    tags=["search"],
    summary="Bounded one-hop graph search",
    responses=_errors(401, 403, 404, 422, 503),
)
async def graph_search(kb: ReadKb, body: GraphSearchBody, backend: BackendDep) -> Response:
    """Entities whose name contains `query` (case-sensitive) and their one-hop neighbourhoods.

    Read-only, no model call. Seeds: exact match first, then shorter names, then alphabetical, at most
    `max_seeds`; rows cut at `max_rows` keeping the best seeds' neighbourhoods. Entities and relationships
    whose source chunks were all deleted or disabled are left out. `truncation` says what was cut.
    A kb without any match answers 200 with empty lists; an unreachable Neo4j or a disabled graph, 503.
    """
    await backend.ready()
    result = await backend.rag.graph_search(kb, body.query, max_seeds=body.max_seeds, max_rows=body.max_rows)
    return _json(result)


@router.post(
    "/knowledge-bases/{kb}/query",
    response_model=QueryResponse,
    tags=["search"],
    summary="Answer a question (drift, global, local, entity or basic)",
    responses=_errors(401, 403, 404, 422, 502, 503, 504),
)
async def query(kb: ReadKb, body: QueryBody, backend: BackendDep) -> Response:
    """The answer, DRIFT's intermediate answers, and every source (id, kind, title, text) it used.

    In the offline mode answers are extractive and say so in their first line. `drift`, `global`,
    `local` and `entity` read the graph, so they answer 503 when the kb's graph is disabled; `basic` does
    not. `community_level` applies to `global` only (422 with another mode, or a level the kb lacks).
    A model answer a step cannot use is not an error: `degraded` says what was tolerated or replaced.
    """
    await backend.ready()
    # The search layer refuses an unknown kb (404) and, for the graph modes, a disabled graph (503).
    result = await backend.rag.query(kb, body.question, mode=body.mode, community_level=body.community_level)
    return _json(QueryResponse.from_result(result))


_STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "`text/event-stream`: `progress` events, then the answer's `delta`s (a `reset` voids "
        "the text so far), then `result` (the JSON of `POST …/query`); a failure after the start is an "
        "`error` event with the status the unstreamed route would answer. Every event has an `id` (1, 2, …); "
        "a comment line (`: ping …`) keeps an idle stream open every `DRIFTRAG_API_SSE_PING_S` seconds.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    204: {"description": "A reconnecting EventSource (`Last-Event-ID` sent): a stream is not resumed."},
    **_errors(401, 403, 404, 422, 502, 503, 504),
}


async def _query_stream(
    request: Request, backend: Backend, kb: str, question: str, mode: str, community_level: int | None
) -> Response:
    if "last-event-id" in request.headers:
        # EventSource reconnects by itself once a stream ends; asking the question again is not what it means.
        return Response(status_code=204)
    await backend.ready()
    check_question(question, backend.rag.settings)
    events = await opened(backend.rag.stream(kb, question, mode=mode, community_level=community_level))
    return event_stream(query_frames(events), ping_s=backend.rag.settings.api_sse_ping_s)


@router.post(
    "/knowledge-bases/{kb}/query/stream",
    tags=["search"],
    summary="Answer a question, streamed as Server-Sent Events",
    response_class=EventSourceResponse,
    responses=_STREAM_RESPONSES,
)
async def query_stream(request: Request, kb: ReadKb, body: QueryBody, backend: BackendDep) -> Response:
    """`query`, with the final answer streamed as the model writes it (offline: statement by statement).

    The deltas since the last `reset`, joined, equal the `answer` of the `result` event.
    """
    return await _query_stream(request, backend, kb, body.question, body.mode, body.community_level)


@router.get(
    "/knowledge-bases/{kb}/query/stream",
    tags=["search"],
    summary="Answer a question, streamed as Server-Sent Events (the EventSource form)",
    response_class=EventSourceResponse,
    responses=_STREAM_RESPONSES,
)
async def query_stream_get(
    request: Request,
    kb: ReadKbFromUrl,
    backend: BackendDep,
    question: Annotated[str, Query(min_length=1, max_length=MAX_QUESTION_CHARS)],
    mode: Annotated[ModeName, Query(description=f"One of: {', '.join(MODE_NAMES)}.")] = DEFAULT_MODE,
    community_level: Annotated[int | None, Query(ge=0, description="Global search only.")] = None,
) -> Response:
    """`POST …/query/stream` with the question in the URL, for a browser's `EventSource` (which sends GET
    and no body). The key comes in a header as everywhere, or, on a server started with
    `DRIFTRAG_API_ALLOW_QUERY_KEY=true`, as `?api_key=` (EventSource cannot send headers; the server's
    access log redacts it). Close the EventSource on `result` or `error`: a stream is not resumed.
    """
    return await _query_stream(request, backend, kb, question, mode, community_level)


@router.get(
    "/knowledge-bases",
    response_model=KbListResponse,
    tags=["knowledge bases"],
    summary="The knowledge bases, with counts, mode, embedder and dimension",
    responses=_errors(401, 403, 503),
)
async def list_knowledge_bases(backend: BackendDep, principal: PrincipalDep) -> KbListResponse:
    """Only the kbs the key may use. `mode`, `embedder` and `embedding_dimension` are those of the kb's last
    ingestion that changed something (None for a kb last ingested before driftrag recorded them)."""
    if not principal.has_scope("read"):
        raise ApiError(403, "forbidden", f"the API key {principal.name!r} lacks the 'read' scope")
    await backend.ready()
    summaries = await backend.rag.knowledge_bases()
    return KbListResponse(knowledge_bases=[summary for summary in summaries if principal.may_use(summary.kb)])


@router.get(
    "/knowledge-bases/{kb}/stats",
    response_model=StatsResponse,
    tags=["knowledge bases"],
    summary="Counts of a knowledge base",
    responses=_errors(401, 403, 404, 422, 503),
)
async def stats(kb: ReadKb, backend: BackendDep) -> StatsResponse:
    await backend.ready()
    rag = backend.rag
    status = await rag.status(kb)  # 404 for an unknown kb or one being deleted
    counts, failed_chunks = await rag.stats(kb), await rag.failed_chunks(kb)
    status = await rag.status(kb)  # and a 404, not a half-deleted count, when its delete started meanwhile
    return StatsResponse(
        kb=kb,
        graph_enabled=status.graph_enabled,
        stale=status.stale,
        incomplete=counts.incomplete,
        counts=counts,
        failed_chunks=failed_chunks,
    )


def _job_location(job: IngestJob) -> str:
    return f"{API_PREFIX}/knowledge-bases/{job.kb}/jobs/{job.id}"


@router.post(
    "/knowledge-bases/{kb}/documents",
    response_model=IngestJob,
    status_code=202,
    tags=["knowledge bases"],
    summary="Ingest texts as a job (manage)",
    responses={
        **_errors(401, 403, 422, 429, 503),
        202: {
            "description": "Accepted: the job, queued. Poll the URL in `Location` until its state is final.",
            "headers": {"Location": {"description": "The job's URL.", "schema": {"type": "string"}}},
        },
    },
)
async def ingest(kb: ManageKb, body: IngestBody, backend: BackendDep) -> Response:
    """Start an ingestion job and answer at once (202) with it; the kb is created if new.

    The job (chunk, extract, merge, cluster, report, embed) runs in the server, not in the request: a
    client that disconnects does not stop it. `GET …/jobs/{job_id}` gives its state (queued, running,
    succeeded, failed), the progress of each stage, and at the end the kb's counts and the
    failed chunks. Jobs of one kb run one after the other: a second one stays queued, `waiting_for`
    naming the first. Jobs are recorded in Neo4j beside the kb: their GET answers in any server and
    across restarts, and a job whose server stopped is resumed by the next one (the work done is
    checkpointed per chunk, so nothing is done twice). A text already ingested under the same title is
    left as is; a changed text replaces its older version.
    """
    rag = backend.rag
    max_bytes = int(rag.settings.max_file_mb * 1024 * 1024)
    too_big = [f"texts[{i}]" for i, doc in enumerate(body.texts) if len(doc.text.encode("utf-8")) > max_bytes]
    if too_big:
        # Positions, not titles: a 422 does not echo the caller's input.
        raise InputError(f"texts larger than {rag.settings.max_file_mb:g} MiB: {', '.join(too_big[:5])}")
    return await _submit(backend, kb, {doc.title: doc.text for doc in body.texts})


@router.post(
    "/knowledge-bases/{kb}/documents/files",
    response_model=IngestJob,
    status_code=202,
    tags=["knowledge bases"],
    summary="Ingest uploaded files as a job (manage): PDF, DOCX, HTML, EPUB, text, markdown",
    responses={
        **_errors(401, 403, 422, 429, 503),
        202: {
            "description": "Accepted: the job, queued. Poll the URL in `Location` until its state is final.",
            "headers": {"Location": {"description": "The job's URL.", "schema": {"type": "string"}}},
        },
    },
)
async def ingest_files(
    request: Request,
    kb: ManageKb,
    files: Annotated[
        list[UploadFile],
        File(description="The files, one `files` part each; the suffix of each name picks its reader."),
    ],
    backend: BackendDep,
) -> Response:
    """Start an ingestion job of uploaded files (`multipart/form-data`), as `POST …/documents` does of texts.

    Each file is read here, before the job is accepted, by the loaders `driftrag ingest` uses: PDF
    (pages kept, a page without a text layer read by OCR when the server has it, else skipped and named
    in the job's warnings), DOCX (headings and tables), HTML, EPUB (chapters), text and markdown. A file
    that cannot be read, is over `max_file_mb` or is a zip over the caps is a 422 naming it by its place
    (`files[0]`), and nothing is queued. A file is titled by its base name; the same name again with
    the same text is left as is, with a changed text it replaces its older version. PDF, DOCX, EPUB and
    HTML files are read in the server's parse workers, each within `parse_timeout_s`; a client that goes
    away stops the reading of its files.
    """
    rag = backend.rag
    try:
        texts = await until_disconnected(request, read_uploads(files, kb, rag.settings, rag.parsers))
    except ClientGone:
        log.info("an upload to %s was abandoned by its client; its reading was stopped", kb)
        return Response(status_code=499)  # nobody reads it: the connection is closed
    return await _submit(backend, kb, dict(texts))


async def _submit(backend: Backend, kb: str, texts: JobTexts) -> Response:
    await backend.ready()
    try:
        job = await backend.jobs.submit(kb, texts)
    except TooManyJobsError as exc:
        raise ApiError(429, "too_many_jobs", str(exc), {"Retry-After": str(RETRY_AFTER_UNAVAILABLE_S)}) from None
    return Response(
        content=job.model_dump_json(),
        status_code=202,
        media_type="application/json",
        headers={"Location": _job_location(job)},
    )


JobIdPath = Annotated[
    str, PathParam(description="A job id (job-…).", json_schema_extra={"pattern": JOB_ID_PATTERN.pattern})
]


@router.get(
    "/knowledge-bases/{kb}/jobs/{job_id}",
    response_model=IngestJob,
    tags=["knowledge bases"],
    summary="An ingestion job: state, stage progress, counts, failed chunks",
    responses=_errors(401, 403, 404, 422, 503),
)
async def get_job(kb: ReadKb, job_id: JobIdPath, backend: BackendDep) -> Response:
    """404 `job_not_found` for a job the kb does not have (never posted, pruned, or its kb deleted)."""
    job = await backend.jobs.get(kb, validate_job_id(job_id))
    if job is None:
        raise ApiError(
            404,
            "job_not_found",
            f"no job {job_id!r} for knowledge base {kb!r} (the last 200 finished jobs of a kb are kept, "
            "and deleting the kb deletes them)",
        )
    return _json(job)


@router.get(
    "/knowledge-bases/{kb}/jobs",
    response_model=JobList,
    tags=["knowledge bases"],
    summary="The ingestion jobs of a knowledge base, newest first",
    responses=_errors(401, 403, 422, 503),
)
async def list_jobs(kb: ReadKb, backend: BackendDep) -> Response:
    """The kb's jobs, in any server (the last 200 finished ones and every unfinished one)."""
    return _json(JobList(kb=kb, jobs=await backend.jobs.of_kb(kb)))


@router.delete(
    "/knowledge-bases/{kb}/documents/{document_id}",
    response_model=DeleteDocumentResponse,
    tags=["knowledge bases"],
    summary="Delete a document (manage)",
    responses=_errors(401, 403, 404, 422, 502, 503),
)
async def delete_document(
    kb: ManageKb,
    document_id: Annotated[str, PathParam(description="A document id (document-…).")],
    backend: BackendDep,
) -> DeleteDocumentResponse:
    """Its chunks go, and entities and relationships left without sources; the derived layers are rebuilt."""
    validate_node_id(document_id)
    if not document_id.startswith("document-"):
        raise InvalidIdentifierError(f"not a document id: {document_id!r}")
    await backend.ready()
    rag = backend.rag
    await rag.graph_enabled(kb)  # 404 for an unknown kb
    async with backend.write_lock(kb):
        if not any(row["id"] == document_id for row in await rag.documents(kb)):
            raise ApiError(404, "document_not_found", f"no document {document_id!r} in knowledge base {kb!r}")
        counts = await rag.delete_document(kb, document_id)
    return DeleteDocumentResponse(kb=kb, document_id=document_id, counts=counts)


@router.delete(
    "/knowledge-bases/{kb}",
    response_model=DeleteKbResponse,
    tags=["knowledge bases"],
    summary="Delete a knowledge base (manage)",
    responses=_errors(401, 403, 404, 422, 503),
)
async def delete_kb(kb: ManageKb, backend: BackendDep) -> DeleteKbResponse:
    """Readers get 404 `kb_not_found` from the moment the delete starts (the kb is marked first, then
    deleted in batches), never an empty answer. A kb whose earlier delete was interrupted is deleted."""
    await backend.ready()
    rag = backend.rag
    try:
        await rag.graph_enabled(kb)  # 404 for an unknown kb
    except KnowledgeBaseDeletingError:
        pass  # its earlier delete stopped half-way: this one finishes it
    async with backend.write_lock(kb):
        await rag.delete_kb(kb)
    return DeleteKbResponse(kb=kb)


@router.post(
    "/knowledge-bases/{kb}/repair",
    response_model=RepairResponse,
    tags=["knowledge bases"],
    summary="Ask again for what the model failed on (manage)",
    responses=_errors(401, 403, 404, 422, 502, 503),
)
async def repair(kb: ManageKb, backend: BackendDep) -> RepairResponse:
    """Chunks whose extraction failed, and summaries and reports that are placeholders, are asked for again
    (each once, with the usual retries), and what they change is rebuilt; the answer says what was
    retried and what remains. Runs to its end before it answers (as a document delete)."""
    await backend.ready()
    rag = backend.rag
    await rag.graph_enabled(kb)  # 404 for an unknown kb
    async with backend.write_lock(kb):
        result = await rag.repair(kb)
    return RepairResponse(
        kb=kb,
        retried=result.before,
        remaining=result.after,
        stale=result.stale_after,
        complete=result.complete,
        failed_chunks=result.failed_chunks,
    )


async def _switch_chunks(backend: Backend, kb: str, body: ChunkIdsBody, enabled: bool) -> ChunkSwitchResponse:
    await backend.ready()
    matched = await backend.rag.set_chunks_enabled(kb, body.chunk_ids, enabled)
    return ChunkSwitchResponse(kb=kb, enabled=enabled, requested=len(set(body.chunk_ids)), matched=matched)


@router.post(
    "/knowledge-bases/{kb}/chunks/disable",
    response_model=ChunkSwitchResponse,
    tags=["knowledge bases"],
    summary="Disable chunks as sources (manage)",
    responses=_errors(401, 403, 404, 422, 503),
)
async def disable_chunks(kb: ManageKb, body: ChunkIdsBody, backend: BackendDep) -> ChunkSwitchResponse:
    """Searches stop counting them as sources: entities and relationships left without any are not returned."""
    return await _switch_chunks(backend, kb, body, False)


@router.post(
    "/knowledge-bases/{kb}/chunks/enable",
    response_model=ChunkSwitchResponse,
    tags=["knowledge bases"],
    summary="Enable chunks again (manage)",
    responses=_errors(401, 403, 404, 422, 503),
)
async def enable_chunks(kb: ManageKb, body: ChunkIdsBody, backend: BackendDep) -> ChunkSwitchResponse:
    return await _switch_chunks(backend, kb, body, True)


@router.put(
    "/knowledge-bases/{kb}/graph",
    response_model=GraphSwitchResponse,
    tags=["knowledge bases"],
    summary="Enable or disable the graph of a knowledge base (manage)",
    responses=_errors(401, 403, 404, 422, 503),
)
async def switch_graph(kb: ManageKb, body: GraphSwitchBody, backend: BackendDep) -> GraphSwitchResponse:
    """A disabled graph makes graph search and the graph-based query modes answer 503."""
    await backend.ready()
    await backend.rag.set_graph_enabled(kb, body.enabled)
    return GraphSwitchResponse(kb=kb, graph_enabled=body.enabled)


# --- the application ---------------------------------------------------------------------------------------


def create_app(rag: DriftRAG, keys: ApiKeys, *, manage_lifecycle: bool = True, owns_process: bool = False) -> FastAPI:
    """The API over `rag`. No I/O here; with `manage_lifecycle` the lifespan connects and closes `rag`.

    `owns_process` (the server's own worker processes): once started, everything alive is frozen out of
    the cyclic collector's reach (`freeze_startup_objects`), which an app embedded in another process
    (tests, notebooks) must not do to its host.
    """
    backend = Backend(rag)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_lifecycle:
            await backend.start()
        backend.jobs.start()  # and take over the jobs a stopped server left
        if owns_process:
            freeze_startup_objects()  # full collections no longer walk what lives as long as the server
        try:
            yield
        finally:
            await backend.jobs.close()  # jobs handed back, kb locks released, before the driver closes
            if manage_lifecycle:
                await rag.close()

    # The docs page serves Swagger UI from the installed package, not from a CDN: it works offline.
    app = FastAPIOffline(
        title="driftrag",
        version=__version__,
        description=(
            "GraphRAG on Neo4j: the bounded one-hop graph search, queries (DRIFT, global, local, entity, basic) "
            "and knowledge-base management, and an OpenAI-compatible chat endpoint (`/v1/chat/completions`, "
            "`/v1/models`: the model `kb:mode` picks the kb and the query mode). Authenticate with an API key "
            "(`Authorization: Bearer <key>` or `X-API-Key`); `read` keys search and query, `manage` keys also "
            "ingest, delete, switch and configure extraction."
        ),
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
        static_url=DOCS_STATIC_PREFIX,
        lifespan=lifespan,
        # Operation ids are the handler names (`graph_search`, `query`…), which client generators turn into methods.
        generate_unique_id_function=lambda route: route.name,
    )
    app.state.backend = backend
    app.state.keys = keys
    install_error_handlers(app)
    settings = rag.settings
    app.add_middleware(
        RequestLimits,
        keys=keys,
        max_body_bytes=settings.api_max_body_kb * 1024,
        max_ingest_body_bytes=int(settings.api_max_ingest_body_mb * 1024 * 1024),
        allow_query_key=settings.api_allow_query_key,
    )
    app.include_router(router)
    app.include_router(openai_router)
    # Imported here: the extraction-config routes use this module's route helpers.
    from driftrag.api.extract_routes import router as extract_router

    app.include_router(extract_router)

    @app.get("/system", include_in_schema=False)
    async def system_alias(keys: KeysDep, _: PrincipalDep) -> SystemInfo:
        return await _system(backend, keys)

    return app


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the app; it depends on the code only, not on settings or keys."""
    from driftrag.settings import Settings

    rag = DriftRAG(Settings(_env_file=None, llm_provider="offline"))  # no I/O: the driver connects lazily
    try:
        return create_app(rag, ApiKeys.insecure_no_auth()).openapi()
    finally:
        asyncio.run(rag.close())


def render_openapi() -> str:
    """The committed `docs/openapi.json`, byte for byte."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


__all__ = ["Backend", "create_app", "openapi_document", "render_openapi"]
