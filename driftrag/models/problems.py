"""Validation problems as (location, message) pairs that name schema fields only.

Pydantic puts an unknown key of the input into the error's location, and a caller's key may be
hostile (markup, a very long string): such a problem is reported at its parent, with the allowed
fields left to the schema. Messages are pydantic's own, which do not quote the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _location(loc: Iterable[Any]) -> str:
    return ".".join(str(part) for part in loc)


def problems_of(errors: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """`(location, message)` of each error, an unknown key reported at its parent, without the key."""
    problems = []
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "extra_forbidden" and loc:
            problems.append((_location(loc[:-1]), "unknown field (not one of the schema's fields)"))
        else:
            problems.append((_location(loc), str(error.get("msg", "invalid"))))
    return list(dict.fromkeys(problems))
