"""LLM-as-judge: pairwise comparison of the methods' answers, counterbalanced, one JSONL row per trial.

Criteria of the GraphRAG paper (comprehensiveness, diversity, empowerment, directness). Each
(question, pair of methods) is judged an even number of times, half with the first method's answer
shown first and half with it shown second, so a judge that favours a position cannot favour a
method. The judge writes its reasoning before its verdicts. An answer that does not parse is re-asked
once with the parse error; a trial still unusable is recorded as failed. Trials already recorded are
skipped on a rerun. An A/A pair (a method against itself) checks the judge.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, get_args

import json_repair
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from driftrag.errors import ConfigurationError
from driftrag.eval.records import RunRow, now
from driftrag.models.bounds import Cap
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel
from driftrag.providers.json_answer import InvalidModelOutput, ask_json
from driftrag.providers.structured import describe_keys
from driftrag.providers.tokens import words_within

Criterion = Literal["comprehensiveness", "diversity", "empowerment", "directness"]
CRITERIA: tuple[Criterion, ...] = get_args(Criterion)
SlotVerdict = Literal["1", "2", "tie"]
Winner = Literal["a", "b", "tie"]
Order = Literal["ab", "ba"]
_SLOT = re.compile(r"^(?:answer|response)?[\s_#-]*([12])$")
_TIE = {"tie", "draw", "equal", "neither", "both", "none", "0"}


class InvalidJudgeOutput(InvalidModelOutput):
    """The judge's answer is not the JSON verdict the protocol asks for."""


class JudgeVerdict(BaseModel):
    """The judge's protocol: reasoning first, then the winning position per criterion."""

    model_config = ConfigDict(extra="ignore")

    reasoning: Annotated[str, Cap(4000)] = Field(
        description="The comparison on each criterion, written before the verdicts."
    )
    comprehensiveness: SlotVerdict
    diversity: SlotVerdict
    empowerment: SlotVerdict
    directness: SlotVerdict

    @field_validator(*CRITERIA, mode="before")
    @classmethod
    def _slot(cls, value: Any) -> str:
        if isinstance(value, dict):
            value = value.get("winner", value.get("verdict"))
        text = str(value).strip().strip("\"'").lower()
        if text in _TIE:
            return "tie"
        match = _SLOT.match(text)
        if match is None:
            raise ValueError(f"not a verdict: {value!r} (expected '1', '2' or 'tie')")
        return match.group(1)

    @field_validator("reasoning", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)


def parse_verdict(raw: str) -> JudgeVerdict:
    """Repair the JSON (prose, fences, truncation), lower-case the keys, then validate."""
    data = json_repair.loads(raw) if raw.strip() else None
    if isinstance(data, list):
        data = next((item for item in data if isinstance(item, dict)), None)
    if not isinstance(data, dict) or not data:
        raise InvalidJudgeOutput("the answer holds no JSON object")
    data = {str(key).strip().lower(): value for key, value in data.items()}
    if isinstance(data.get("verdicts"), dict):
        data = {**data, **{str(k).lower(): v for k, v in data["verdicts"].items()}}
    data.setdefault("reasoning", "")
    try:
        return JudgeVerdict.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InvalidJudgeOutput(f"invalid verdict: {problems}") from None


class TrialSpec(BaseModel):
    """One judgement to make: `order` "ab" shows A's answer first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question_id: str
    method_a: str
    repeat_a: int
    method_b: str
    repeat_b: int
    trial: int
    order: Order

    @property
    def key(self) -> tuple[str, str, int, str, int, int]:
        return (self.question_id, self.method_a, self.repeat_a, self.method_b, self.repeat_b, self.trial)

    @property
    def aa(self) -> bool:
        return self.method_a == self.method_b


class Judgment(TrialSpec):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reasoning: str = ""
    slots: dict[Criterion, SlotVerdict] = Field(default_factory=dict, description="As the judge gave them.")
    winners: dict[Criterion, Winner] = Field(default_factory=dict, description="Mapped back to A and B.")
    error: str | None = None
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    recorded_at: str = ""


def counterbalanced_orders(trials: int) -> list[Order]:
    """`trials` orders, as many "ab" as "ba", alternating."""
    if trials < 2 or trials % 2:
        raise ValueError(f"trials per pair must be an even number >= 2 (got {trials})")
    return ["ab" if t % 2 == 0 else "ba" for t in range(trials)]


def plan_trials(
    rows: Sequence[RunRow], methods: Sequence[str], trials: int, aa_methods: Sequence[str] = ()
) -> list[TrialSpec]:
    """Every pair of `methods` on every question both answered (repeat 0), and an A/A pair of each
    `aa_methods` (repeat 0 against repeat 1 when there is one, else against itself)."""
    orders = counterbalanced_orders(trials)
    answered = {(row.question_id, row.method, row.repeat) for row in rows if row.error is None}
    question_ids = list(dict.fromkeys(row.question_id for row in rows))
    pairs = [(a, 0, b, 0) for a, b in itertools.combinations(methods, 2)]
    pairs += [(m, 0, m, 1 if any(key[1:] == (m, 1) for key in answered) else 0) for m in aa_methods]
    return [
        TrialSpec(question_id=q, method_a=a, repeat_a=ra, method_b=b, repeat_b=rb, trial=t, order=order)
        for q in question_ids
        for a, ra, b, rb in pairs
        if (q, a, ra) in answered and (q, b, rb) in answered
        for t, order in enumerate(orders)
    ]


def to_winner(slot: SlotVerdict, order: Order) -> Winner:
    if slot == "tie":
        return "tie"
    first_is_a = order == "ab"
    return "a" if (slot == "1") == first_is_a else "b"


class PairwiseJudge:
    """Asks a chat model for one verdict; the prompt comes from the registry (`judge_pairwise`)."""

    def __init__(self, chat: ChatModel | None, prompts: PromptRegistry, *, max_tokens: int) -> None:
        if chat is None:
            raise ConfigurationError(
                "the LLM judge needs a model: set OPENAI_API_KEY (and OPENAI_BASE_URL for an OpenAI-compatible "
                "server); the offline mode has no judge, but `driftrag eval report` gives the retrieval metrics"
            )
        self._chat = chat
        self._prompts = prompts
        self._max_tokens = max_tokens

    async def judge(self, spec: TrialSpec, question: str, answer_a: str, answer_b: str) -> Judgment:
        first, second = (answer_a, answer_b) if spec.order == "ab" else (answer_b, answer_a)
        prompt = self._prompts.render(
            "judge_pairwise",
            answer_shape=describe_keys(JudgeVerdict),
            question=question,
            answer_1=first,
            answer_2=second,
            # Free reasoning must leave room for the verdicts that follow it under the same cap.
            max_reasoning_words=str(words_within(self._max_tokens // 2, cap=150, floor=30)),
        )
        answer = await ask_json(
            self._chat, self._prompts, prompt, parse_verdict, JudgeVerdict, max_tokens=self._max_tokens
        )
        used = {
            "attempts": answer.attempts,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }
        verdict = answer.value
        if verdict is None:
            return _judgment(spec, error=answer.error, **used)
        slots = {criterion: getattr(verdict, criterion) for criterion in CRITERIA}
        winners = {criterion: to_winner(slot, spec.order) for criterion, slot in slots.items()}
        return _judgment(spec, reasoning=verdict.reasoning, slots=slots, winners=winners, **used)


def _judgment(spec: TrialSpec, **fields: Any) -> Judgment:
    return Judgment(**spec.model_dump(), recorded_at=now(), **fields)
