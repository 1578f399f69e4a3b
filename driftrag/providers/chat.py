"""`ChatModel`: the narrow view of a chat client every model task needs (ingestion, search, eval).

The provider's `ModelClient`, the per-query `BudgetedChat` and the tests' doubles all satisfy it
structurally. A model that can stream also has `stream_chat` (`StreamingChatModel`); `chat_streaming`
uses it when it is there and otherwise hands the whole answer over at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

# Receives each piece of a streamed answer as it arrives.
DeltaSink = Callable[[str], Awaitable[None]]


class ChatReply(Protocol):
    """What the tasks read of an answer (the client's `ChatResult` also carries tokens and `cached`)."""

    @property
    def text(self) -> str: ...


@runtime_checkable
class ChatModel(Protocol):
    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> ChatReply:
        """One chat completion (`schema`: the JSON answer's model, sent as structured output where the
        client can); transport errors are retried by the client and raise `ModelError`."""
        ...


@runtime_checkable
class StreamingChatModel(ChatModel, Protocol):
    async def stream_chat(
        self,
        messages: list[dict[str, str]],
        *,
        on_delta: DeltaSink,
        json_mode: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> ChatReply:
        """`chat`, giving each piece of the answer to `on_delta` as it is written; returns the whole answer."""
        ...


async def chat_streaming(
    chat: ChatModel,
    messages: list[dict[str, str]],
    *,
    on_delta: DeltaSink,
    json_mode: bool = False,
    max_tokens: int | None = None,
    schema: type[BaseModel] | None = None,
) -> ChatReply:
    """Stream the answer when `chat` can, else give it to `on_delta` in one piece when it is complete."""
    extra = schema_option(schema)
    if isinstance(chat, StreamingChatModel):
        return await chat.stream_chat(messages, on_delta=on_delta, json_mode=json_mode, max_tokens=max_tokens, **extra)
    reply = await chat.chat(messages, json_mode=json_mode, max_tokens=max_tokens, **extra)
    await on_delta(reply.text)
    return reply


class LimitedChat:
    """`model` with at most `limit` calls at once: the limit the provider's `ModelClient` holds itself,
    for a model passed in as it is (ingestion keeps more chunks under way than calls, see `extract_all`)."""

    def __init__(self, model: ChatModel, limit: int) -> None:
        self.model = model
        self._slots = asyncio.Semaphore(max(1, limit))

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> ChatReply:
        async with self._slots:
            return await self.model.chat(messages, json_mode=json_mode, max_tokens=max_tokens, **schema_option(schema))


def schema_option(schema: type[BaseModel] | None) -> dict[str, type[BaseModel]]:
    """`schema=` for a call when there is one: a plain JSON call stays callable on a `ChatModel` that
    predates schemas (a user's own double or wrapper)."""
    return {"schema": schema} if schema is not None else {}


def turn(role: str, content: str) -> dict[str, str]:
    """One chat message."""
    return {"role": role, "content": content}
