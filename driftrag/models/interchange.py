"""A whole kb as typed rows, as the Microsoft GraphRAG interchange reads it (`driftrag.interop.graphrag`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from driftrag.models.graph import Finding


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoredDocument(_Row):
    id: str
    title: str
    path: str | None = None
    updated_at: str | None = None


class StoredChunk(_Row):
    id: str
    document_id: str
    index: int
    text: str
    n_tokens: int
    embedding: list[float] | None = None


class StoredEntity(_Row):
    id: str
    name: str
    type: str
    description: str
    source_chunk_ids: list[str]
    degree: int
    embedding: list[float] | None = None


class StoredRelationship(_Row):
    id: str
    source_id: str
    target_id: str
    type: str
    description: str
    weight: float
    source_chunk_ids: list[str]


class StoredCommunity(_Row):
    id: str
    level: int
    parent_id: str | None = None
    child_ids: list[str]
    entity_ids: list[str]
    relationship_ids: list[str]
    chunk_ids: list[str]
    title: str | None = None
    summary: str | None = None
    rating: float | None = None
    rating_explanation: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    full_content: str | None = None
    embedding: list[float] | None = None


class StoredKb(_Row):
    """Every layer of one kb, as an export writes it."""

    kb: str
    documents: list[StoredDocument]
    chunks: list[StoredChunk]
    entities: list[StoredEntity]
    relationships: list[StoredRelationship]
    communities: list[StoredCommunity]
