"""What the server reports about itself, and the versions driftrag accepts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from driftrag.errors import UnsupportedServerError


class ServerInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    edition: str


class VectorIndexInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    state: str
    labels: list[str]
    properties: list[str]
    dimensions: int
    similarity: str


def check_server_version(version: str) -> None:
    """Accept Neo4j 5.26+ and the calendar-versioned 2025.x and later; refuse anything older."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError as exc:
        raise UnsupportedServerError(f"cannot read the Neo4j version {version!r}") from exc
    if major >= 2025 or (major == 5 and minor >= 26):
        return
    raise UnsupportedServerError(
        f"Neo4j {version} is not supported: driftrag needs 5.26 LTS or newer (2025.x); "
        "upgrade the server or unset NEO4J_URI to use the project's local Neo4j"
    )
