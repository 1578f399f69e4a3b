"""Alias merge and forms of address through the offline ingestion, against the real Neo4j.

Hand-made texts: one introduces "the Cheshire Cat" and then says "the Cat", and has someone called
"Your Majesty"; another has two turtles whose names share the head, and "the Turtle". The alias is
part of the entity-layer rebuild from chunk checkpoints, so it must follow a delete and a re-ingest.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator

import pytest

from driftrag.composition import ingestion_deps
from driftrag.ingestion import indexing
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.merge import entity_id
from driftrag.ingestion.requests import IngestionResult, IngestRequest, TextInput, no_progress
from driftrag.providers import build_providers
from driftrag.providers.embeddings import AccountedEmbedding
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart
from tests.fakes.hashing_embedding import HashingEmbedding

GARDEN = TextInput(
    title="The Garden",
    text=(
        "Alice walked into the garden, where the Cheshire Cat was sitting on a bough of a tree. "
        "'How do you like the Queen?' said the Cheshire Cat in a low voice.\n\n"
        "Alice looked up at the Cat for a long time. 'Not at all,' said Alice. "
        "The Cat grinned and slowly vanished, beginning with the end of the tail.\n\n"
        "Then the Queen came by. 'Your Majesty,' said Alice, 'the Cat is a friend of mine.' "
        "'Your Majesty must not mind it,' said the King to the Queen, and the Queen frowned at the Cat."
    ),
)
HALL = TextInput(
    title="The Hall",
    text=(
        "Later Alice sat in the hall and thought about the Cat again. "
        "'I wish the Cat would come back,' said Alice to the Duchess. "
        "The Duchess only laughed and said the Cat was mad."
    ),
)
SHORE = TextInput(
    title="The Shore",
    text=(
        "On the shore the Mock Turtle sat beside the Green Turtle. 'Sing us a song,' said the Mock Turtle. "
        "The Green Turtle sang, and the Mock Turtle wept.\n\n"
        "Alice asked the Turtle why it wept. 'Because,' said the Turtle, 'I was once a real Turtle.' "
        "The Green Turtle said nothing, and the Mock Turtle sighed."
    ),
)


@pytest.fixture
async def deps(neo4j_settings: Settings, store: Neo4jStore) -> IngestionDeps:
    # Texts this short name each one-word name in a single chunk: keep those names.
    settings = neo4j_settings.model_copy(update={"offline_min_entity_chunks": 1})
    providers = build_providers(settings)
    deps = ingestion_deps(settings, neo4j_roles(store), providers)
    embedder = AccountedEmbedding(HashingEmbedding(dimension=providers.embedding_dimension), providers.usage)
    return dataclasses.replace(deps, embedder=embedder)


@pytest.fixture
async def kb(deps: IngestionDeps) -> AsyncIterator[str]:
    name = f"test-aliases-{uuid.uuid4().hex[:8]}"
    yield name
    await deps.kbs.delete_kb(name)


async def ingest(deps: IngestionDeps, kb: str, *texts: TextInput) -> IngestionResult:
    request = IngestRequest(kb=kb, texts=list(texts))
    return await IngestionWorkflow(deps).run(start_event=IngestStart(request=request))


async def entities(deps: IngestionDeps, kb: str) -> dict[str, dict]:
    return {row["name"]: row for row in await deps.stores.listing.entities(kb)}


async def test_the_one_word_name_joins_its_multi_word_name_and_address_is_no_entity(
    deps: IngestionDeps, kb: str
) -> None:
    result = await ingest(deps, kb, GARDEN, HALL, SHORE)
    found = await entities(deps, kb)

    assert found["Cheshire Cat"]["aliases"] == ["Cat"]
    assert "Cat" not in found
    # Every chunk that says "the Cat" now points at the Cheshire Cat, the hall's included.
    cat_documents = sum(d.chunks for d in result.documents if d.source in {GARDEN.title, HALL.title})
    assert len(found["Cheshire Cat"]["source_chunk_ids"]) == cat_documents == 2
    assert not any("Majesty" in name for name in found)
    # Two turtles share the head: "Turtle" stays apart, nothing merged into either.
    assert {"Mock Turtle", "Green Turtle", "Turtle"} <= set(found)
    assert found["Mock Turtle"]["aliases"] == found["Green Turtle"]["aliases"] == []
    assert result.counts.aliases == 1


async def test_the_merge_follows_a_delete_and_a_re_ingest(deps: IngestionDeps, kb: str) -> None:
    first = await ingest(deps, kb, GARDEN, HALL)
    before = await entities(deps, kb)
    garden_id = next(d.document_id for d in first.documents if d.source == GARDEN.title)

    await indexing.delete_document(deps, kb, garden_id, no_progress)
    alone = await entities(deps, kb)
    # Without the garden nobody is called the Cheshire Cat: the hall's Cat is its own entity again.
    assert "Cheshire Cat" not in alone
    assert alone["Cat"]["aliases"] == []

    await ingest(deps, kb, GARDEN, HALL)
    after = await entities(deps, kb)
    assert after["Cheshire Cat"]["aliases"] == ["Cat"] and "Cat" not in after

    def shape(rows: dict[str, dict]) -> dict[str, tuple]:
        return {name: (row["id"], row["aliases"], sorted(row["source_chunk_ids"])) for name, row in rows.items()}

    assert shape(after) == shape(before)


async def test_a_titled_form_joins_the_name_and_a_shared_surname_does_not(deps: IngestionDeps, kb: str) -> None:
    quay = TextInput(
        title="The Quay",
        text=(
            "On the quay, Old Mattias Crane trimmed the lamp while Lady Maud Ferrers watched. "
            "'It will hold,' said Old Mattias Crane to Lady Maud Ferrers.\n\n"
            "Old Mattias Crane went home. Later Tom Ferrers came by and spoke with Mattias Crane about the "
            "storm, and Mattias Crane laughed."
        ),
    )
    await ingest(deps, kb, quay)
    found = await entities(deps, kb)
    assert "Mattias Crane" not in found
    assert found["Old Mattias Crane"]["aliases"] == ["Mattias Crane"]
    assert found["Old Mattias Crane"]["id"] == entity_id("mattias crane")
    assert {"Lady Maud Ferrers", "Tom Ferrers"} <= set(found)
    assert found["Lady Maud Ferrers"]["aliases"] == found["Tom Ferrers"]["aliases"] == []
