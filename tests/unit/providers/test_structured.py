"""Answer schemas: every JSON task's model as a strict, bounded JSON schema, and its one-line key description."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from driftrag.eval.generate import PersonasPayload, QuestionsPayload
from driftrag.eval.judge import JudgeVerdict
from driftrag.ingestion.config_draft import ConfigDraftPayload
from driftrag.models.bounds import Cap
from driftrag.models.graph import (
    ENTITY_TYPES,
    MAX_DESCRIPTION_CHARS,
    MAX_ITEMS_PER_CHUNK,
    MAX_NAME_CHARS,
    MIN_ITEMS_PER_CHUNK,
    ExtractedEntity,
    ExtractionPayload,
    ReportPayload,
    extraction_payload,
    items_for_passage,
)
from driftrag.prompts.examples import example_names_in
from driftrag.providers.structured import (
    StructuredLevels,
    UnboundedSchemaError,
    describe_keys,
    response_format,
    strict_schema,
)
from driftrag.search.global_search.models import MapPayload
from driftrag.search.llm_tasks import EntityNames
from driftrag.search.models import AnswerPayload, ReducedAnswer
from driftrag.settings import Settings

ANSWER_MODELS: list[type[BaseModel]] = [
    ExtractionPayload,
    ReportPayload,
    EntityNames,
    AnswerPayload,
    ReducedAnswer,
    MapPayload,
    JudgeVerdict,
    PersonasPayload,
    QuestionsPayload,
    ConfigDraftPayload,
]
# What OpenAI's strict structured outputs (and llama.cpp's schema grammar) accept.
ACCEPTED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "description",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
}


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("properties", {}).values():
        found += _nodes(child)
    if "items" in node:
        found += _nodes(node["items"])
    for option in node.get("anyOf", []):
        found += _nodes(option)
    return found


@pytest.mark.parametrize("model", ANSWER_MODELS, ids=lambda m: m.__name__)
def test_every_answer_schema_is_strict_and_bounded(model: type[BaseModel]) -> None:
    schema = strict_schema(model)
    assert schema["type"] == "object"
    for node in _nodes(schema):
        assert set(node) <= ACCEPTED, set(node) - ACCEPTED
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
        if node.get("type") == "string":
            assert "enum" in node or 0 < node["maxLength"] <= 8000
        if node.get("type") == "array":
            assert 0 < node["maxItems"] <= 100
    # Fields the parser sets (SkipJsonSchema) are never asked of the model.
    assert not {"unknown_citations", "tolerated", "original_type"} & set(schema["properties"])
    sent = response_format(model)
    assert sent["type"] == "json_schema"
    assert sent["json_schema"] == {"name": model.__name__, "schema": schema, "strict": True}


def test_enums_and_numeric_bounds_are_in_the_schemas() -> None:
    entity = strict_schema(ExtractionPayload)["properties"]["entities"]["items"]["properties"]
    assert entity["type"] == {"enum": [*ENTITY_TYPES, "OTHER"], "type": "string"}
    relation = strict_schema(ExtractionPayload)["properties"]["relationships"]["items"]["properties"]
    assert (relation["strength"]["minimum"], relation["strength"]["maximum"]) == (1, 10)
    report = strict_schema(ReportPayload)["properties"]
    assert (report["rating"]["minimum"], report["rating"]["maximum"]) == (0, 10)
    assert report["findings"]["maxItems"] == 5
    answer = strict_schema(AnswerPayload)["properties"]
    assert (answer["score"]["minimum"], answer["score"]["maximum"]) == (0, 100)
    assert strict_schema(JudgeVerdict)["properties"]["directness"]["enum"] == ["1", "2", "tie"]


def test_a_value_over_its_bound_is_cut_not_refused() -> None:
    entity = ExtractedEntity(name="N" * 500, type="PERSON", description="d" * 5000)
    assert (len(entity.name), len(entity.description)) == (MAX_NAME_CHARS, MAX_DESCRIPTION_CHARS)
    payload = ExtractionPayload(entities=[ExtractedEntity(name=f"E{i}") for i in range(40)])
    assert len(payload.entities) == MAX_ITEMS_PER_CHUNK
    # The entity type the schema offers as a closed list is still parsed from any tame word.
    assert ExtractedEntity(name="Alice", type="CHARACTER").type == "CHARACTER"


def test_an_unbounded_string_or_list_is_refused_when_the_schema_is_made() -> None:
    class Loose(BaseModel):
        text: str

    class LooseList(BaseModel):
        items: list[Annotated[str, Cap(10)]]  # bounded items, an unbounded list

    with pytest.raises(UnboundedSchemaError, match="text"):
        strict_schema(Loose)
    with pytest.raises(UnboundedSchemaError, match="items"):
        strict_schema(LooseList)


@pytest.mark.parametrize("model", ANSWER_MODELS, ids=lambda m: m.__name__)
def test_the_key_description_names_every_key_and_no_content(model: type[BaseModel]) -> None:
    shape = describe_keys(model)
    assert all(f'"{key}"' in shape for key in strict_schema(model)["properties"])
    assert example_names_in(shape) == []
    assert '"properties"' not in shape and "$defs" not in shape


def test_key_descriptions_read_as_the_schema_says() -> None:
    assert describe_keys(EntityNames) == '{"names": [≤20 × string ≤200]}'
    assert describe_keys(ReducedAnswer) == '{"answer": string ≤8000, "citations": [≤20 × string ≤64]}'
    assert '"strength": integer 1-10' in describe_keys(ExtractionPayload)
    assert '"type": one of "PERSON"|' in describe_keys(ExtractionPayload)


def test_auto_only_ever_steps_down_and_a_fixed_level_stays() -> None:
    levels = StructuredLevels("auto", can_send=True)
    assert levels.levels("m", json_mode=True, schema=True) == ("json_schema", "json_object", "off")
    assert levels.levels("m", json_mode=True, schema=False) == ("json_object", "off")
    assert levels.levels("m", json_mode=False, schema=True) == ("off",)
    levels.step_down("m", "off")
    levels.step_down("m", "json_object")  # a call refused late, sent before the first refusal was known
    assert levels.current("m") == "off" and levels.current("other") == "json_schema"
    assert StructuredLevels("json_schema", can_send=True).levels("m", json_mode=True, schema=True) == ("json_schema",)
    # An LLM with no way to say a format gets the prompt alone.
    assert StructuredLevels("auto", can_send=False).levels("m", json_mode=True, schema=True) == ("off",)
    with pytest.raises(ValueError, match="structured"):
        StructuredLevels("grammar", can_send=True)


def test_a_passage_bounds_its_lists_by_its_length() -> None:
    # A small model fills every slot its schema leaves open: a short passage gets few, a long one the most.
    assert items_for_passage(40) == MIN_ITEMS_PER_CHUNK
    assert items_for_passage(300) == 12
    assert items_for_passage(5000) == MAX_ITEMS_PER_CHUNK
    bounded = strict_schema(extraction_payload(items_for_passage(300)))["properties"]
    assert bounded["entities"]["maxItems"] == bounded["relationships"]["maxItems"] == 12
    assert extraction_payload(12) is extraction_payload(12)
    assert extraction_payload(MAX_ITEMS_PER_CHUNK) is ExtractionPayload


def test_a_report_filled_to_every_bound_fits_its_default_cap() -> None:
    # A constrained report ends inside its output cap even when a model fills every string and list
    # (at about 4 characters a token), so a small model's report is never cut mid-JSON. (An extraction is
    # not bounded so: its cap follows its chunk, and a cut answer is repaired.)
    assert _filled_chars(strict_schema(ReportPayload)) / 4 <= Settings().report_max_tokens


def _filled_chars(node: dict[str, Any]) -> int:
    kind = node.get("type")
    if kind == "object":
        return sum(len(name) + 4 + _filled_chars(child) for name, child in node["properties"].items())
    if kind == "array":
        return node["maxItems"] * (_filled_chars(node["items"]) + 2)
    if kind == "string":
        return node.get("maxLength", max((len(v) for v in node.get("enum", [""])), default=0)) + 2
    return 4
