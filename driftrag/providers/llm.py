"""Chat model access: any LlamaIndex `LLM` for the model, `ModelClient` for what it lacks.

`ModelClient` adds the response cache, a per-instance concurrency limit, usage accounting and one
error type (`ModelError`), and streams (`stream_chat`, over the LLM's `astream_chat`). Retries with
backoff and 429 Retry-After stay with the LLM's client; an unreadable 200 body is asked again here
(`driftrag.providers.unusable`), as often as a 500 would be.

Per-call options (`max_tokens`, `temperature`, `response_format`, `stream_options` for the usage of a
stream) are OpenAI's request fields, so they are sent only to LlamaIndex's OpenAI classes (`OpenAI`,
`OpenAILike`, `AzureOpenAI`…: llama.cpp's server, vLLM, LM Studio, Ollama's /v1 speak the same protocol).
Ollama's own class gets a JSON answer's format as `format`. Any other LLM (Anthropic, a `CustomLLM`) is
called with the messages alone: its own fields set its temperature, output cap and JSON mode, and JSON
answers rely on the prompt's key description and the repair re-ask (`driftrag.providers.json_answer`).

A JSON answer's format is asked at the level of the `llm_structured` setting: `json_schema` (the
answer model's strict schema, `driftrag.providers.structured`), `json_object` (JSON mode) or `off`.
With `auto`, a server that refuses a level (HTTP 400 naming `response_format` or `json_schema`) gets the
same call again one level lower, and the client keeps that level for the model from then on.

With a known context window (`context_window`: configured, the LLM's metadata, or the server's report,
`driftrag.providers.window`) each call's `max_tokens` is lowered to what the prompt leaves, and a prompt
that leaves no room is refused before it is sent (`PromptTooLongError`). Reasoning models are asked not
to think where the server accepts it, and their thinking is counted apart (`driftrag.providers.thinking`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import httpx
import openai
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata, MessageRole
from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW
from llama_index.core.llms import LLM
from llama_index.llms.openai import OpenAI
from llama_index.llms.openai.utils import to_openai_message_dicts
from pydantic import BaseModel, ConfigDict, Field

from driftrag.errors import ModelError, PromptTooLongError
from driftrag.providers.cache import CachedResponse, ResponseCache, cache_key
from driftrag.providers.chat import DeltaSink
from driftrag.providers.http_clients import openai_http_client
from driftrag.providers.limits import CallLimits, within_slots
from driftrag.providers.loops import LoopWatch
from driftrag.providers.structured import StructuredLevels, format_kwargs, refuses_format, strict_schema
from driftrag.providers.thinking import ThinkingFilter, is_openai_host, no_thinking_request, split_thinking
from driftrag.providers.tokens import count_tokens, tokenizer
from driftrag.providers.unusable import is_unusable_response, retry_unusable
from driftrag.providers.usage import UsageTracker
from driftrag.providers.window import MIN_OUTPUT_TOKENS, ServerReport, metadata_window, probe_server, server_tokens
from driftrag.settings import Settings

log = logging.getLogger(__name__)

# Per-message framing tokens of the chat format, used only when a provider reports no usage.
_MESSAGE_OVERHEAD_TOKENS = 4
# Room an uncapped call is left with before a cap is sent to fit the window (OpenAI refuses a
# `max_tokens` above a model's own output limit, 16,384 for gpt-4o-mini).
UNCAPPED_ROOM_TOKENS = 16_384
# Status codes the openai client retries (besides connection errors and timeouts).
_RETRIED_STATUS = frozenset({408, 409, 429})


class ClientRetryOpenAI(OpenAI):
    """llama-index's OpenAI LLM with single-layer retries and tolerance of unknown model names.

    The stock class wraps the openai client (which retries) in a tenacity retry with the same count,
    so failures multiply; here the tenacity layer is off (`max_retries=0`) and the client retries
    `client_max_retries` times. Model names it does not know (vLLM, Ollama) get generic metadata.
    """

    client_max_retries: int = Field(default=3, ge=0, description="Retries done by the openai client.")

    @classmethod
    def class_name(cls) -> str:
        return "ClientRetryOpenAI"

    def _get_credential_kwargs(self, is_async: bool = False) -> dict[str, Any]:
        kwargs = {**super()._get_credential_kwargs(is_async=is_async), "max_retries": self.client_max_retries}
        if kwargs.get("http_client") is None:  # none given: one on the process's TLS context (http_clients.py)
            kwargs["http_client"] = openai_http_client(is_async=is_async)
        return kwargs

    @property
    def metadata(self) -> LLMMetadata:
        try:
            return super().metadata
        except ValueError:
            return LLMMetadata(
                context_window=DEFAULT_CONTEXT_WINDOW,
                num_output=self.max_tokens or -1,
                is_chat_model=True,
                is_function_calling_model=True,
                model_name=self.model,
            )


def openai_llm(settings: Settings) -> ClientRetryOpenAI:
    """The OpenAI chat model of `settings`; building it does no network I/O."""
    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return ClientRetryOpenAI(
        model=settings.llm_model,
        api_key=api_key,
        api_base=settings.openai_base_url,
        temperature=settings.llm_temperature,
        timeout=settings.llm_timeout_s,
        max_retries=0,
        client_max_retries=settings.llm_max_retries,
    )


class ChatResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


class ModelClient:
    """Cache, concurrency limit, accounting and error mapping around one LlamaIndex `LLM`."""

    def __init__(
        self,
        llm: LLM,
        *,
        provider: str,
        model: str,
        usage: UsageTracker,
        cache: ResponseCache | None = None,
        concurrency: int = 8,
        base_url: str | None = None,
        max_retries: int = 0,
        timeout_s: float | None = None,
        concurrency_source: str = "given",
        timeout_source: str = "given",
        follow_server_slots: bool = False,
        structured: str = "auto",
        context_window: int | None = None,
        disable_thinking: bool = False,
        stop_loops: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.llm = llm
        self.provider = provider
        self.model = model
        self.usage = usage
        self.cache = cache
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        # OpenAI's request fields are only understood by the OpenAI classes (see the module docstring);
        # Ollama's own class is known by name, its package being optional.
        self.openai_protocol = isinstance(llm, OpenAI)
        self.ollama_format = type(llm).__name__ == "Ollama"
        self.structured = StructuredLevels(structured, can_send=self.openai_protocol or self.ollama_format)
        self._limit = asyncio.Semaphore(concurrency)
        self._concurrency, self._concurrency_source = concurrency, concurrency_source
        self._timeout_source = timeout_source
        # Lowered to the slots the server reports, once, before the first call takes a place.
        self._follow_server_slots = follow_server_slots
        self._report: ServerReport | None = None
        self._report_lock = asyncio.Lock()
        self._tokenizer: Callable[[str], list[int]] | None = None
        # The window: configured, or found once at first need (`context_window`).
        self._window = context_window
        self._window_known = context_window is not None
        self._window_lock = asyncio.Lock()
        self._no_thinking = no_thinking_request(base_url, model) if disable_thinking and self.openai_protocol else {}
        # Every call streamed and stopped when it loops (`LoopWatch`): for a small model that otherwise
        # writes one phrase to its output cap. Only over the OpenAI protocol, whose stream can be closed.
        self.stop_loops = stop_loops and self.openai_protocol

    async def context_window(self) -> int | None:
        """The model's context window in tokens, or None when nothing tells it: the configured one, the
        LLM's metadata for a known model, or the server's own report, asked once."""
        if self._window_known:
            return self._window
        async with self._window_lock:
            if not self._window_known:
                window = metadata_window(self.llm)
                if window is None:
                    window = (await self._server_report()).window
                self._window, self._window_known = window, True
        return self._window

    async def call_limits(self) -> CallLimits:
        """The concurrency and call time-out in force, each with where it came from; asks the server for
        its slots first when they decide the concurrency (`driftrag.providers.limits`)."""
        if self._follow_server_slots:
            await self._server_report()
        return CallLimits(
            concurrency=self._concurrency,
            concurrency_source=self._concurrency_source,
            timeout_s=self.timeout_s,
            timeout_source=self._timeout_source,
        )

    async def _server_report(self) -> ServerReport:
        """What the model's server says of itself, asked once (OpenAI's own API says nothing: its models are
        known to the metadata, or unknown); the concurrency follows its slots when it is to."""
        if self._report is not None:
            return self._report
        async with self._report_lock:
            if self._report is None:
                base_url = self.base_url
                report = ServerReport()
                if self.openai_protocol and base_url is not None and not is_openai_host(base_url):
                    report = await probe_server(base_url, self.model)
                    if self._follow_server_slots:
                        before = self._concurrency
                        self._concurrency, self._concurrency_source = within_slots(before, report.slots)
                        if self._concurrency != before:
                            # No call holds a place yet: every call waits for this report before taking one.
                            self._limit = asyncio.Semaphore(self._concurrency)
                self._report = report
        return self._report

    async def _fit_output(self, messages: list[ChatMessage], max_tokens: int | None) -> int | None:
        """`max_tokens` lowered so that prompt and answer fit the window (set when the window is known and
        none was asked); PromptTooLongError when the prompt leaves too little room."""
        window = await self.context_window()
        if window is None:
            return max_tokens
        # A token is at least one byte: a prompt whose bytes fit leaves the cap as it is, uncounted.
        most = server_tokens(sum(len((m.content or "").encode()) for m in messages), len(messages))
        if most + (max_tokens or UNCAPPED_ROOM_TOKENS) <= window:
            return max_tokens
        prompt = server_tokens(sum(count_tokens(m.content or "") for m in messages), len(messages))
        room = window - prompt
        if room < MIN_OUTPUT_TOKENS:
            raise PromptTooLongError(
                f"a prompt of about {prompt} tokens leaves no room for an answer in the {window}-token context "
                f"window of model {self.model!r}; it was not sent"
            )
        if max_tokens is None:
            # Uncapped, the server may write up to what is left; a cap is sent only where that is little.
            return room if room < UNCAPPED_ROOM_TOKENS else None
        return min(max_tokens, room)

    async def chat(
        self,
        messages: Sequence[ChatMessage] | Sequence[Mapping[str, str]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> ChatResult:
        """One completion; `schema` (the answer's pydantic model) makes it a JSON call asked at the
        client's structured level."""
        return await self._call(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_mode=json_mode or schema is not None,
            schema=schema,
        )

    async def stream_chat(
        self,
        messages: Sequence[ChatMessage] | Sequence[Mapping[str, str]],
        *,
        on_delta: DeltaSink,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> ChatResult:
        """`chat`, with each piece of the answer given to `on_delta` as the model writes it (`astream_chat`).

        The request and its cache entry are the same as `chat`'s, so a streamed and an unstreamed call
        get the same answer; a cached answer arrives as one piece."""
        return await self._call(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_mode=json_mode or schema is not None,
            schema=schema,
            on_delta=on_delta,
        )

    async def _call(
        self,
        messages: Sequence[ChatMessage] | Sequence[Mapping[str, str]],
        *,
        temperature: float | None,
        max_tokens: int | None,
        json_mode: bool,
        schema: type[BaseModel] | None = None,
        on_delta: DeltaSink | None = None,
    ) -> ChatResult:
        chat_messages = [_as_chat_message(m) for m in messages]
        # A JSON task's parser strips a think block itself (and says so in `degraded`); plain text is
        # stripped here, so no summary, HyDE probe or prose answer keeps one.
        strip_thinking = not json_mode
        if self._follow_server_slots:
            await self._server_report()
        max_tokens = await self._fit_output(chat_messages, max_tokens)
        if not self.openai_protocol:
            temperature = max_tokens = None  # not sent, so not part of the request's identity either
        levels = self.structured.levels(self.model, json_mode=json_mode, schema=schema is not None)

        key = None
        if self.cache is not None:
            key = self._cache_key(
                chat_messages, temperature=temperature, max_tokens=max_tokens, level=levels[0], schema=schema
            )
            hit = await self.cache.aget(key)
            if hit is not None:
                self.usage.record_cache_hit()
                if on_delta is not None:
                    await on_delta(hit.text)
                return ChatResult(**hit.model_dump(), cached=True)

        async with self._limit:
            for place, level in enumerate(levels):
                request_kwargs = self._request_kwargs(level, schema, temperature=temperature, max_tokens=max_tokens)
                try:
                    text, reported, reasoning = await self._ask(chat_messages, request_kwargs, on_delta, strip_thinking)
                    break
                except Exception as exc:  # the provider boundary: whatever it raises is a failed model call
                    if place + 1 < len(levels) and refuses_format(exc, ollama=self.ollama_format):
                        # This model's server does not take this level: remembered, asked one level lower.
                        self.structured.step_down(self.model, levels[place + 1])
                        self.usage.record_structured_fallback()
                        continue
                    self.usage.record_failure()
                    raise ModelError(self._describe_failure(exc)) from exc

        prompt_tokens, completion_tokens = reported or self._counted_usage(chat_messages, text)
        # Thinking that came despite the request is counted apart, and is no part of a plain-text answer.
        answer, thinking = split_thinking(text)
        if strip_thinking:
            text = answer
        if not reasoning:  # not reported (llama.cpp does not): the tokens of the block that came
            reasoning = len(self._encode(thinking)) if thinking else 0
        self.usage.record_chat(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=reasoning,
            structured=level if json_mode else None,
        )
        entry = CachedResponse(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        if key is not None and self.cache is not None:
            if level != levels[0]:  # kept under the request that was answered, which later calls will make
                key = self._cache_key(
                    chat_messages, temperature=temperature, max_tokens=max_tokens, level=level, schema=schema
                )
            self.cache.put_soon(key, entry)
        return ChatResult(**entry.model_dump(), cached=False)

    def _request_kwargs(
        self, level: str, schema: type[BaseModel] | None, *, temperature: float | None, max_tokens: int | None
    ) -> dict[str, Any]:
        request_kwargs: dict[str, Any] = dict(self._no_thinking)
        if self.openai_protocol:
            if temperature is not None:
                request_kwargs["temperature"] = temperature
            if max_tokens is not None:
                request_kwargs["max_tokens"] = max_tokens
        return {
            **request_kwargs,
            **format_kwargs(level, schema, ollama=self.ollama_format),
        }

    async def _ask(
        self,
        messages: list[ChatMessage],
        request_kwargs: dict[str, Any],
        on_delta: DeltaSink | None,
        strip_thinking: bool,
    ) -> tuple[str, tuple[int, int] | None, int | None]:
        """The answer's text, its reported (prompt, completion) tokens and its reported thinking tokens."""
        if on_delta is None and self.stop_loops:
            # Nothing has gone out to a reader, so an unreadable stream may be asked again like a call.
            return await retry_unusable(
                lambda: self._stream(messages, request_kwargs, None, strip_thinking=strip_thinking),
                self.max_retries,
                on_retry=self.usage.record_retry,
            )
        if on_delta is None:
            response = await retry_unusable(
                lambda: self.llm.achat(messages, **request_kwargs),
                self.max_retries,
                on_retry=self.usage.record_retry,
            )
            return response.message.content or "", _reported_usage(response), _reported_reasoning(response)
        # Not asked again once pieces went out: the query's step retry (and the stream's reset event)
        # handles a stream that breaks. A refused format fails before any piece.
        return await self._stream(messages, request_kwargs, on_delta, strip_thinking=strip_thinking)

    async def drain(self) -> None:
        """Wait until the answers given so far are in the response cache on disk (`ResponseCache.drain`)."""
        if self.cache is not None:
            await self.cache.drain()

    async def _stream(
        self,
        messages: list[ChatMessage],
        request_kwargs: dict[str, Any],
        on_delta: DeltaSink | None,
        *,
        strip_thinking: bool = True,
    ) -> tuple[str, tuple[int, int] | None, int | None]:
        """The streamed answer (given piece by piece to `on_delta` when there is one); with `stop_loops`, cut
        where it starts to loop, its stream closed so the server stops writing."""
        kwargs = dict(request_kwargs)
        if self.openai_protocol:
            # OpenAI-compatible servers report a stream's usage only in a last chunk, when asked.
            kwargs["stream_options"] = {"include_usage": True}
        pieces: list[str] = []
        reported = None
        reasoning = None
        last: ChatResponse | None = None
        # A leading think block is kept from the reader; the whole text (with it) is split after the stream.
        shown = ThinkingFilter()
        if self.stop_loops:
            chunks = self._watched(messages, kwargs)
        else:
            chunks = await self.llm.astream_chat(messages, **kwargs)
        async for chunk in chunks:
            last = chunk
            if chunk.delta:
                pieces.append(chunk.delta)
                visible = shown.feed(chunk.delta) if strip_thinking else chunk.delta
                if visible and on_delta is not None:
                    await on_delta(visible)
            reported = _reported_usage(chunk) or reported
            reasoning = _reported_reasoning(chunk) if reasoning is None else reasoning
        streamed = "".join(pieces)
        rest = shown.flush()
        if rest and on_delta is not None:
            await on_delta(rest)
        # The last chunk's message holds the whole text for LLMs that send no deltas.
        text = streamed or (last.message.content or "" if last is not None else "")
        if text and not streamed and on_delta is not None:
            await on_delta(split_thinking(text)[0] if strip_thinking else text)
        return text, reported, reasoning

    async def _watched(self, messages: list[ChatMessage], kwargs: dict[str, Any]) -> AsyncIterator[ChatResponse]:
        """The answer's pieces, from the LLM's openai client with the LLM's own request fields, until it
        ends or starts to loop (`LoopWatch`). The HTTP response is closed on leaving, so the server stops
        writing at once: the LLM's stream generator would keep it open until garbage-collected."""
        watch = LoopWatch()
        llm: Any = self.llm  # an OpenAI class (`stop_loops` needs it): its client and request fields
        ready = getattr(llm, "ready", None)
        if ready is not None:  # an LLM that starts its server on first use (the local provider's)
            await ready()
        request = llm._get_model_kwargs(stream=True, **kwargs)
        async with await llm._get_aclient().chat.completions.create(
            messages=to_openai_message_dicts(messages, model=llm.model), **request
        ) as stream:
            async for event in stream:
                delta = (event.choices[0].delta.content or "") if event.choices else ""
                usage = event.usage.model_dump() if event.usage is not None else None
                yield ChatResponse(
                    message=ChatMessage(role=MessageRole.ASSISTANT, content=None),
                    delta=delta,
                    raw={"usage": usage} if usage is not None else None,
                )
                if delta and watch.feed(delta):
                    log.info("%s: answer stopped where it loops (%s)", self.model, watch.reason)
                    self.usage.record_loop_stopped()
                    return

    def _cache_key(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float | None,
        max_tokens: int | None,
        level: str,
        schema: type[BaseModel] | None,
    ) -> str:
        # The effective temperature belongs in the key: a default changed in settings must not reuse entries.
        effective_temperature = temperature if temperature is not None else getattr(self.llm, "temperature", None)
        params: dict[str, Any] = {
            "temperature": effective_temperature,
            "max_tokens": max_tokens if max_tokens is not None else getattr(self.llm, "max_tokens", None),
            "response_format": level if level != "off" else None,
        }
        if level == "json_schema" and schema is not None:
            # Another schema is another request (the answer is constrained to it).
            params["schema"] = strict_schema(schema)
        return cache_key(
            provider=self.provider,
            model=self.model,
            messages=[{"role": m.role.value, "content": m.content or ""} for m in messages],
            params=params,
        )

    def _counted_usage(self, messages: list[ChatMessage], text: str) -> tuple[int, int]:
        """Tokens counted with the project's tokenizer, for models that report no usage."""
        prompt = sum(len(self._encode(m.content or "")) + _MESSAGE_OVERHEAD_TOKENS for m in messages)
        return prompt, len(self._encode(text))

    def _encode(self, text: str) -> list[int]:
        if self._tokenizer is None:
            self._tokenizer = tokenizer()
        return self._tokenizer(text)

    def _describe_failure(self, exc: Exception) -> str:
        # A server started on first use (the local provider) has its address on the LLM only.
        base_url = self.base_url or getattr(self.llm, "api_base", None)
        where = f"model {self.model!r} ({self.provider}) at {base_url or 'the default endpoint'}"
        attempts = self.max_retries + 1 if _is_retried(exc) or is_unusable_response(exc) else 1
        tries = f"after {attempts} attempt{'s' if attempts > 1 else ''}"
        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
            per_try = f" of {self.timeout_s:g} s each" if self.timeout_s is not None else ""
            return f"chat call to {where} timed out {tries}{per_try}"
        if isinstance(exc, openai.APIStatusError):
            status = f"HTTP {exc.status_code} {type(exc).__name__}"
            return f"chat call to {where} failed {tries}: {status}: {exc.message}"
        if isinstance(exc, openai.APIConnectionError):
            return f"chat call to {where} could not connect {tries}: {exc}"
        if isinstance(exc, openai.APIResponseValidationError | ValueError | TypeError | AttributeError):
            # A 200 whose body is not a chat completion (broken JSON, wrong shape) ends up here.
            return f"chat call to {where} returned an unusable response: {type(exc).__name__}: {exc}"
        return f"chat call to {where} failed {tries}: {type(exc).__name__}: {exc}"


def _as_chat_message(message: ChatMessage | Mapping[str, str]) -> ChatMessage:
    if isinstance(message, ChatMessage):
        return message
    unknown = set(message) - {"role", "content"}
    if unknown:
        raise ValueError(f"chat message has unknown keys {sorted(unknown)}; expected role and content")
    return ChatMessage(role=MessageRole(message["role"]), content=message["content"])


# (prompt, completion) field names of the usage reports LlamaIndex LLMs pass on in `raw`: OpenAI and
# the OpenAI-compatible servers, Anthropic, Ollama's own API.
_USAGE_FIELDS = (("prompt_tokens", "completion_tokens"), ("input_tokens", "output_tokens"))
_OLLAMA_FIELDS = ("prompt_eval_count", "eval_count")


def _reported_usage(response: ChatResponse) -> tuple[int, int] | None:
    """(prompt, completion) tokens as the provider reported them (`raw.usage`, llama-index's copy in
    `additional_kwargs`, Ollama's counters in `raw`), or None when it reported none."""
    raw = response.raw
    for usage in (_field(raw, "usage"), response.additional_kwargs):
        for prompt_name, completion_name in _USAGE_FIELDS:
            pair = _int_pair(usage, prompt_name, completion_name)
            if pair is not None:
                return pair
    return _int_pair(raw, *_OLLAMA_FIELDS)


def _reported_reasoning(response: ChatResponse) -> int | None:
    """Thinking tokens as reported (`usage.completion_tokens_details.reasoning_tokens`), or None."""
    details = _field(_field(response.raw, "usage"), "completion_tokens_details")
    value = _field(details, "reasoning_tokens") if details is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int_pair(obj: Any, first: str, second: str) -> tuple[int, int] | None:
    if obj is None:
        return None
    a, b = _field(obj, first), _field(obj, second)
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        return a, b
    return None


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _is_retried(exc: Exception) -> bool:
    """Whether the openai client retried this failure (connection errors, timeouts, 408/409/429/5xx)."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRIED_STATUS or exc.status_code >= 500
    return False
