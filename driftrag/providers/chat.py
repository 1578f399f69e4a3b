"""`ChatModel`: the narrow view of a chat client every model task needs (ingestion, search, eval).

The provider's `ModelClient`, the per-query `BudgetedChat` and the tests' doubles all satisfy it
structurally.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


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
    ) -> ChatReply:
        """One chat completion; transport errors are retried by the client and raise `ModelError`."""
        ...


def turn(role: str, content: str) -> dict[str, str]:
    """One chat message."""
    return {"role": role, "content": content}
