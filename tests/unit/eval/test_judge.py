"""The judge: parsing of malformed verdicts, counterbalanced trial plans, order mapping, re-asks."""

from __future__ import annotations

from collections import Counter

import pytest

from driftrag.errors import ConfigurationError
from driftrag.eval.judge import (
    CRITERIA,
    InvalidJudgeOutput,
    PairwiseJudge,
    TrialSpec,
    counterbalanced_orders,
    parse_verdict,
    plan_trials,
    to_winner,
)
from driftrag.prompts.registry import PromptRegistry
from tests.fakes.eval_results import run_row
from tests.fakes.judge_llm import ScriptedJudge

VALID = (
    '{"reasoning": "A is fuller.", "comprehensiveness": "1", "diversity": "2", "empowerment": "tie", "directness": "1"}'
)


def slots(raw: str) -> list[str]:
    verdict = parse_verdict(raw)
    return [getattr(verdict, c) for c in CRITERIA]


def test_valid_verdict_keeps_the_reasoning() -> None:
    verdict = parse_verdict(VALID)
    assert verdict.reasoning == "A is fuller."
    assert slots(VALID) == ["1", "2", "tie", "1"]


@pytest.mark.parametrize(
    "raw",
    [
        f"Sure, here it is:\n```json\n{VALID}\n```\nThanks!",  # prose and a fence
        VALID[:-1],  # truncated: no closing brace
        VALID.replace('"1"', '"Answer 1"').replace('"2"', "2").replace('"tie"', '"TIE"'),  # labels and ints
        VALID.replace('"Reasoning"', '"reasoning"').replace('"comprehensiveness"', '"Comprehensiveness"'),  # case
        '{"reasoning": "x", "verdicts": {"comprehensiveness": "answer_1", "diversity": {"winner": "2"}, '
        '"empowerment": "draw", "directness": 1}}',  # nested verdicts
    ],
)
def test_malformed_but_recoverable_verdicts_parse(raw: str) -> None:
    assert slots(raw) == ["1", "2", "tie", "1"]


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "I prefer the first answer.",
        '{"reasoning": "x", "comprehensiveness": "1", "diversity": "2", "empowerment": "tie"}',  # one missing
        '{"reasoning": "x", "comprehensiveness": "3", "diversity": "2", "empowerment": "tie", "directness": "1"}',
        '{"reasoning": "x", "comprehensiveness": "both are good", "diversity": "2", "empowerment": "1", '
        '"directness": "1"}',
        "[1, 2]",
    ],
)
def test_unusable_verdicts_are_refused(raw: str) -> None:
    with pytest.raises(InvalidJudgeOutput):
        parse_verdict(raw)


def test_orders_are_counterbalanced_and_trials_must_be_even() -> None:
    assert counterbalanced_orders(2) == ["ab", "ba"]
    assert Counter(counterbalanced_orders(6)) == {"ab": 3, "ba": 3}
    for odd in (0, 1, 3):
        with pytest.raises(ValueError, match="even"):
            counterbalanced_orders(odd)


def test_every_pair_is_planned_in_both_orders_equally() -> None:
    rows = [run_row(q, m, "answer") for q in ("q1", "q2", "q3") for m in ("drift", "local", "basic")]
    rows[-1] = run_row("q3", "basic", "", error="boom")  # q3's basic answer failed
    specs = plan_trials(rows, ["drift", "local", "basic"], 4)
    by_pair: dict[tuple[str, str, str], Counter[str]] = {}
    for spec in specs:
        by_pair.setdefault((spec.question_id, spec.method_a, spec.method_b), Counter())[spec.order] += 1
    pairs = {(a, b) for _, a, b in by_pair}
    assert pairs == {("drift", "local"), ("drift", "basic"), ("local", "basic")}
    assert all(counts == {"ab": 2, "ba": 2} for counts in by_pair.values())
    # q3 has no basic answer: its basic pairs are not planned.
    assert ("q3", "drift", "basic") not in by_pair and ("q3", "drift", "local") in by_pair
    assert len({spec.key for spec in specs}) == len(specs)


def test_aa_pairs_use_a_second_repeat_when_there_is_one() -> None:
    rows = [run_row("q1", "drift", "x"), run_row("q1", "local", "y"), run_row("q1", "local", "z", repeat=1)]
    specs = plan_trials(rows, ["drift", "local"], 2, aa_methods=["drift", "local"])
    aa = {(s.method_a, s.repeat_a, s.repeat_b) for s in specs if s.aa}
    assert aa == {("drift", 0, 0), ("local", 0, 1)}


def test_slots_map_back_to_methods_through_the_order() -> None:
    assert to_winner("1", "ab") == "a" and to_winner("2", "ab") == "b"
    assert to_winner("1", "ba") == "b" and to_winner("2", "ba") == "a"
    assert to_winner("tie", "ba") == "tie"


def spec(order: str) -> TrialSpec:
    return TrialSpec(question_id="q1", method_a="drift", repeat_a=0, method_b="basic", repeat_b=0, trial=0, order=order)  # type: ignore[arg-type]


async def test_the_judge_sees_the_answers_in_the_trial_order() -> None:
    double = ScriptedJudge()
    judge = PairwiseJudge(double, PromptRegistry.load(), max_tokens=500)
    long, short = "many words in this long answer here", "short answer"
    first = await judge.judge(spec("ab"), "Why?", long, short)
    second = await judge.judge(spec("ba"), "Why?", long, short)
    assert first.slots["comprehensiveness"] == "1" and second.slots["comprehensiveness"] == "2"
    assert (
        first.winners
        == second.winners
        == {
            "comprehensiveness": "a",
            "diversity": "a",
            "empowerment": "a",
            "directness": "b",
        }
    )
    prompt = double.requests[1][0]["content"]
    assert prompt.index(short) < prompt.index(long)
    # The protocol asks for the reasoning before the verdicts.
    assert "reasoning" in prompt and '"reasoning" first' in prompt


@pytest.mark.parametrize("mode", ["prose", "truncated", "labels"])
async def test_malformed_output_is_repaired_without_a_reask(mode: str) -> None:
    double = ScriptedJudge(malformed=mode)
    judgment = await PairwiseJudge(double, PromptRegistry.load(), max_tokens=500).judge(spec("ab"), "?", "a b c", "a")
    assert judgment.error is None and judgment.attempts == 1 and double.calls == 1
    assert judgment.winners["comprehensiveness"] == "a"


async def test_unparseable_output_is_reasked_once_then_recorded_as_failed() -> None:
    double = ScriptedJudge(malformed="garbage")
    judgment = await PairwiseJudge(double, PromptRegistry.load(), max_tokens=500).judge(spec("ab"), "?", "a b", "a")
    assert judgment.error is None and judgment.attempts == 2
    assert "could not be used" in double.requests[1][-1]["content"]
    stubborn = ScriptedJudge(malformed="always_garbage")
    failed = await PairwiseJudge(stubborn, PromptRegistry.load(), max_tokens=500).judge(spec("ab"), "?", "a b", "a")
    assert failed.error is not None and "after 2 attempt" in failed.error and failed.winners == {}
    assert stubborn.calls == 2 and failed.prompt_tokens > 0


def test_no_model_no_judge() -> None:
    with pytest.raises(ConfigurationError, match="needs a model"):
        PairwiseJudge(None, PromptRegistry.load(), max_tokens=500)
