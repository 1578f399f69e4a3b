"""A hard per-query budget on model calls and prompt tokens.

The budget is checked before a call is sent, on its prompt tokens counted locally (cl100k), so a query
never exceeds it; a call that would is refused with `BudgetExhausted`. After the call, the tokens the
provider reports replace the local count in the figures (they may differ slightly). Capacity can be held back for a
later step (DRIFT keeps one call for its reduce) and released just before that step runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from driftrag.errors import ModelError, PromptTooLongError
from driftrag.providers.chat import ChatModel, ChatReply, DeltaSink, chat_streaming, schema_option
from driftrag.providers.tokens import tokenizer

# Chat framing per message, as in the provider's own estimate.
_MESSAGE_OVERHEAD_TOKENS = 4


class BudgetExhausted(ModelError):
    """A model call was refused because the query's call or token budget would be exceeded."""


@dataclass
class QueryBudget:
    max_calls: int
    max_prompt_tokens: int
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    held_calls: int = 0
    held_tokens: int = 0
    refused: int = 0
    # The longest a model call of the query took (cache hits aside): the pace a deadline is judged by.
    slowest_call_s: float = 0.0
    _count_tokens: Callable[[str], list[int]] = field(default_factory=tokenizer, repr=False)

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        return sum(len(self._count_tokens(m.get("content", ""))) + _MESSAGE_OVERHEAD_TOKENS for m in messages)

    @property
    def remaining_calls(self) -> int:
        return self.max_calls - self.calls - self.held_calls

    @property
    def remaining_tokens(self) -> int:
        return self.max_prompt_tokens - self.prompt_tokens - self.held_tokens

    def hold(self, *, calls: int, tokens: int) -> None:
        """Keep capacity for a later step; `release` gives it back."""
        self.held_calls += calls
        self.held_tokens += tokens

    def release(self) -> None:
        self.held_calls = 0
        self.held_tokens = 0

    def admit(self, prompt_tokens: int) -> None:
        """Reserve one call of `prompt_tokens`, or raise `BudgetExhausted`."""
        if self.remaining_calls < 1 or prompt_tokens > self.remaining_tokens:
            self.refused += 1
            raise BudgetExhausted(
                f"query budget exhausted: {self.calls}/{self.max_calls} calls, "
                f"{self.prompt_tokens}+{prompt_tokens}/{self.max_prompt_tokens} prompt tokens"
            )
        self.calls += 1
        self.prompt_tokens += prompt_tokens


class BudgetedChat:
    """A `ChatModel` that spends from a `QueryBudget`; the wrapped client does the call."""

    def __init__(self, chat: ChatModel, budget: QueryBudget) -> None:
        self._chat = chat
        self._budget = budget

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> ChatReply:
        extra = schema_option(schema)
        return await self._spend(
            messages, lambda: self._chat.chat(messages, json_mode=json_mode, max_tokens=max_tokens, **extra)
        )

    async def stream_chat(
        self,
        messages: list[dict[str, str]],
        *,
        on_delta: DeltaSink,
        json_mode: bool = False,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> ChatReply:
        return await self._spend(
            messages,
            lambda: chat_streaming(
                self._chat, messages, on_delta=on_delta, json_mode=json_mode, max_tokens=max_tokens, schema=schema
            ),
        )

    async def _spend(self, messages: list[dict[str, str]], call: Callable[[], Awaitable[ChatReply]]) -> ChatReply:
        # Counted in a thread (the encoder releases the GIL): a prompt of several thousand tokens would
        # otherwise hold the event loop, and the other searches of a DRIFT round, for milliseconds each.
        estimate = await asyncio.to_thread(self._budget.count_prompt_tokens, messages)
        # Reserved before the call's await: concurrent callers can never overshoot together.
        self._budget.admit(estimate)
        started = time.monotonic()
        try:
            result = await call()
        except PromptTooLongError:
            # Refused before it was sent: it spent nothing.
            self._budget.calls -= 1
            self._budget.prompt_tokens -= estimate
            raise
        if getattr(result, "cached", False):
            # A cache hit costs nothing: give the reservation back.
            self._budget.calls -= 1
            self._budget.prompt_tokens -= estimate
            self._budget.cache_hits += 1
            return result
        self._budget.slowest_call_s = max(self._budget.slowest_call_s, time.monotonic() - started)
        reported = getattr(result, "prompt_tokens", 0) or estimate
        self._budget.prompt_tokens += reported - estimate
        self._budget.completion_tokens += getattr(result, "completion_tokens", 0) or 0
        return result
