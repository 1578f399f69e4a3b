"""`Cap`: the bound of a string or a list in a model's answer (`driftrag.providers.structured`).

The bound is both in the answer's JSON schema (`maxLength`/`maxItems`: a model constrained to the
schema stops there) and applied when parsing, tolerantly: a value over its bound is cut, not refused,
so an answer from a model that ignored the schema is still usable.
"""

from __future__ import annotations

from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import CoreSchema, core_schema


class Cap:
    """`Annotated[str, Cap(n)]` or `Annotated[list[...], Cap(n)]`: the schema says `maxLength`/`maxItems`
    n, and validation cuts a longer value to n instead of refusing it."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a cap is at least 1")
        self.limit = limit

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._cut, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        json_schema = handler(schema)
        target = handler.resolve_ref_schema(json_schema)
        target["maxItems" if target.get("type") == "array" else "maxLength"] = self.limit
        return json_schema

    def _cut(self, value: Any) -> Any:
        return value[: self.limit] if isinstance(value, str | list) else value
