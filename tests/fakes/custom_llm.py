"""TEST DOUBLE: `ScriptedCustomLLM`, a deterministic LlamaIndex `CustomLLM` with no JSON mode.

It stands in for a non-OpenAI model (a LlamaIndex LLM driftrag knows nothing about): it answers each
task exactly as `ScriptedChatModel` does, from the prompt alone, streams its answer word by word through
`astream_chat`, and records the keyword arguments of every call (driftrag must send none of OpenAI's
request fields to it). `query_misbehave` makes chosen query tasks answer in prose first, so that the
JSON answers go through the repair re-ask. With `report_usage` it reports its token counts the way
LlamaIndex LLMs do (`raw["usage"]`); without, it reports nothing and driftrag counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.llms import CustomLLM
from pydantic import PrivateAttr

from tests.fakes.scripted_llm import ScriptedChatModel

MODEL_NAME = "scripted-custom"
_PIECES = re.compile(r"\s*\S+\s*|\s+")


def usage_of(text: str) -> int:
    """The double's own token count (one per word), distinct from driftrag's cl100k count."""
    return len(text.split())


class ScriptedCustomLLM(CustomLLM):
    report_usage: bool = False
    _script: ScriptedChatModel = PrivateAttr()
    _kwargs: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    def __init__(self, *, query_misbehave: Mapping[str, str] | None = None, report_usage: bool = False) -> None:
        super().__init__(report_usage=report_usage)
        self._script = ScriptedChatModel(query_misbehave=query_misbehave)
        self._kwargs = []

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedCustomLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=32000, num_output=1000, is_chat_model=True, model_name=MODEL_NAME)

    @property
    def calls(self):
        """Calls per task, as `ScriptedChatModel` counts them."""
        return self._script.calls

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        return list(self._kwargs)

    # --- the chat interface driftrag uses ----------------------------------------------------------

    def _answer(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._kwargs.append(dict(kwargs))
        plain = [{"role": m.role.value, "content": m.content or ""} for m in messages]
        task = self._script._task(plain)
        self._script.calls[task] += 1
        text = getattr(self._script, f"_answer_{task}")(plain)
        raw: dict[str, Any] = {}
        if self.report_usage:
            prompt = sum(usage_of(m["content"]) for m in plain)
            raw["usage"] = {"prompt_tokens": prompt, "completion_tokens": usage_of(text)}
        return text, raw

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        text, raw = self._answer(messages, kwargs)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), raw=raw)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self.chat(messages, **kwargs)

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        text, raw = self._answer(messages, kwargs)

        async def gen() -> ChatResponseAsyncGen:
            content = ""
            pieces = _PIECES.findall(text)
            for n, piece in enumerate(pieces, start=1):
                content += piece
                yield ChatResponse(
                    message=ChatMessage(role=MessageRole.ASSISTANT, content=content),
                    delta=piece,
                    raw=raw if n == len(pieces) else {},
                )

        return gen()

    # --- CustomLLM's required completion interface (not used by driftrag) -------------------------

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        text, _ = self._answer([ChatMessage(role=MessageRole.USER, content=prompt)], kwargs)
        return CompletionResponse(text=text)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self.complete(prompt, formatted, **kwargs).text

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()
