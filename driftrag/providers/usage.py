"""Token and call accounting: one `UsageTracker` per run, passed explicitly to whatever calls a model."""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Counters at one moment. `chat_calls` counts successful provider calls; cache hits are separate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chat_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of the completion tokens, those a reasoning model spent thinking (reported, or its stripped block's).
    reasoning_tokens: int = 0
    cache_hits: int = 0
    failed_calls: int = 0
    retried_calls: int = 0
    # JSON answers by how their format was asked (`driftrag.providers.structured`): a JSON schema, JSON
    # mode, or the prompt alone; and the requests a server refused for their format, asked again lower.
    json_schema_calls: int = 0
    json_object_calls: int = 0
    prompt_only_json_calls: int = 0
    structured_fallbacks: int = 0
    # Answers stopped where they started to loop (`driftrag.providers.loops`), their text kept up to there.
    loops_stopped: int = 0
    embedding_requests: int = 0
    embedded_texts: int = 0
    embedding_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __sub__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) - getattr(other, name) for name in Usage.model_fields})

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})


# The counter of each structured-output level (`driftrag.providers.structured.STRUCTURED_LEVELS`).
_LEVEL_COUNTERS = {
    "json_schema": "json_schema_calls",
    "json_object": "json_object_calls",
    "off": "prompt_only_json_calls",
}


class UsageTracker:
    """Mutable counters behind a lock: sync embedding calls may run in worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(Usage.model_fields, 0)

    def _add(self, **deltas: int) -> None:
        with self._lock:
            for name, value in deltas.items():
                self._counts[name] += value

    def record_chat(
        self, *, prompt_tokens: int, completion_tokens: int, reasoning_tokens: int = 0, structured: str | None = None
    ) -> None:
        """One answered call; `structured` is how a JSON answer's format was asked (`json_schema`,
        `json_object`, or `off`: the prompt alone), None for a plain-text call."""
        levels = {
            "json_schema": "json_schema_calls",
            "json_object": "json_object_calls",
            "off": "prompt_only_json_calls",
        }
        extra = {levels[structured]: 1} if structured is not None else {}
        self._add(
            chat_calls=1,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=reasoning_tokens,
            **extra,
        )

    def record_structured_fallback(self) -> None:
        """A server refused a request's answer format; the same call is asked again one level lower."""
        self._add(structured_fallbacks=1)

    def record_loop_stopped(self) -> None:
        """An answer cut where it began to repeat itself (counted in its call's completion tokens)."""
        self._add(loops_stopped=1)

    def record_cache_hit(self) -> None:
        self._add(cache_hits=1)

    def record_failure(self) -> None:
        self._add(failed_calls=1)

    def record_retry(self) -> None:
        """A model answer that could not be read, asked again (the openai client's own retries are not seen)."""
        self._add(retried_calls=1)

    def record_embedding(self, *, texts: int, tokens: int = 0) -> None:
        """One embedding request of `texts` texts (`tokens` when the provider reports them)."""
        self._add(embedding_requests=1, embedded_texts=texts, embedding_tokens=tokens)

    def snapshot(self) -> Usage:
        with self._lock:
            return Usage(**self._counts)

    def since(self, earlier: Usage) -> Usage:
        """What happened after `earlier` was taken: a run reports its own delta on a shared tracker."""
        return self.snapshot() - earlier
