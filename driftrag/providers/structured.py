"""Structured outputs: a task's pydantic answer model as a strict JSON schema, and the levels it is asked at.

OpenAI's strict structured outputs (and llama.cpp's server, vLLM, LM Studio, Ollama's `format`, which
constrain decoding to a schema) want every property required, `additionalProperties: false` and only
the keywords they know. Every string carries `maxLength` and every list `maxItems` (the answer models'
`driftrag.models.bounds.Cap`), so that a constrained answer also ends: a small model that loops is
stopped by its schema, not by its output cap. `describe_keys` writes the same schema as one compact line for the
prompt, in place of a filled-in example a small model would copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from driftrag.settings import Settings

# The keywords strict structured outputs accept (anything else, e.g. `title` or `default`, is dropped).
_KEPT = frozenset(
    {
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
)


class UnboundedSchemaError(ValueError):
    """An answer model has a string or a list without a bound: a constrained answer could run forever."""


# What each `llm_structured` setting does, as `driftrag info` says it.
_SETTING_MEANS = {
    "auto": "auto (the answer's JSON schema first; a model whose server refuses it is asked in JSON mode, "
    "then with the prompt alone, for the rest of the process)",
    "json_schema": "json_schema (the answer's strict JSON schema with every JSON task)",
    "json_object": "json_object (JSON mode, no schema)",
    "off": "off (the prompt alone; answers parsed and repaired)",
}


def structured_outputs(settings: Settings, mode: str) -> str:
    """The `llm_structured` setting and what it means, for `driftrag info` (the level `auto` settles on
    is per model and per process, so only the rule can be shown)."""
    if mode == "offline":
        return f"{settings.llm_structured} (unused: the offline mode asks no model)"
    return _SETTING_MEANS[settings.llm_structured]


def schema_name(model: type[BaseModel]) -> str:
    """The schema's name in a request (`^[a-zA-Z0-9_-]{1,64}$`)."""
    return model.__name__[:64]


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema in the strict form: references inlined, every property required, no extra
    properties, only accepted keywords; raises `UnboundedSchemaError` for an unbounded string or list."""
    raw = model.model_json_schema(mode="validation")
    definitions = raw.pop("$defs", {})
    return _strict(raw, definitions, model.__name__)


def response_format(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI-protocol `response_format` asking for `model`'s schema, strictly."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name(model), "schema": strict_schema(model), "strict": True},
    }


def _strict(node: dict[str, Any], definitions: dict[str, Any], where: str) -> dict[str, Any]:
    if "$ref" in node:
        resolved = definitions[node["$ref"].rsplit("/", 1)[-1]]
        return _strict({**resolved, **{k: v for k, v in node.items() if k != "$ref"}}, definitions, where)
    if "allOf" in node and len(node["allOf"]) == 1:  # pydantic wraps a described reference so
        inner = node["allOf"][0]
        return _strict({**inner, **{k: v for k, v in node.items() if k != "allOf"}}, definitions, where)
    out: dict[str, Any] = {}
    if "const" in node:
        out["enum"] = [node["const"]]
    for key, value in node.items():
        if key not in _KEPT:
            continue
        if key == "properties":
            out[key] = {name: _strict(child, definitions, f"{where}.{name}") for name, child in value.items()}
        elif key == "items":
            out[key] = _strict(value, definitions, f"{where}[]")
        elif key == "anyOf":
            out[key] = [_strict(option, definitions, where) for option in value]
        else:
            out[key] = value
    kind = out.get("type")
    if "enum" in out:  # the list bounds it: the string's own bounds only repeat it
        for redundant in ("pattern", "minLength", "maxLength"):
            out.pop(redundant, None)
    if kind == "object":
        out.pop("description", None)  # a model's docstring is written for its readers, not the model
        out.setdefault("properties", {})
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    elif kind == "string" and "maxLength" not in out and "enum" not in out:
        raise UnboundedSchemaError(f"{where}: a string without maxLength (bound it with `Cap`)")
    elif kind == "array" and "maxItems" not in out:
        raise UnboundedSchemaError(f"{where}: a list without maxItems (bound it with `Cap`)")
    return out


def describe_keys(model: type[BaseModel]) -> str:
    """The expected answer as one compact line, e.g. `{"names": [≤20 × string ≤200]}`: key names, types
    and bounds only, nothing a model could copy as content."""
    return _describe(strict_schema(model))


# The describer's own notation (`string ≤8000`, `[≤20 × …`, `"score": integer 0-100`), which no answer
# writes unless it copied the prompt's key line: `driftrag.search.degenerate` flags an answer holding it.
SHAPE_NOTATION = re.compile(r'\bstring ≤\d+|\[≤\d+ ×|"\w+": (?:string|integer|number)\b')


def _describe(node: dict[str, Any]) -> str:
    if "anyOf" in node:
        return " or ".join(_describe(option) for option in node["anyOf"])
    if "enum" in node:
        return "one of " + "|".join(json.dumps(value, ensure_ascii=False) for value in node["enum"])
    kind = node.get("type")
    describe: Callable[[dict[str, Any]], str] = _SIMPLE.get(str(kind), lambda n: str(kind))
    return describe(node)


def _describe_object(node: dict[str, Any]) -> str:
    return "{" + ", ".join(f'"{name}": {_describe(child)}' for name, child in node["properties"].items()) + "}"


def _describe_array(node: dict[str, Any]) -> str:
    return f"[≤{node['maxItems']} × {_describe(node['items'])}]"


def _describe_string(node: dict[str, Any]) -> str:
    return f"string ≤{node['maxLength']}"


def _describe_number(node: dict[str, Any]) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    bounds = f" {low:g}-{high:g}" if low is not None and high is not None else ""
    return f"{node['type']}{bounds}"


_SIMPLE: dict[str, Callable[[dict[str, Any]], str]] = {
    "object": _describe_object,
    "array": _describe_array,
    "string": _describe_string,
    "integer": _describe_number,
    "number": _describe_number,
}


# How a JSON answer's format is asked, strongest first (the `llm_structured` setting, besides `auto`).
STRUCTURED_LEVELS = ("json_schema", "json_object", "off")
# What a server's refusal of an answer format names (Ollama's own API calls it `format`).
_FORMAT_WORDS = ("response_format", "json_schema")
_OLLAMA_FORMAT_WORDS = (*_FORMAT_WORDS, "format")


class StructuredLevels:
    """The levels one client asks JSON answers at: the setting's one, or with `auto` the strongest not
    yet refused for the model (remembered for the client's life: a server does not learn a format)."""

    def __init__(self, setting: str, *, can_send: bool) -> None:
        if setting != "auto" and setting not in STRUCTURED_LEVELS:
            raise ValueError(f"structured must be auto or one of {STRUCTURED_LEVELS}, not {setting!r}")
        self.setting = setting
        self.can_send = can_send  # False: an LLM with no way to say a format (the prompt alone)
        self._reached: dict[str, str] = {}

    def current(self, model: str, *, schema: bool = True) -> str:
        """The level the next JSON call of `model` (with an answer schema or not) is asked at."""
        if not self.can_send:
            return "off"
        level = self._reached.get(model, "json_schema") if self.setting == "auto" else self.setting
        return "json_object" if level == "json_schema" and not schema else level

    def levels(self, model: str, *, json_mode: bool, schema: bool) -> tuple[str, ...]:
        """The levels to try for one call, in order: one, unless `auto` may still step down."""
        if not json_mode:
            return ("off",)
        first = self.current(model, schema=schema)
        if self.setting != "auto":
            return (first,)
        return STRUCTURED_LEVELS[STRUCTURED_LEVELS.index(first) :]

    def step_down(self, model: str, level: str) -> None:
        """`model`'s server refused the level above `level`. Only ever lower: a call refused late (sent
        before an earlier refusal was known) must not raise a level another call already lowered."""
        reached = self._reached.get(model, STRUCTURED_LEVELS[0])
        if STRUCTURED_LEVELS.index(level) > STRUCTURED_LEVELS.index(reached):
            self._reached[model] = level


def format_kwargs(level: str, schema: type[BaseModel] | None, *, ollama: bool) -> dict[str, Any]:
    """The request option saying `level`: OpenAI's `response_format`, or `format` for Ollama's own class."""
    if level == "off":
        return {}
    if ollama:
        return {"format": strict_schema(schema) if level == "json_schema" and schema is not None else "json"}
    if level == "json_schema" and schema is not None:
        return {"response_format": response_format(schema)}
    return {"response_format": {"type": "json_object"}}


def refuses_format(exc: Exception, *, ollama: bool = False) -> bool:
    """Whether a server refused a request's answer format: an HTTP 400 whose message names it."""
    if getattr(exc, "status_code", None) != 400:
        return False
    message = str(getattr(exc, "message", "") or exc).lower()
    return any(word in message for word in (_OLLAMA_FORMAT_WORDS if ollama else _FORMAT_WORDS))
