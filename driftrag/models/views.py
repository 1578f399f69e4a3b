"""A graph view: the entities and relationships of a kb or of one community, optionally capped.

`ViewStorage.read_view` (`driftrag.models.storage`) returns a `GraphView`; the renderers in `driftrag.views`
(Mermaid, HTML, GraphML) turn it into pictures and files. What each field counts is described where the
store reads it (`driftrag.store.views`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewEntity(_Model):
    id: str
    name: str
    type: str | None = None
    aliases: list[str] = Field(default_factory=list, description="Names merged into this entity (short, titled forms).")
    degree: int = Field(ge=0, description="Relationships in the view's scope touching this entity (before a cap).")
    mentions: int = Field(ge=0, description="Valid (existing, enabled) source chunks.")


class ViewRelationship(_Model):
    id: str
    source_id: str
    target_id: str
    type: str | None = None
    weight: float = Field(ge=0, description="Summed per-chunk strengths, as stored.")
    pmi: float
    pmi_estimated: bool = Field(description="True when the graph keeps no PMI and it was computed from counts.")
    source_chunks: int = Field(ge=0, description="Valid (existing, enabled) source chunks.")
    listed_source_chunks: int = Field(ge=0, description="Every source chunk id listed, valid or not.")

    @property
    def mean_strength(self) -> float:
        """Mean per-chunk strength: the stored weight sums one strength per listed source chunk."""
        return self.weight / self.listed_source_chunks if self.listed_source_chunks else 0.0


class GraphView(_Model):
    kb: str
    community_id: str | None = None
    community_level: int | None = None
    community_title: str | None = None
    entities: list[ViewEntity] = Field(default_factory=list, description="Shown entities, sorted by id.")
    relationships: list[ViewRelationship] = Field(default_factory=list, description="Shown, sorted by id.")
    entities_total: int = Field(ge=0, description="Entities in scope before the cap.")
    relationships_total: int = Field(ge=0, description="Relationships in scope before the cap.")
    max_nodes: int | None = None
    truncated: bool = False

    def describe(self, *, with_cut: bool = True) -> str:
        """One line: what is shown, and (unless `with_cut` is false) what the cap cut."""
        scope = f"community {self.community_id}" if self.community_id else "the whole graph"
        text = (
            f"kb {self.kb}, {scope}: {len(self.entities)} of {self.entities_total} entities, "
            f"{len(self.relationships)} of {self.relationships_total} relationships"
        )
        if self.truncated and with_cut:
            text += f"; cut to the {self.max_nodes} highest-degree entities (max_nodes)"
        return text
