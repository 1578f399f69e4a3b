"""Reasoning models: asking them not to think, and taking apart the thinking that still comes.

A compatible server (llama.cpp, vLLM) turns a Qwen3- or DeepSeek-style model's thinking off through its
chat template (`chat_template_kwargs.enable_thinking=false`, sent in the request's extra body); OpenAI's
own reasoning models take a low `reasoning_effort` instead, and refuse unknown request fields, so each
host gets only what it accepts. A `<think>…</think>` block that still comes is removed from the answer
(every task, plain text included) and its tokens are counted apart.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN, _CLOSE = "<think>", "</think>"
# OpenAI's reasoning models by name: o1, o3, o4-mini…, gpt-5 (not its chat variants).
_OPENAI_REASONING = re.compile(r"^(o\d+)(-|$)|^gpt-5(?!.*chat)", re.IGNORECASE)
# Every OpenAI reasoning model accepts "low" (gpt-5's "minimal" is refused by later ones).
OPENAI_REASONING_EFFORT = "low"


def is_openai_host(base_url: str | None) -> bool:
    """Whether requests go to OpenAI's (or Azure OpenAI's) own API, which refuse fields they do not know."""
    if base_url is None:
        return True
    host = urlparse(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def no_thinking_request(base_url: str | None, model: str) -> dict[str, Any]:
    """The request fields asking `model` at `base_url` not to think (empty when it takes none)."""
    if not is_openai_host(base_url):
        return {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    if _OPENAI_REASONING.match(model):
        return {"reasoning_effort": OPENAI_REASONING_EFFORT}
    return {}


def split_thinking(text: str) -> tuple[str, str]:
    """(answer, thinking) of a model's text: `<think>` blocks removed, and the reasoning before an orphan
    closing tag (a server that dropped the opening one); an unclosed block at the start is all thinking."""
    if _CLOSE not in text.lower() and not text.lstrip().lower().startswith(_OPEN):
        return text, ""
    thoughts = [m.group(0) for m in _THINK_BLOCK.finditer(text)]
    rest = _THINK_BLOCK.sub("", text)
    closing = rest.lower().rfind(_CLOSE)
    if closing >= 0:
        thoughts.append(rest[: closing + len(_CLOSE)])
        rest = rest[closing + len(_CLOSE) :]
    elif rest.lstrip().lower().startswith(_OPEN):
        thoughts.append(rest)
        rest = ""
    thinking = "".join(thoughts).replace(_OPEN, "").replace(_CLOSE, "").strip()
    return rest.strip(), thinking


class ThinkingFilter:
    """The pieces of a streamed answer without a leading `<think>` block: held back until the text shows
    whether it opens with one, then passed on once the block is closed."""

    def __init__(self) -> None:
        self._held = ""
        self._state = "start"  # start → thinking → answer

    def feed(self, piece: str) -> str:
        if self._state == "answer":
            return piece
        self._held += piece
        head = self._held.lstrip().lower()
        if self._state == "start":
            if head.startswith(_OPEN):
                self._state = "thinking"
            elif _OPEN.startswith(head):
                return ""  # may still become "<think>"
            else:
                self._state = "answer"
                out, self._held = self._held, ""
                return out
        closing = self._held.lower().find(_CLOSE)
        if closing < 0:
            return ""
        self._state = "answer"
        out, self._held = self._held[closing + len(_CLOSE) :].lstrip(), ""
        return out

    def flush(self) -> str:
        """What is still held when the stream ends: an unclosed block is thinking, a short start is text."""
        out = self._held if self._state == "start" else ""
        self._held = ""
        return out
