"""TEST DOUBLE: the mistakes of weak and local models (issue 34), on the OpenAI-compatible test server.

`WeakModelResponder(behaviours)` answers every request as `ScriptedResponder` would, then spoils the
answer of the tasks named in `behaviours` (a task of `QUERY_MARKS`, or "extract") in the way named, on
the first answer and on the re-ask alike (a weak model repeats its mistake):

- "missing_score": the JSON without "score" (answers, the DRIFT primer, each global key point);
- "malformed_score": "score" as a word ("high");
- "response_key" / "Answer_key": the answer text under "response" / "Answer" instead of "answer";
- "prose": no JSON, only the answer's text (inline citations kept);
- "think": a `<think>…</think>` block before the JSON (reasoning models);
- "fenced": the JSON in a Markdown code fence;
- "example_copy": a worked example's content instead of the answer (the fictional names earlier prompts
  showed, which a model may still write from a user's prompt or from memory), in the answer's shape;
- "wrong_object": `{"Title": "The Dark Lamp"}`, an object of the wrong shape (SmolLM2 on local search);
- "loop" / "token_run" / "lone_citation": a degenerate answer text (issue 52): "The answer is: " over and
  over, the answer followed by `[x][x][x]…`, or only "S1".

`chunks_containing` limits the "extract" behaviour to the chunks whose text holds that string (a weak
model fails on some chunks, not all). `calls` counts the requests per task (the re-asks under "repair").
`WeakChat(behaviours)` answers the same way as an in-process `ChatModel`, with no server.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping

from tests.fakes.openai_server import message_text
from tests.fakes.scripted_llm import QUERY_MARKS, ScriptedChatModel, ScriptedChatResult

BEHAVIOURS = frozenset(
    {
        "missing_score",
        "malformed_score",
        "response_key",
        "Answer_key",
        "prose",
        "think",
        "fenced",
        "example_copy",
        "wrong_object",
        "loop",
        "token_run",
        "lone_citation",
    }
)
_DEGENERATE = {
    "loop": lambda answer: "The answer is: " * 8,
    "token_run": lambda answer: f"{answer} " + "[x]" * 40,
    "lone_citation": lambda answer: "S1",
}
TASKS = frozenset({*QUERY_MARKS, "extract"})
WRONG_OBJECT = '{"Title": "The Dark Lamp"}'
THINK = "<think>\nThe user wants JSON. Let me look at the context first and think about the score.\n</think>\n"
# What a model copying the examples earlier prompts showed writes (`driftrag.prompts.examples`).
COPIED_TEXT = "Xel Placeholder runs the Placeholder Guild [S1]; she hired Yan Placeholder [S2]."
COPIED_GRAPH = {
    "entities": [
        {"name": "Xel Placeholder", "type": "PERSON", "description": "Runs the Placeholder Guild."},
        {"name": "Placeholder Guild", "type": "ORGANIZATION", "description": "A guild run by Xel Placeholder."},
    ],
    "relationships": [
        {"source": "Xel Placeholder", "target": "Placeholder Guild", "type": "LEADS", "description": "", "strength": 9}
    ],
}


def _copied(obj: dict) -> dict:
    """The example's content in the shape of `obj`, the good answer."""
    if "entities" in obj:
        return COPIED_GRAPH
    if "points" in obj:
        return {"points": [{"description": COPIED_TEXT, "score": 80, "citations": ["S1"]}]}
    if "names" in obj:
        return {"names": ["Xel Placeholder", "Placeholder Guild"]}
    copied = {**obj, "answer": COPIED_TEXT}
    if "citations" in obj:
        copied["citations"] = ["S1", "S2"]
    if "follow_up_queries" in obj:
        copied["follow_up_queries"] = ["Why did Xel Placeholder hire Yan Placeholder?"]
    return copied


def _without_scores(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_scores(v) for k, v in value.items() if k != "score"}
    if isinstance(value, list):
        return [_without_scores(v) for v in value]
    return value


def _with_word_scores(value: object) -> object:
    if isinstance(value, dict):
        return {k: ("high" if k == "score" else _with_word_scores(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_word_scores(v) for v in value]
    return value


def spoil(text: str, behaviour: str, prompt: str) -> str:
    """`text` (a good JSON answer to `prompt`) as a weak model would have written it."""
    if behaviour == "wrong_object":
        return WRONG_OBJECT
    if behaviour == "think":
        return THINK + text
    if behaviour == "fenced":
        return f"```json\n{text}\n```"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(obj, dict):
        return text
    if behaviour == "example_copy":
        return json.dumps(_copied(obj))
    if behaviour == "prose":
        return str(obj.get("answer") or "; ".join(p.get("description", "") for p in obj.get("points", [])) or text)
    if behaviour == "missing_score":
        return json.dumps(_without_scores(obj))
    if behaviour == "malformed_score":
        return json.dumps(_with_word_scores(obj))
    if behaviour in _DEGENERATE and "answer" in obj:
        return json.dumps({**obj, "answer": _DEGENERATE[behaviour](str(obj["answer"]))})
    if behaviour in ("response_key", "Answer_key") and "answer" in obj:
        key = behaviour.removesuffix("_key")
        return json.dumps({(key if k == "answer" else k): v for k, v in obj.items()})
    return text


class WeakModelResponder:
    """The scripted model's answers, spoiled per task (module docstring)."""

    def __init__(self, behaviours: Mapping[str, str], *, chunks_containing: str | None = None) -> None:
        unknown = {f"{task}={mode}" for task, mode in behaviours.items() if task not in TASKS or mode not in BEHAVIOURS}
        if unknown:
            raise ValueError(f"unknown weak-model behaviours {sorted(unknown)}")
        self.behaviours = dict(behaviours)
        self.chunks_containing = chunks_containing
        self.model = ScriptedChatModel()
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> str:
        messages = [{"role": m["role"], "content": message_text(m)} for m in request.get("messages", [])]
        with self._lock:
            task = self.model._task(messages)
            self.calls[task] += 1
            text = getattr(self.model, f"_answer_{task}")(messages)
            # A re-ask is the same task again: its first message tells which.
            asked = self.model._task(messages[:1]) if task == "repair" else task
            behaviour = self.behaviours.get(asked)
            if asked == "extract" and self.chunks_containing is not None:
                chunk = self.model._chunk_text(messages)
                behaviour = behaviour if self.chunks_containing in chunk else None
            return spoil(text, behaviour, messages[0]["content"]) if behaviour else text


class WeakChat:
    """A `ChatModel` answering as the test server's weak model would."""

    def __init__(self, behaviours: dict[str, str]) -> None:
        self.responder = WeakModelResponder(behaviours)

    async def chat(
        self, messages, *, json_mode=False, max_tokens=None, temperature=None, schema=None
    ) -> ScriptedChatResult:
        text = self.responder({"messages": messages})
        return ScriptedChatResult(text=text, prompt_tokens=10, completion_tokens=10)
