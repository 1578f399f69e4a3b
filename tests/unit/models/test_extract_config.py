"""The extraction config's bounds and its JSON reader: one line naming the fields at fault, never the input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftrag.errors import InvalidExtractConfigError
from driftrag.ingestion.extraction import build_kb_guidance, normalise_type
from driftrag.models.extract_config import MAX_TEXT_CHARS, ExtractConfig, parse_extract_config
from driftrag.models.problems import problems_of

ROOT = Path(__file__).resolve().parents[3]
FRENCH_EXAMPLE = ROOT / "docs" / "examples" / "extract-config.fr.json"


def _refused(data: bytes | str) -> str:
    with pytest.raises(InvalidExtractConfigError) as caught:
        parse_extract_config(data, "config.json")
    message = str(caught.value)
    assert message.startswith("config.json: ") and "\n" not in message
    return message


def test_the_documented_french_example_is_a_valid_coherent_config() -> None:
    config = parse_extract_config(FRENCH_EXAMPLE.read_bytes(), str(FRENCH_EXAMPLE))
    assert config.enabled and "Jeanne Morel" in config.text and config.custom_instructions
    names = {node.name for node in config.nodes}
    assert all(node.name in config.text for node in config.nodes), "example nodes are named in the example text"
    assert {r.node1 for r in config.relations} | {r.node2 for r in config.relations} <= names
    assert {normalise_type(r.type) for r in config.relations} <= {normalise_type(t) for t in config.tags}
    guidance = build_kb_guidance(config)
    assert "ALLOWED RELATIONSHIP TYPES" in guidance and "Jeanne Morel" in guidance and "XIXe siècle" in guidance


def test_an_empty_object_is_the_default_config() -> None:
    assert parse_extract_config("{}") == ExtractConfig()
    assert parse_extract_config(b"\xef\xbb\xbf{}") == ExtractConfig(), "a UTF-8 byte-order mark is tolerated"


def test_malformed_json_names_where() -> None:
    message = _refused('{"tags": ["LEADS",]')
    assert "not valid JSON" in message and "line 1" in message


@pytest.mark.parametrize("data", ["[]", '"LEADS"', "3", "null"])
def test_a_json_value_that_is_not_an_object_is_refused(data: str) -> None:
    assert "must be a JSON object" in _refused(data)


def test_a_deeply_nested_file_is_refused_not_a_crash() -> None:
    assert "nested too deeply" in _refused("[" * 100_000 + "]" * 100_000)


def test_binary_and_wrongly_encoded_files_are_refused() -> None:
    assert "not UTF-8" in _refused(b"\xff\xfe\x00{\x00}")
    assert "not UTF-8" in _refused("{}".encode("latin-1") + b"\xe9")


def test_a_hostile_unknown_key_is_reported_without_being_echoed() -> None:
    hostile = "<script>alert(1)</script>" + "k" * 500
    message = _refused(json.dumps({hostile: 1, "nodes": [{"name": "Lyon", hostile: 2}]}))
    assert "script" not in message and "kkkk" not in message
    assert "(top level): unknown field" in message and "nodes.0: unknown field" in message


def test_a_too_long_text_names_the_field_not_the_text() -> None:
    text = "Jeanne Morel " * (MAX_TEXT_CHARS // 10)
    message = _refused(json.dumps({"text": text}))
    assert message.count("Jeanne") == 0 and "text:" in message and str(MAX_TEXT_CHARS) in message


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"tags": ["отношение"]}, "tags.0"),
        ({"tags": ["   "]}, "tags.0"),
        ({"tags": ["x" * 65]}, "tags.0"),
        ({"tags": "LEADS"}, "tags"),
        ({"nodes": [{"name": ""}]}, "nodes.0.name"),
        ({"nodes": [{"attributes": ["a"]}]}, "nodes.0.name"),
        ({"relations": [{"node1": "A", "node2": "B"}]}, "relations.0.type"),
        ({"enabled": "maybe"}, "enabled"),
        ({"custom_instructions": "x" * 5000}, "custom_instructions"),
        ({"nodes": [{"name": f"n{i}"} for i in range(51)]}, "nodes"),
    ],
)
def test_an_invalid_field_is_named(config: dict, where: str) -> None:
    assert f"{where}: " in _refused(json.dumps(config))


def test_many_problems_are_summed_up_on_one_line() -> None:
    message = _refused(json.dumps({"tags": ["", "", "", "", "", "", ""]}))
    assert "(and 2 more)" in message


def test_an_accented_label_keeps_its_ascii_form() -> None:
    config = parse_extract_config(json.dumps({"tags": ["habite à"]}))
    assert normalise_type(config.tags[0]) == "HABITE_A"


def test_problems_of_reports_an_unknown_key_at_its_parent() -> None:
    errors = [
        {"type": "extra_forbidden", "loc": ("body", "nodes", 0, "<b>"), "msg": "Extra inputs are not permitted"},
        {"type": "extra_forbidden", "loc": ("body", "nodes", 0, "<i>"), "msg": "Extra inputs are not permitted"},
        {"type": "string_too_long", "loc": ("body", "text"), "msg": "String should have at most 5000 characters"},
    ]
    assert problems_of(errors) == [
        ("body.nodes.0", "unknown field (not one of the schema's fields)"),
        ("body.text", "String should have at most 5000 characters"),
    ]
