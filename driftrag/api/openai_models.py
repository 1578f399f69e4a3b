"""Bodies of the OpenAI-compatible routes (`/v1/chat/completions`, `/v1/models`), in OpenAI's own shapes.

Requests tolerate the fields chat frontends send that a kb query has no use for (`temperature`, `top_p`,
`max_tokens`, `tools`…): OpenAI's API accepts them, and Open WebUI or LibreChat send them on every call,
so refusing them would make the route unusable. They are ignored, and the docs say so.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from driftrag.models.search import Source
from driftrag.search.models import Degradation, QueryResult


class _Lenient(BaseModel):
    # OpenAI's request schema grows every few months; unknown fields are ignored, not refused.
    model_config = ConfigDict(extra="ignore")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- errors -------------------------------------------------------------------------------------------


class OpenAIError(_Model):
    message: str
    type: str = Field(description="invalid_request_error, authentication_error, permission_error, server_error…")
    param: str | None = None
    code: str | None = Field(default=None, description="model_not_found, invalid_api_key, … (stable).")


class OpenAIErrorBody(_Model):
    """Every error of a `/v1/…` route, as OpenAI answers them (the `openai` client reads `error.message`)."""

    error: OpenAIError


# --- chat completions --------------------------------------------------------------------------------


class ContentPart(_Lenient):
    type: str
    text: str | None = None


class ChatMessage(_Lenient):
    role: str = Field(description="system, developer, user, assistant or tool.")
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The text of the message; images and other non-text parts are left out."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content or [] if part.type == "text" and part.text)


class StreamOptions(_Lenient):
    include_usage: bool = False


class ChatCompletionRequest(_Lenient):
    model: str = Field(
        min_length=1, max_length=200, description="`kb:mode` (e.g. `alice:drift`), or `kb` for the default mode."
    )
    messages: list[ChatMessage] = Field(min_length=1, max_length=1000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1, description="One answer per request.")


class Usage(_Model):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AssistantMessage(_Model):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(_Model):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class AnswerQuality(_Model):
    """How far the answer can be trusted (driftrag's own field, `driftrag`, beside OpenAI's): the query's
    `degraded` list and the flags a chat client can show without reading it."""

    degraded: bool = Field(description="Something was tolerated or replaced on the way: `degradations` says what.")
    ungrounded: bool = Field(
        description="The answer repeats a prompt example's names, or cites only sources it was never shown."
    )
    degenerate: bool = Field(
        description="The answer is a loop (one phrase or token repeated), a lone citation id, or a retold example."
    )
    extractive: bool = Field(description="Written by the offline extractive mode (or its fallback), not a model.")
    degradations: list[Degradation] = Field(description="Each degradation: step, reason, detail.")

    @classmethod
    def of(cls, result: QueryResult) -> AnswerQuality:
        return cls(
            degraded=bool(result.degraded),
            ungrounded=result.ungrounded,
            degenerate=result.degenerate,
            extractive=result.extractive,
            degradations=list(result.degraded),
        )


class ChatCompletion(_Model):
    """OpenAI's `chat.completion`, plus `sources` and `driftrag` (not in OpenAI's schema; clients ignore
    them)."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage = Field(description="The model tokens of the whole query (every call it made); 0 offline.")
    sources: list[Source] = Field(description="The sources the answer cites, with their text (driftrag's own).")
    driftrag: AnswerQuality = Field(
        description="How far the answer can be trusted: degraded, ungrounded… (driftrag's own)."
    )


class Delta(_Model):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(_Model):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None


class ChatCompletionChunk(_Model):
    """One event of a streamed completion; the last one with choices carries `finish_reason`, `sources` and
    `driftrag` (the answer's flags)."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    sources: list[Source] | None = None
    driftrag: AnswerQuality | None = Field(default=None, description="With `sources`: the answer's flags.")


# --- models -------------------------------------------------------------------------------------------


class ModelCard(_Model):
    id: str = Field(description="`kb:mode`.")
    object: Literal["model"] = "model"
    created: int = Field(default=0, description="Unknown for a kb: always 0.")
    owned_by: str = "driftrag"


class ModelList(_Model):
    object: Literal["list"] = "list"
    data: list[ModelCard]
