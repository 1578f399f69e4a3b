"""The question generator with the scripted writer: personas x tasks x questions, deduplicated."""

from __future__ import annotations

import pytest

from driftrag.errors import ConfigurationError
from driftrag.eval.generate import generate_questions
from driftrag.eval.questions import dump_questions, parse_questions
from tests.fakes.judge_llm import ScriptedQuestionWriter


async def test_personas_tasks_and_questions_multiply_and_repeats_are_dropped() -> None:
    writer = ScriptedQuestionWriter()
    generated = await generate_questions(writer, "A story about a lighthouse.", personas=2, tasks=3, questions=4)
    assert writer.calls == 1 + 2 * 3
    # Each task gives 3 own questions and 1 shared one, kept once.
    assert len(generated.items) == 2 * 3 * 3 + 1
    assert [item.id for item in generated.items[:2]] == ["gen-001", "gen-002"]
    assert {item.type for item in generated.items} == {"global"}
    assert all(item.evidence == [] and item.reference_answer == "" for item in generated.items)
    assert generated.origins["gen-001"] == "reader 0 / task 0.0"
    assert [p.name for p in generated.personas] == ["reader 0", "reader 1"]
    # The drafts are a valid question set.
    assert parse_questions(dump_questions(generated.items)) == generated.items


async def test_a_failed_task_is_reported_and_the_rest_kept() -> None:
    writer = ScriptedQuestionWriter(fail_tasks=["task 0.1"])
    generated = await generate_questions(
        writer, "A story.", personas=1, tasks=2, questions=2, question_type="multi-hop", id_prefix="m"
    )
    assert len(generated.failures) == 1 and "task 0.1" in generated.failures[0]
    assert [item.id for item in generated.items] == ["m001", "m002"]
    assert generated.items[0].type == "multi-hop"
    assert generated.llm_calls == 1 + 1 + 2  # the failed task was re-asked once


async def test_no_model_no_generator() -> None:
    with pytest.raises(ConfigurationError, match="needs a model"):
        await generate_questions(None, "A story.")
