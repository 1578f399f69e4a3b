"""`QueryOptions`: the per-query options the modes of `driftrag.search.modes` declare that they read.

A module of its own so that the mode registry imports no pydantic: the command line reads the mode
names for its help and the options only when a query runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driftrag.errors import InvalidQueryError


class QueryOptions(BaseModel):
    """Options of one query; each is read by the modes that declare it (`Mode.options`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    community_level: int | None = Field(
        default=None, ge=0, description="Global search: the community level to map over (0 = coarsest)."
    )

    @classmethod
    def of(cls, **values: Any) -> QueryOptions:
        """The options, or InvalidQueryError saying which value is wrong."""
        try:
            return cls(**values)
        except ValidationError as exc:
            error = exc.errors()[0]
            name = ".".join(str(part) for part in error["loc"]) or "options"
            raise InvalidQueryError(f"query option {name}: {error['msg']}") from None

    def given(self) -> set[str]:
        return {name for name, value in self.model_dump().items() if value is not None}
