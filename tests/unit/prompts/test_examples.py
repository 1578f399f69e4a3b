"""Every JSON prompt shows a filled-in example that its own model accepts, with every field present."""

import json

import pytest
from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from driftrag.eval.generate import PersonasPayload, QuestionsPayload
from driftrag.eval.judge import JudgeVerdict
from driftrag.ingestion.config_draft import ConfigDraftPayload
from driftrag.models.graph import ExtractionPayload, ReportPayload
from driftrag.prompts.registry import TASK_PLACEHOLDERS, PromptRegistry
from driftrag.providers.json_answer import json_example
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


def _assert_every_field(model: type[BaseModel], data: object) -> None:
    """Every field the model shows is in the example, recursively (lists checked item by item)."""
    assert isinstance(data, dict)
    assert set(data) == _shown_fields(model), model.__name__
    for name, value in data.items():
        annotation = model.model_fields[name].annotation
        inner = getattr(annotation, "__args__", (annotation,))[0]
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            assert value, f"{model.__name__}.{name} is empty in the example"
            for item in value if isinstance(value, list) else [value]:
                _assert_every_field(inner, item)


def test_every_json_task_has_an_example_model():
    assert set(MODEL_OF_TASK) == {task for task, slots in TASK_PLACEHOLDERS.items() if "example" in slots}


@pytest.mark.parametrize("task", sorted(MODEL_OF_TASK))
def test_rendered_prompt_embeds_an_example_its_model_validates(task):
    model = MODEL_OF_TASK[task]
    example = json_example(model.example())
    values = {slot: f"<{slot}>" for slot in TASK_PLACEHOLDERS[task]}
    text = PromptRegistry.load().render(task, **{**values, "example": example})
    assert example in text
    assert "$defs" not in text and '"properties"' not in text, "a raw JSON schema leaked into the prompt"
    data = json.loads(example)
    model.model_validate(data)
    _assert_every_field(model, data)


def test_answer_payload_requires_every_field():
    """A missing score is not a silent 50 that passes the reduce threshold."""
    for model in (AnswerPayload, ReportPayload, MapPayload, KeyPoint):
        shown = _shown_fields(model)
        assert all(field.is_required() for name, field in model.model_fields.items() if name in shown)


def test_extraction_example_answers_its_passage():
    """The worked example pairs a passage with its answer: every entity name occurs in the passage, and
    nickname and pronoun are resolved to one name, not extracted."""
    from driftrag.models.graph import EXTRACTION_EXAMPLE_PASSAGE

    payload = ExtractionPayload.example()
    names = {entity.name for entity in payload.entities}
    assert all(name in EXTRACTION_EXAMPLE_PASSAGE for name in names)
    assert {"she", "Vanya"}.isdisjoint(names)
    assert all(r.source in names and r.target in names for r in payload.relationships)
