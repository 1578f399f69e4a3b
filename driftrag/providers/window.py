"""The model's context window: where it is read from, and the prompt budgets and output caps it allows.

The window comes from `llm_context_window` when set, else from the LlamaIndex LLM's metadata when it
names a known model (not llama-index's generic default), else from the server's own report: llama.cpp's
`GET /props` (the per-slot context: some versions divide `n_ctx` among `total_slots`), Ollama's
`POST /api/show`. Unknown, nothing is changed: the settings' budgets and caps stand as they are.
The same `/props` tells the server's parallel slots (`probe_server`), which the model client's
concurrency follows (`driftrag.providers.limits`).

Prompts are counted with cl100k here, and with the model's own tokenizer by the server: small models'
vocabularies cut the same text into more tokens, so a count is scaled by `SERVER_TOKEN_RATIO` before it is
compared with the window.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from llama_index.core.llms import LLM

    from driftrag.settings import Settings

log = logging.getLogger(__name__)

# llama-index's `DEFAULT_CONTEXT_WINDOW` (what an unknown model's metadata says): not the model's own.
GENERIC_CONTEXT_WINDOW = 3900
# A probe of the server's report must not hold up a run whose server does not answer it.
PROBE_TIMEOUT_S = 3.0
# Server tokens per cl100k token, on the safe side (SmolLM2's and Qwen's vocabularies cut English and
# markup into up to ~20 % more tokens than cl100k; the test server counts 4 characters a token).
SERVER_TOKEN_RATIO = 1.25
# Chat-template framing per message (role markers, separators).
MESSAGE_OVERHEAD_TOKENS = 8
# The fewest output tokens worth asking for: a prompt leaving less room is refused, not sent.
MIN_OUTPUT_TOKENS = 64
# Template text and question around a context, in cl100k tokens (the largest query template is ~340
# tokens, the extraction prompt with its example ~650): what a context budget leaves room for.
PROMPT_OVERHEAD_TOKENS = 700
# The most of a window one answer may take, so that a small window still holds a useful prompt.
OUTPUT_SHARE = 0.25


def server_tokens(counted: int, messages: int = 1) -> int:
    """A cl100k count of a prompt as the server will count it (scaled, with framing)."""
    return math.ceil(counted * SERVER_TOKEN_RATIO) + MESSAGE_OVERHEAD_TOKENS * messages


def metadata_window(llm: LLM) -> int | None:
    """The context window the LLM's metadata gives, when it is the model's own (not the generic default)."""
    try:
        window = llm.metadata.context_window
    except Exception:  # a metadata property that fails tells nothing about the window
        return None
    if not isinstance(window, int) or window <= 0 or window == GENERIC_CONTEXT_WINDOW:
        return None
    return window


def server_root(base_url: str) -> str:
    """The server's root from an OpenAI-style base URL (`http://host:8080/v1` → `http://host:8080`)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def llamacpp_window(props: Mapping[str, Any]) -> int | None:
    """The per-slot context of llama.cpp's `/props`: `default_generation_settings.n_ctx`, divided among
    `total_slots` when it is the whole server's (older versions report the total)."""
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, Mapping) else None
    if not isinstance(n_ctx, int) or n_ctx <= 0:
        return None
    slots = props.get("total_slots")
    per_slot = props.get("n_ctx_slot") or (settings.get("n_ctx_slot") if isinstance(settings, Mapping) else None)
    if isinstance(per_slot, int) and per_slot > 0:
        return per_slot
    # Newer servers give each slot the whole n_ctx unless unified KV is off; we cannot tell which,
    # so a multi-slot server is read the safe way: its share per slot.
    if isinstance(slots, int) and slots > 1:
        return n_ctx // slots
    return n_ctx


def ollama_window(show: Mapping[str, Any]) -> int | None:
    """The context of Ollama's `/api/show`: `num_ctx` in its parameters (what it runs with), else the
    model's `*.context_length`."""
    parameters = show.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                return int(parts[1])
    info = show.get("model_info")
    if isinstance(info, Mapping):
        for key, value in info.items():
            if key.endswith(".context_length") and isinstance(value, int) and value > 0:
                return value
    return None


@dataclass(frozen=True)
class ServerReport:
    """What a compatible server says of itself: its per-slot context window and its parallel slots
    (llama.cpp's `total_slots`: requests it decodes at once; more wait in its queue)."""

    window: int | None = None
    slots: int | None = None


def llamacpp_slots(props: Mapping[str, Any]) -> int | None:
    """The parallel slots of llama.cpp's `/props` (`total_slots`), or None."""
    slots = props.get("total_slots")
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None


async def probe_server(base_url: str, model: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> ServerReport:
    """What the server at `base_url` reports: llama.cpp's `/props` (window and slots), else Ollama's
    `/api/show` (window only: Ollama does not say how many requests it runs at once)."""
    root = server_root(base_url)
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            props = await _json(client.get(f"{root}/props"))
            window = llamacpp_window(props) if props is not None else None
            slots = llamacpp_slots(props) if props is not None else None
            if window is None:
                show = await _json(client.post(f"{root}/api/show", json={"model": model}))
                window = ollama_window(show) if show is not None else None
            return ServerReport(window=window, slots=slots)
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("nothing reported by %s: %s", root, exc)
        return ServerReport()


async def _json(request: Any) -> Mapping[str, Any] | None:
    try:
        response = await request
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, Mapping) else None


def output_cap(cap: int, window: int | None) -> int:
    """A task's output cap within `window`: at most its share of it, never under `MIN_OUTPUT_TOKENS`."""
    if window is None:
        return cap
    return max(MIN_OUTPUT_TOKENS, min(cap, int(window * OUTPUT_SHARE)))


def prompt_room(window: int, cap: int) -> int:
    """cl100k tokens a prompt may hold beside an answer of `cap` tokens in `window`."""
    return max(0, math.floor((window - cap) / SERVER_TOKEN_RATIO))


def fit_settings(settings: Settings, window: int | None) -> Settings:
    """`settings` with the output caps, context budgets and chunk size shrunk to fit `window` (unchanged
    when it is unknown or large enough): every prompt then leaves room for its answer."""
    if window is None:
        return settings
    answer = output_cap(settings.answer_max_tokens, window)
    report = output_cap(settings.report_max_tokens, window)
    extraction = output_cap(settings.extraction_max_tokens, window)
    summary = output_cap(settings.summary_max_tokens, window)

    def budget(current: int, cap: int, floor: int) -> int:
        return min(current, max(floor, prompt_room(window, cap) - PROMPT_OVERHEAD_TOKENS))

    update = {
        "answer_max_tokens": answer,
        "report_max_tokens": report,
        "extraction_max_tokens": extraction,
        "summary_max_tokens": summary,
        # Floors are the settings' own lower bounds: a window too small for them is refused per call.
        "local_context_tokens": budget(settings.local_context_tokens, answer, 200),
        "global_map_context_tokens": budget(settings.global_map_context_tokens, answer, 500),
        "report_context_tokens": budget(settings.report_context_tokens, report, 500),
        # Gleaning sends the chunk, the first answer and the re-ask together: room for two answers.
        "chunk_size": budget(settings.chunk_size, 2 * extraction, 50),
    }
    update["chunk_overlap"] = min(settings.chunk_overlap, update["chunk_size"] // 4)
    changed = {k: v for k, v in update.items() if getattr(settings, k) != v}
    if not changed:
        return settings
    log.info("fitted to a %d-token context window: %s", window, changed)
    return settings.model_copy(update=changed)
