"""Vector spaces: where a knowledge base's embeddings live, one space per embedder.

A kb's chunks, entities and communities are embedded by one embedder. Their vectors are stored in a
property named for that embedder and searched through three vector indexes named for it, so kbs with
different embedders share a server without sharing an index (and two embedders of the same size never
mix in one):

    space_for("multilingual-e5-small", 384).property   # embedding_multilingual_e5_small_<hash>_384
    space_for("multilingual-e5-small", 384).index("chunk")   # driftrag_chunk_multilingual_e5_small_<hash>_384

A space is created on first use (`Database.claim_vector_space`) and recorded on the kb. Kbs written
before spaces existed keep the indexes shared by every kb of that time (`driftrag_chunk`, … over the
property `embedding`): `SHARED`, adopted as theirs on their next ingestion or query.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from driftrag.errors import ConfigurationError
from driftrag.models.graph import stable_hash

VectorKind = Literal["chunk", "entity", "community"]
KINDS: tuple[VectorKind, ...] = ("chunk", "entity", "community")
SHARED_KEY = "shared"
# Index and property names are written into schema statements (they cannot be parameters): nothing
# but this alphabet ever reaches one.
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,99}$")
_SLUG_CHARS = 40


def checked_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigurationError(f"invalid vector index or property name {name!r}")
    return name


class VectorSpace(BaseModel):
    """One embedder's vector property and indexes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    property: str
    embedder: str | None = None
    dimension: int | None = None

    def index(self, kind: VectorKind) -> str:
        suffix = "" if self.key == SHARED_KEY else f"_{self.key}"
        return checked_name(f"driftrag_{kind}{suffix}")

    def indexes(self) -> dict[VectorKind, str]:
        return {kind: self.index(kind) for kind in KINDS}


SHARED = VectorSpace(key=SHARED_KEY, property="embedding")


def space_for(embedder: str, dimension: int) -> VectorSpace:
    """The space of one embedder: its name made an identifier, a digest of the exact name (two names
    that read alike stay apart) and the dimension."""
    slug = re.sub(r"[^a-z0-9]+", "_", embedder.lower()).strip("_")[:_SLUG_CHARS].strip("_") or "embedder"
    if not slug[0].isalpha():
        slug = f"e_{slug}"
    key = f"{slug}_{stable_hash(embedder, length=6)}_{dimension}"
    return VectorSpace(
        key=checked_name(key), property=checked_name(f"embedding_{key}"), embedder=embedder, dimension=dimension
    )
