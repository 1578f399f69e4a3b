"""The OpenAI-compatible routes: chat frontends (Open WebUI, LibreChat) and the `openai` client ask a kb.

    POST /v1/chat/completions   {"model": "alice:drift", "messages": [...], "stream": true}
    GET  /v1/models             the `kb:mode` ids the key may read

The model name picks the kb and the query mode (`alice:local`; `alice` alone is the default mode). The
question is the text of the last `user` message; earlier turns and system prompts are not used (a kb
query answers one question, with the engine's own prompts). The answer's content is the query's answer
followed by a compact list of the sources it cites (`- [chunk-…] chunk: Title, p. 3`), and the body
carries those sources in full as `sources`, and the answer's flags as `driftrag` (`degraded`, `ungrounded`,
`degenerate`, `extractive`, and the degradations themselves; neither is in OpenAI's schema, clients
ignore them). `usage` counts
the model tokens of the whole query, every call it made (0 offline).

Streamed, the content arrives as the query writes its answer (offline: statement by statement), then
the sources list, then a chunk with `finish_reason`, `sources` and `driftrag`, then (with
`stream_options.include_usage`) one with `usage`, then `data: [DONE]`. A re-asked model voids the text
so far in the native stream (`reset`); a chat stream cannot take text back, so it says so in the text.
A failure after the start is a last `data: {"error": …}` event, which the `openai` client raises.
Keys and scopes are the rest of the API's (`read` is enough); a kb the key may not use is "not found".
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter
from fastapi import Path as PathParam
from fastapi.responses import Response
from sse_starlette import ServerSentEvent

from driftrag.api.auth import Principal
from driftrag.api.backend import Backend
from driftrag.api.dependencies import BackendDep, PrincipalDep
from driftrag.api.errors import OPENAI_PREFIX, ApiError, openai_error
from driftrag.api.openai_models import (
    AnswerQuality,
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatMessage,
    Choice,
    ChunkChoice,
    Delta,
    ModelCard,
    ModelList,
    OpenAIErrorBody,
    Usage,
)
from driftrag.api.sse import event_stream, opened, stream_error
from driftrag.errors import KnowledgeBaseNotFoundError
from driftrag.models.identifiers import KB_ID_PATTERN
from driftrag.models.search import Source
from driftrag.search.models import QueryResult
from driftrag.search.modes import DEFAULT_MODE, MODE_NAMES, MODES
from driftrag.search.question import check_question
from driftrag.search.streaming import AnswerDelta, AnswerReset, QueryFinished, StreamEvent

MODE_SEPARATOR = ":"

router = APIRouter(prefix=OPENAI_PREFIX, tags=["openai-compatible"])


def _openai_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        400: "Invalid request (no user message, a blank or too long question, a malformed body).",
        401: "No API key, or an unknown one.",
        404: "`model_not_found`: no such kb, a kb the key may not read, or an unknown mode.",
        413: "The body is over the route's limit (checked before it is read).",
        502: "The language model failed after its retries.",
        503: "Neo4j is unreachable, or the graph of the kb is disabled. Retry after `Retry-After` seconds.",
        504: "The query ran longer than the server's query timeout.",
    }
    return {status: {"model": OpenAIErrorBody, "description": descriptions[status]} for status in statuses}


# --- models ---------------------------------------------------------------------------------------------


def model_id(kb: str, mode: str) -> str:
    return f"{kb}{MODE_SEPARATOR}{mode}"


def _not_found(model: str) -> ApiError:
    return ApiError(
        404,
        "model_not_found",
        f"The model {model!r} does not exist or you do not have access to it; GET /v1/models lists them.",
    )


def resolve_model(model: str, principal: Principal) -> tuple[str, str]:
    """The kb and mode `model` names (`kb:mode`, or `kb` for the default mode), if the key may read the kb.

    A kb the key may not use is "not found", as OpenAI answers for a model the key cannot see."""
    kb, separator, mode = model.partition(MODE_SEPARATOR)
    if not KB_ID_PATTERN.fullmatch(kb) or not principal.has_scope("read") or not principal.may_use(kb):
        raise _not_found(model)
    if not separator:
        mode = DEFAULT_MODE
    if mode not in MODES:
        raise ApiError(
            404,
            "model_not_found",
            f"The model {model!r} names no query mode driftrag has: use {kb}:<mode> with a mode of "
            f"{', '.join(MODE_NAMES)} (or {kb} alone for {DEFAULT_MODE}).",
        )
    return kb, mode


async def _readable_kbs(backend: Backend, principal: Principal) -> list[str]:
    if not principal.has_scope("read"):
        return []
    await backend.ready()
    return sorted(summary.kb for summary in await backend.rag.knowledge_bases() if principal.may_use(summary.kb))


@router.get(
    "/models",
    response_model=ModelList,
    summary="The `kb:mode` models the key may read (OpenAI-compatible)",
    responses=_openai_errors(401, 503),
)
async def list_models(backend: BackendDep, principal: PrincipalDep) -> ModelList:
    """One model per kb the key may read and query mode, kb by kb in name order."""
    kbs = await _readable_kbs(backend, principal)
    return ModelList(data=[ModelCard(id=model_id(kb, mode)) for kb in kbs for mode in MODE_NAMES])


@router.get(
    "/models/{model}",
    response_model=ModelCard,
    summary="One `kb:mode` model (OpenAI-compatible)",
    responses=_openai_errors(401, 404, 503),
)
async def get_model(
    model: Annotated[str, PathParam(max_length=200, description="`kb:mode` or `kb`.")],
    backend: BackendDep,
    principal: PrincipalDep,
) -> ModelCard:
    kb, mode = resolve_model(model, principal)
    if kb not in await _readable_kbs(backend, principal):
        raise _not_found(model)
    return ModelCard(id=model_id(kb, mode))


# --- chat completions -----------------------------------------------------------------------------------


def question_of(messages: list[ChatMessage]) -> str:
    """The text of the last user message (400 when there is none, or it has no text)."""
    for message in reversed(messages):
        if message.role == "user":
            text = message.text()
            if not text.strip():
                raise ApiError(400, "invalid_request", "the last user message has no text to ask the kb")
            return text
    raise ApiError(400, "invalid_request", "no user message: the question is the last message with role `user`")


def _source_line(source: Source) -> str:
    label = ", ".join(part for part in (source.title, source.page_label()) if part)
    return f"- [{source.id}] {source.kind}" + (f": {label}" if label else "")


def sources_block(result: QueryResult) -> str:
    """The compact list of cited sources that follows the answer in the content ("" when none is cited)."""
    cited = result.cited_sources()
    if not cited:
        return ""
    return "\n\nSources:\n" + "\n".join(_source_line(source) for source in cited)


def usage_of(result: QueryResult) -> Usage:
    return Usage(
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        total_tokens=result.prompt_tokens + result.completion_tokens,
    )


def _completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


def completion_of(result: QueryResult, model: str) -> ChatCompletion:
    return ChatCompletion(
        id=_completion_id(),
        created=int(time.time()),
        model=model,
        choices=[Choice(message=AssistantMessage(content=result.answer + sources_block(result)))],
        usage=usage_of(result),
        sources=result.cited_sources(),
        driftrag=AnswerQuality.of(result),
    )


async def completion_frames(
    events: AsyncGenerator[StreamEvent, None], model: str, *, include_usage: bool
) -> AsyncIterator[ServerSentEvent]:
    """The `chat.completion.chunk` events of a streamed query, then `[DONE]`; a failure, an error event."""
    completion_id, created = _completion_id(), int(time.time())

    def chunk(**fields: Any) -> ServerSentEvent:
        body = ChatCompletionChunk(id=completion_id, created=created, model=model, **fields)
        return ServerSentEvent(body.model_dump_json(exclude_none=True), sep="\n")

    def text(content: str) -> ServerSentEvent:
        return chunk(choices=[ChunkChoice(delta=Delta(content=content))])

    try:
        yield chunk(choices=[ChunkChoice(delta=Delta(role="assistant", content=""))])
        async for event in events:
            if isinstance(event, AnswerDelta):
                yield text(event.text)
            elif isinstance(event, AnswerReset):
                yield text(f"\n\n[{event.reason}: the answer starts again]\n\n")
            elif isinstance(event, QueryFinished):
                result = event.result
                if block := sources_block(result):
                    yield text(block)
                finish = ChunkChoice(delta=Delta(), finish_reason="stop")
                yield chunk(choices=[finish], sources=result.cited_sources(), driftrag=AnswerQuality.of(result))
                if include_usage:
                    yield chunk(choices=[], usage=usage_of(result))
        yield ServerSentEvent("[DONE]", sep="\n")
    except Exception as exc:  # under way: the failure is the last event, as OpenAI sends one
        failure = stream_error(exc)
        code = "model_not_found" if failure.code == "kb_not_found" else failure.code
        yield ServerSentEvent(openai_error(failure.status, code, failure.detail).model_dump_json(), sep="\n")
    finally:
        await events.aclose()


@router.post(
    "/chat/completions",
    response_model=ChatCompletion,
    summary="Ask a kb, in OpenAI's chat-completions shape (streamed with `stream: true`)",
    responses={
        200: {
            "description": "`application/json`: a `chat.completion`; with `stream: true`, `text/event-stream` "
            "of `chat.completion.chunk`s ending with `data: [DONE]`.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **_openai_errors(400, 401, 404, 413, 502, 503, 504),
    },
)
async def chat_completions(body: ChatCompletionRequest, backend: BackendDep, principal: PrincipalDep) -> Response:
    """The last user message, asked of the kb the model names in the mode it names; the answer and its
    cited sources. Sampling fields (`temperature`, `max_tokens`…) are accepted and ignored."""
    kb, mode = resolve_model(body.model, principal)
    question = question_of(body.messages)
    await backend.ready()
    rag = backend.rag
    check_question(question, rag.settings)
    try:
        if body.stream:
            events = await opened(rag.stream(kb, question, mode=mode))
        else:
            result = await rag.query(kb, question, mode=mode)
    except KnowledgeBaseNotFoundError:
        raise _not_found(body.model) from None
    if body.stream:
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        frames = completion_frames(events, body.model, include_usage=include_usage)
        return event_stream(frames, ping_s=rag.settings.api_sse_ping_s)
    return Response(content=completion_of(result, body.model).model_dump_json(), media_type="application/json")


__all__ = ["model_id", "resolve_model", "router"]
