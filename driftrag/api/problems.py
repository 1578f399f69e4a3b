"""The `problems` of a 422: where each is, in the schema's own words, and few enough to stay small.

pydantic puts the caller's own keys into an error's location: an unknown field's name, a dict's key.
Echoed, a body of 15,000 unknown fields named `<img src=x onerror=alert(1)>` came back as a larger
422 holding every copy. Here a location keeps only what the schema defines:

- an unknown field is "unknown field (not shown)", at its parent's location;
- any other key the caller supplied that the schema does not name is "(key not shown)";
- list indexes and the schema's own tokens (field names, the union member tried) are kept.

Identical problems are listed once with their count (`(×N)`), at most `MAX_PROBLEMS` of them;
`problems_omitted` of the error body says how many more there were. Messages are pydantic's
(they describe the schema), cut to `MAX_MESSAGE_CHARS`; the one that quotes the input is replaced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from driftrag.api.models import FieldProblem

MAX_PROBLEMS = 20
MAX_MESSAGE_CHARS = 200
_MAX_TOKEN_CHARS = 80
UNKNOWN_FIELD = "unknown field (not shown)"
HIDDEN_KEY = "(key not shown)"
_SOURCES = ("body", "path", "query", "header", "cookie")
# pydantic messages that quote the input; every other one describes what the schema expects.
_QUOTING_MESSAGES = {"union_tag_invalid": "the tag does not match any of the expected tags"}


def schema_names(openapi: Mapping[str, Any]) -> frozenset[str]:
    """Every property name of the document's schemas and every parameter name of its operations."""
    names = set(_SOURCES)
    for schema in openapi.get("components", {}).get("schemas", {}).values():
        names.update(schema.get("properties", {}))
    for operations in openapi.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                names.update(parameter["name"] for parameter in operation.get("parameters", []))
    return frozenset(names)


def _location(loc: tuple[Any, ...], body: Any, names: frozenset[str], *, unknown: bool) -> str:
    parts: list[str] = []
    value = body if loc and loc[0] == "body" else None
    for index, part in enumerate(loc):
        if index == 0:
            parts.append(part if part in _SOURCES else HIDDEN_KEY)
            continue
        if isinstance(part, int):
            parts.append(str(part))
            value = value[part] if isinstance(value, list) and -len(value) <= part < len(value) else None
            continue
        if unknown and index == len(loc) - 1:
            break  # the unknown field's own name: its parent's location is where it is
        part = str(part)
        supplied = isinstance(value, dict) and part in value
        if supplied:
            parts.append(part if part in names else HIDDEN_KEY)
            value = value[part]
        else:
            # Not a key of the input, so the schema's: a missing field's name, the union member tried.
            parts.append(part[:_MAX_TOKEN_CHARS])
    return ".".join(parts)


def _message(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return UNKNOWN_FIELD
    message = _QUOTING_MESSAGES.get(error.get("type", ""), str(error.get("msg", "invalid")))
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return message


def field_problems(
    errors: Iterable[Mapping[str, Any]], body: Any, names: frozenset[str]
) -> tuple[list[FieldProblem], int]:
    """The problems to list (distinct, at most `MAX_PROBLEMS`) and how many distinct ones were left out."""
    counts: Counter[tuple[str, str]] = Counter()
    for error in errors:
        unknown = error.get("type") == "extra_forbidden"
        location = _location(tuple(error.get("loc", ())), body, names, unknown=unknown)
        counts[(location, _message(error))] += 1
    listed = [
        FieldProblem(location=location, message=message if count == 1 else f"{message} (×{count})")
        for (location, message), count in list(counts.items())[:MAX_PROBLEMS]
    ]
    return listed, max(0, len(counts) - MAX_PROBLEMS)
