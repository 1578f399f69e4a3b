"""Every JSON prompt describes its answer's keys (from the model its schema is sent from), and no
packaged prompt shows a filled-in example a small model could copy (issue 52)."""

import pytest
from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from driftrag.eval.generate import PersonasPayload, QuestionsPayload
from driftrag.eval.judge import JudgeVerdict
from driftrag.ingestion.config_draft import ConfigDraftPayload
from driftrag.models.graph import ExtractionPayload, ReportPayload
from driftrag.prompts.examples import example_names_in
from driftrag.prompts.registry import TASK_PLACEHOLDERS, PromptRegistry
from driftrag.providers.structured import describe_keys
from driftrag.search.global_search.models import KeyPoint, MapPayload
from driftrag.search.llm_tasks import EntityNames
from driftrag.search.models import AnswerPayload, ReducedAnswer

MODEL_OF_TASK: dict[str, type[BaseModel]] = {
    "extract_graph": ExtractionPayload,
    "repair_json": ExtractionPayload,
    "community_report": ReportPayload,
    "query_entities": EntityNames,
    "local_answer": AnswerPayload,
    "drift_primer": AnswerPayload,
    "drift_reduce": ReducedAnswer,
    "global_map": MapPayload,
    "global_reduce": ReducedAnswer,
    "judge_pairwise": JudgeVerdict,
    "generate_personas": PersonasPayload,
    "generate_questions": QuestionsPayload,
    "suggest_extract_config": ConfigDraftPayload,
}


def _shown_fields(model: type[BaseModel]) -> set[str]:
    return {
        name
        for name, field in model.model_fields.items()
        if not any(isinstance(m, SkipJsonSchema) for m in field.metadata) and "SkipJsonSchema" not in repr(field)
    }


def test_every_json_task_describes_its_answer_shape():
    assert set(MODEL_OF_TASK) == {task for task, slots in TASK_PLACEHOLDERS.items() if "answer_shape" in slots}


@pytest.mark.parametrize("task", sorted(MODEL_OF_TASK))
def test_rendered_prompt_shows_the_answer_shape_not_a_schema(task):
    shape = describe_keys(MODEL_OF_TASK[task])
    values = {slot: f"<{slot}>" for slot in TASK_PLACEHOLDERS[task]}
    text = PromptRegistry.load().render(task, **{**values, "answer_shape": shape})
    assert shape in text
    assert "$defs" not in text and '"properties"' not in text, "a raw JSON schema leaked into the prompt"
    # Every key the model is asked for is named.
    assert all(f'"{name}"' in shape for name in _shown_fields(MODEL_OF_TASK[task]))


def test_no_packaged_prompt_holds_an_example_a_model_could_copy():
    registry = PromptRegistry.load()
    for name in registry.names:
        assert example_names_in(registry.template(name)) == [], name
        assert "EXAMPLE" not in registry.template(name), name


def test_answer_payload_requires_every_field():
    """A missing score is not a silent 50 that passes the reduce threshold."""
    for model in (AnswerPayload, ReportPayload, MapPayload, KeyPoint):
        shown = _shown_fields(model)
        assert all(field.is_required() for name, field in model.model_fields.items() if name in shown)
