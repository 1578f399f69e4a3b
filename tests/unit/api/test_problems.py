"""422 problems: the schema's field names only, never the caller's keys or values; few, whatever the input."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from driftrag.api.app import openapi_document
from driftrag.api.models import GraphSearchBody, IngestBody
from driftrag.api.problems import HIDDEN_KEY, MAX_PROBLEMS, UNKNOWN_FIELD, field_problems, schema_names

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def names() -> frozenset[str]:
    return schema_names(openapi_document())


def _problems(model: type[BaseModel], body: object, names: frozenset[str]):
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    # FastAPI prefixes each location with where the value came from.
    errors = [{**error, "loc": ("body", *error["loc"])} for error in caught.value.errors()]
    return field_problems(errors, body, names)


def test_schema_names_hold_fields_and_parameters(names: frozenset[str]) -> None:
    assert {"query", "max_seeds", "texts", "title", "kb", "body"} <= names
    assert HOSTILE not in names


def test_unknown_fields_are_not_named_and_are_listed_once(names: frozenset[str]) -> None:
    body = {"query": "x", **{f"{HOSTILE}{i}": i for i in range(500)}}
    problems, omitted = _problems(GraphSearchBody, body, names)
    assert [(p.location, p.message) for p in problems] == [("body", f"{UNKNOWN_FIELD} (×500)")]
    assert omitted == 0


def test_an_unknown_field_named_like_a_schema_field_is_not_named_either(names: frozenset[str]) -> None:
    problems, _ = _problems(GraphSearchBody, {"query": "x", "texts": []}, names)
    assert [(p.location, p.message) for p in problems] == [("body", UNKNOWN_FIELD)]


def test_nested_locations_keep_schema_names_and_indexes(names: frozenset[str]) -> None:
    body = {"texts": [{"title": "a", "text": "t"}, {"title": 5, "text": "t", HOSTILE: 1}]}
    problems, _ = _problems(IngestBody, body, names)
    locations = {p.location for p in problems}
    assert locations == {"body.texts.1.title", "body.texts.1"}
    assert UNKNOWN_FIELD in {p.message for p in problems if p.location == "body.texts.1"}


def test_a_missing_field_is_named(names: frozenset[str]) -> None:
    problems, _ = _problems(GraphSearchBody, {"max_seeds": 3}, names)
    assert [p.location for p in problems] == ["body.query"]


def test_caller_supplied_keys_of_a_mapping_are_hidden(names: frozenset[str]) -> None:
    class Tagged(BaseModel):
        tags: dict[str, int]

    problems, _ = _problems(Tagged, {"tags": {HOSTILE: "not a number", "ok": 1}}, names | {"tags"})
    assert [p.location for p in problems] == [f"body.tags.{HIDDEN_KEY}"]


def test_problems_are_capped_with_a_count_of_the_rest(names: frozenset[str]) -> None:
    body = {"texts": [{"title": i, "text": "t"} for i in range(MAX_PROBLEMS + 30)]}
    problems, omitted = _problems(IngestBody, body, names)
    assert len(problems) == MAX_PROBLEMS and omitted == 30
    assert problems[0].location == "body.texts.0.title"


def test_nothing_of_a_hostile_body_comes_back(names: frozenset[str]) -> None:
    body = {HOSTILE * 3: HOSTILE, "query": {HOSTILE: [HOSTILE]}, "max_rows": HOSTILE}
    problems, _ = _problems(GraphSearchBody, body, names)
    text = json.dumps([p.model_dump() for p in problems])
    assert "img" not in text and "onerror" not in text
    assert {p.location for p in problems} == {"body", "body.query", "body.max_rows"}
