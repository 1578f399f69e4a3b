"""The one JSON-answer helper of every model task (ingestion, search, evaluation).

A task names its answer's pydantic model (`schema`): the client sends it as a strict JSON schema where
the server takes one (`driftrag.providers.structured`, `ModelClient`), and the prompt describes the
expected keys in one line (`describe_keys`: names, types, bounds; no worked example a small model could
copy). `ask_json` sends the prompt, parses the answer with the task's `parse` (which uses
`extract_json_object`: fences and prose removed, repaired with `json_repair`, then validated) and, when
the answer cannot be used, re-asks with the parse error and the key description appended to the
conversation (a changed request, so a response cache cannot replay the bad answer). An answer that
stays invalid is reported once, as `InvalidModelOutput`.

With a `stream` (`AnswerPreview`), each attempt's text goes to it as the model writes it: `begin` opens
every attempt (so a re-ask can tell its reader to drop the previous attempt's text), `feed` gets the raw
pieces. What the task finally returns is still the parsed answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import json_repair
from pydantic import BaseModel

from driftrag.errors import ModelError, PromptTooLongError
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel, chat_streaming, turn
from driftrag.providers.structured import describe_keys

T = TypeVar("T")
DEFAULT_ATTEMPTS = 2
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)(?:```|\Z)", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class InvalidModelOutput(ModelError):
    """A model answer that cannot be turned into the task's schema (a parser raises it to get a re-ask;
    `JsonAnswer.unwrap` raises it when the answer stayed invalid)."""


def json_example(example: BaseModel) -> str:
    """A filled-in answer as rendered into prompts (a knowledge base's own few-shot answer), validated
    again by its own model first so that a prompt never shows an example its parser would refuse. Fields
    hidden from the model (None) are left out; non-ASCII text stays readable."""
    data = example.model_dump(mode="json", exclude_none=True)
    type(example).model_validate(data)
    return json.dumps(data, ensure_ascii=False)


def strip_wrappers(raw: str) -> tuple[str, list[str]]:
    """The answer without what reasoning models and chatty ones put around it, and what was removed:
    `think_block` for `<think>…</think>` (DeepSeek-R1 distills, Qwen3; also a block whose opening tag
    the server already dropped), `code_fence` for a Markdown fence (its content is kept)."""
    text, removed = raw.strip(), []
    if "</think>" in text.lower() or text.lower().startswith("<think>"):
        removed.append("think_block")
        text = _THINK.sub("", text)
        # An orphan closing tag: the reasoning before it is dropped; an unclosed block: only its tag.
        closing = text.lower().rfind("</think>")
        text = text[closing + len("</think>") :] if closing >= 0 else re.sub(r"(?i)^<think>", "", text)
        text = text.strip()
    fenced = _FENCE.search(text)
    if fenced:
        removed.append("code_fence")
        text = fenced.group(1).strip()
    return text, removed


def extract_json_object(raw: str) -> dict[str, Any]:
    """The JSON object inside a model answer: think blocks, fences and surrounding prose removed, then
    repaired."""
    text, _ = strip_wrappers(raw)
    start = text.find("{")
    if start < 0:
        raise InvalidModelOutput("the answer contains no JSON object")
    end = text.rfind("}")
    candidate = text[start : end + 1] if end > start else text[start:]
    try:
        value = json_repair.loads(candidate)
    except (ValueError, RecursionError) as exc:
        raise InvalidModelOutput(f"the JSON could not be repaired: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidModelOutput("the answer is not a JSON object")
    return value


class AnswerPreview(Protocol):
    async def begin(self) -> None:
        """A new attempt starts: whatever an earlier attempt showed is void."""
        ...

    async def feed(self, raw: str) -> None:
        """A piece of the attempt's raw answer, as the model wrote it."""
        ...


@dataclass(frozen=True)
class JsonAnswer(Generic[T]):
    """The outcome of `ask_json`: the parsed value, or why there is none (`error`, and `failure` when the
    model call itself failed). `conversation` ends with the accepted answer (for follow-up turns)."""

    value: T | None
    error: str | None
    attempts: int
    raw: str | None
    conversation: list[dict[str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failure: ModelError | None = None

    def unwrap(self, task: str) -> T:
        """The value; else the model call's own error (so retry policies see it), else `InvalidModelOutput`."""
        if self.failure is not None:
            raise self.failure
        if self.value is None:
            last = f"; last output: {self.raw[:300]!r}" if self.raw else ""
            raise InvalidModelOutput(f"{task}: {self.error}{last}")
        return self.value


async def ask_json(
    chat: ChatModel,
    prompts: PromptRegistry,
    prompt: str | list[dict[str, str]],
    parse: Callable[[str], T],
    schema: type[BaseModel],
    *,
    max_tokens: int | None,
    attempts: int = DEFAULT_ATTEMPTS,
    stream: AnswerPreview | None = None,
) -> JsonAnswer[T]:
    """Ask until `parse` accepts the answer (it raises `InvalidModelOutput` otherwise), `attempts` calls at
    most. Never raises a model error: a failed call or a last unusable answer comes back in the result."""
    keys = describe_keys(schema)
    messages = [turn("user", prompt)] if isinstance(prompt, str) else list(prompt)
    attempts = max(1, attempts)
    prompt_tokens = completion_tokens = 0
    raw: str | None = None
    error = ""
    for attempt in range(1, attempts + 1):
        try:
            if stream is None:
                result = await chat.chat(messages, json_mode=True, max_tokens=max_tokens, schema=schema)
            else:
                await stream.begin()
                result = await chat_streaming(
                    chat, messages, on_delta=stream.feed, json_mode=True, max_tokens=max_tokens, schema=schema
                )
        except PromptTooLongError as exc:
            # Not sent: as unusable as a bad answer, so the task's fallback takes over (a re-ask grows it).
            return JsonAnswer(None, str(exc), attempt, raw, messages, prompt_tokens, completion_tokens)
        except ModelError as exc:
            return JsonAnswer(
                None, f"model call failed: {exc}", attempt, raw, messages, prompt_tokens, completion_tokens, exc
            )
        raw = result.text
        prompt_tokens += getattr(result, "prompt_tokens", 0) or 0
        completion_tokens += getattr(result, "completion_tokens", 0) or 0
        try:
            value = parse(raw)
        except InvalidModelOutput as exc:
            error = str(exc)
            repair = prompts.render("repair_json", error=error, answer_shape=keys)
            messages = [*messages, turn("assistant", raw), turn("user", repair)]
            continue
        conversation = [*messages, turn("assistant", raw)]
        return JsonAnswer(value, None, attempt, raw, conversation, prompt_tokens, completion_tokens)
    return JsonAnswer(
        None,
        f"invalid output after {attempts} attempt(s): {error}",
        attempts,
        raw,
        messages,
        prompt_tokens,
        completion_tokens,
    )
