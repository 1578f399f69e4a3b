"""One JSON answer from a chat model: parsed, re-asked once with the parse error, tokens counted.

The re-ask appends the bad answer and the `repair_json` prompt to the conversation, so it is a
different request and a response cache cannot replay the bad answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from driftrag.errors import ModelError
from driftrag.ingestion.tasks import ChatModel
from driftrag.prompts.registry import PromptRegistry

T = TypeVar("T")
ATTEMPTS = 2


class InvalidJsonAnswer(ModelError):
    """The model's answer is not the JSON its protocol asks for."""


@dataclass(frozen=True)
class JsonAnswer(Generic[T]):
    value: T | None
    error: str | None
    attempts: int
    prompt_tokens: int
    completion_tokens: int


async def ask_json(
    chat: ChatModel,
    prompts: PromptRegistry,
    prompt: str,
    parse: Callable[[str], T],
    schema: str,
    *,
    max_tokens: int,
    attempts: int = ATTEMPTS,
) -> JsonAnswer[T]:
    """Ask until `parse` accepts the answer (it raises `InvalidJsonAnswer` otherwise), `attempts` at most.

    A failed model call or a last unusable answer comes back as `error`, never raised."""
    messages = [{"role": "user", "content": prompt}]
    prompt_tokens = completion_tokens = 0
    error = ""
    for attempt in range(1, attempts + 1):
        try:
            result = await chat.chat(messages, json_mode=True, max_tokens=max_tokens)
        except ModelError as exc:
            return JsonAnswer(None, f"model call failed: {exc}", attempt, prompt_tokens, completion_tokens)
        prompt_tokens += getattr(result, "prompt_tokens", 0) or 0
        completion_tokens += getattr(result, "completion_tokens", 0) or 0
        try:
            return JsonAnswer(parse(result.text), None, attempt, prompt_tokens, completion_tokens)
        except InvalidJsonAnswer as exc:
            error = str(exc)
            repair = prompts.render("repair_json", error=error, schema=schema)
            messages = [*messages, {"role": "assistant", "content": result.text}, {"role": "user", "content": repair}]
    return JsonAnswer(
        None, f"invalid output after {attempts} attempts: {error}", attempts, prompt_tokens, completion_tokens
    )
