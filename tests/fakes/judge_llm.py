"""TEST DOUBLE: deterministic stand-ins for the evaluation's model calls (no model is reachable here).

`ScriptedJudge` answers the `judge_pairwise` prompt by reading the two answers out of it, never by a
model. Policies:

- "length" (default): comprehensiveness and empowerment go to the answer with more words, diversity
  to the one with more distinct words, directness to the one with fewer words; equal counts tie;
- "first": always the answer shown first (a fully position-biased judge);
- "tie": always a tie.

`malformed` makes the first attempt of every judgment misbehave: "prose" (prose and a code fence
around the JSON), "truncated" (JSON cut short after the verdicts), "labels" ("Answer 1", 2, "TIE"
instead of "1", "2", "tie"), "garbage" (no JSON; the re-ask gets a valid answer), "always_garbage"
(never JSON). It counts calls and keeps every request.

`ScriptedQuestionWriter` answers the question-generator prompts: `n_personas` personas with
`n_tasks` tasks each, then `n_questions` questions per (persona, task), one of them repeated across
tasks (so deduplication shows).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from driftrag.eval.judge import CRITERIA

_ANSWER = {slot: re.compile(rf"<answer_{slot}>\n(.*?)\n</answer_{slot}>", re.DOTALL) for slot in ("1", "2")}
_TAG = {name: re.compile(rf"<{name}>\n(.*?)\n</{name}>", re.DOTALL) for name in ("user", "task")}
JUDGE_MARK = "You are an impartial judge comparing two answers"
PERSONAS_MARK = "imagine who would use it and what they would use it for"
QUESTIONS_MARK = "write the questions that task would lead them to ask"
POLICIES = frozenset({"length", "first", "tie"})
MALFORMED = frozenset({"prose", "truncated", "labels", "garbage", "always_garbage"})


@dataclass(frozen=True)
class ScriptedResult:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


def _compare(a: float, b: float, *, larger_wins: bool = True) -> str:
    if a == b:
        return "tie"
    return "1" if (a > b) == larger_wins else "2"


def length_verdicts(first: str, second: str) -> dict[str, str]:
    words1, words2 = first.split(), second.split()
    return {
        "comprehensiveness": _compare(len(words1), len(words2)),
        "diversity": _compare(len(set(words1)), len(set(words2))),
        "empowerment": _compare(len(words1), len(words2)),
        "directness": _compare(len(words1), len(words2), larger_wins=False),
    }


class ScriptedJudge:
    """TEST DOUBLE of the judge model (see the module docstring)."""

    def __init__(self, policy: str = "length", malformed: str | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}")
        if malformed is not None and malformed not in MALFORMED:
            raise ValueError(f"unknown malformed mode {malformed!r}")
        self.policy = policy
        self.malformed = malformed
        self.calls = 0
        self.requests: list[list[dict[str, str]]] = []

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: type | None = None,
    ) -> ScriptedResult:
        self.calls += 1
        self.requests.append([dict(m) for m in messages])
        prompt = messages[0]["content"]
        if JUDGE_MARK not in prompt:
            raise AssertionError(f"ScriptedJudge does not recognise this prompt: {prompt[:200]!r}")
        first, second = (_ANSWER[slot].search(prompt).group(1) for slot in ("1", "2"))  # type: ignore[union-attr]
        verdicts = self._verdicts(first, second)
        payload = {"reasoning": f"Compared {len(first.split())} words with {len(second.split())} words.", **verdicts}
        text = self._shape(payload, reasked=len(messages) > 1)
        return ScriptedResult(text=text, prompt_tokens=len(prompt) // 4, completion_tokens=len(text) // 4)

    def _verdicts(self, first: str, second: str) -> dict[str, str]:
        if self.policy == "first":
            return dict.fromkeys(CRITERIA, "1")
        if self.policy == "tie":
            return dict.fromkeys(CRITERIA, "tie")
        return length_verdicts(first, second)

    def _shape(self, payload: dict[str, str], *, reasked: bool) -> str:
        mode = self.malformed
        if mode == "always_garbage" or (mode == "garbage" and not reasked):
            return "Both answers have merits; I would rather not pick one."
        if reasked or mode is None:
            return json.dumps(payload)
        if mode == "prose":
            return f"Here is my verdict:\n```json\n{json.dumps(payload, indent=2)}\n```\nHope this helps."
        if mode == "truncated":
            full = json.dumps(payload)
            return full[: full.rindex('"') + 1]  # cut inside the object: no closing brace
        labels = {"1": "Answer 1", "2": 2, "tie": "TIE"}
        return json.dumps({key: labels.get(value, value) for key, value in payload.items()})


class ScriptedQuestionWriter:
    """TEST DOUBLE of the question-generator model (see the module docstring)."""

    def __init__(self, *, fail_tasks: Sequence[str] = ()) -> None:
        self.fail_tasks = set(fail_tasks)
        self.calls = 0

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: type | None = None,
    ) -> ScriptedResult:
        self.calls += 1
        prompt = messages[0]["content"]
        if PERSONAS_MARK in prompt:
            n_personas = int(re.search(r"Identify (\d+) distinct", prompt).group(1))  # type: ignore[union-attr]
            n_tasks = int(re.search(r"each user (\d+) distinct", prompt).group(1))  # type: ignore[union-attr]
            personas = [
                {
                    "name": f"reader {p}",
                    "description": f"a reader of kind {p}",
                    "tasks": [f"task {p}.{t}" for t in range(n_tasks)],
                }
                for p in range(n_personas)
            ]
            return ScriptedResult(text=json.dumps({"personas": personas}))
        if QUESTIONS_MARK in prompt:
            task = _TAG["task"].search(prompt).group(1)  # type: ignore[union-attr]
            if task in self.fail_tasks:
                return ScriptedResult(text="no questions today")
            n = int(re.search(r"Write (\d+) distinct questions", prompt).group(1))  # type: ignore[union-attr]
            questions = [f"How does the story develop theme {i} for {task}?" for i in range(n - 1)]
            questions.append("What are the main themes of the corpus?")
            return ScriptedResult(text=json.dumps({"questions": questions}))
        raise AssertionError(f"ScriptedQuestionWriter does not recognise this prompt: {prompt[:200]!r}")
