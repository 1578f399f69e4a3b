"""On the real Neo4j, offline: over the whole sample story and its question set, DRIFT's evidence
recall at the context budget is at least basic search's, overall and for every question type.

DRIFT's pool holds the question's own chunk search and its sources are ranked by relevance to the
original question (`driftrag.search.ranking`), so it should never find less than basic search
within the same budget; this checks it end to end through the evaluation harness."""

from __future__ import annotations

from pathlib import Path

from driftrag.composition import ingestion_deps, query_deps
from driftrag.eval.runner import ensure_kb_has_chunks, run_eval
from driftrag.ingestion.requests import IngestRequest
from driftrag.providers import build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.protocols import Stores
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart

ROOT = Path(__file__).resolve().parents[3]


async def test_drift_recall_is_at_least_basic_on_the_sample_questions(
    neo4j_settings: Settings, store: Neo4jStore, kb: str, tmp_path: Path
) -> None:
    providers = build_providers(neo4j_settings)
    assert providers.mode == "offline"
    stores = Stores.neo4j(store)
    chapters = sorted((ROOT / "data" / "sample").glob("*.md"))
    ingestion = ingestion_deps(neo4j_settings, stores, providers)
    await IngestionWorkflow(ingestion).run(start_event=IngestStart(request=IngestRequest(kb=kb, paths=chapters)))
    try:
        await ensure_kb_has_chunks(stores.graph, kb)
        deps = query_deps(neo4j_settings, stores, providers)
        questions = ROOT / "data" / "questions" / "sample.jsonl"
        summary = await run_eval(deps, kb, questions, ["drift", "basic"], tmp_path / "results", mode=providers.mode)
        assert summary.errors == 0, summary.cost
        metrics = summary.metrics
        drift, basic = metrics.by_method["drift"], metrics.by_method["basic"]
        assert basic.recall is not None and basic.recall > 0
        assert drift.recall is not None and drift.recall >= basic.recall, (drift.recall, basic.recall)
        for question_type, basic_type in metrics.by_method_and_type["basic"].items():
            drift_type = metrics.by_method_and_type["drift"][question_type]
            if basic_type.recall is not None:
                assert drift_type.recall is not None and drift_type.recall >= basic_type.recall, question_type
    finally:
        await GraphStore(store).delete_kb(kb)
