"""On the real Neo4j, offline: over the whole sample story and its question set, the evidence recall
of every graph mode (DRIFT, global, local and entity search) at the context budget is at least basic
search's, overall and for every question type.

Each of them holds the question's own chunk searches (by meaning and by words) in its pool and ranks
what it gathered by relevance to the original question (`driftrag.search.ranking`), so none should find
less than basic search within the same budget; this checks it end to end through the evaluation
harness."""

from __future__ import annotations

from pathlib import Path

from driftrag.composition import ingestion_deps, query_deps
from driftrag.eval.runner import ensure_kb_has_chunks, run_eval
from driftrag.ingestion.requests import IngestRequest
from driftrag.providers import build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart

ROOT = Path(__file__).resolve().parents[3]


async def test_every_graph_mode_finds_at_least_what_basic_search_finds_on_the_sample_questions(
    neo4j_settings: Settings, store: Neo4jStore, kb: str, tmp_path: Path
) -> None:
    providers = build_providers(neo4j_settings)
    assert providers.mode == "offline"
    stores = neo4j_roles(store)
    chapters = sorted((ROOT / "data" / "sample").glob("*.md"))
    ingestion = ingestion_deps(neo4j_settings, stores, providers)
    await IngestionWorkflow(ingestion).run(start_event=IngestStart(request=IngestRequest(kb=kb, paths=chapters)))
    try:
        await ensure_kb_has_chunks(stores.kbs, kb)
        deps = query_deps(neo4j_settings, stores, providers)
        questions = ROOT / "data" / "questions" / "sample.jsonl"
        methods = ["drift", "global", "local", "entity", "basic"]
        summary = await run_eval(deps, kb, questions, methods, tmp_path / "results", mode=providers.mode)
        assert summary.errors == 0, summary.cost
        metrics = summary.metrics
        basic = metrics.by_method["basic"]
        assert basic.recall is not None and basic.recall > 0
        for method in methods[:-1]:
            found = metrics.by_method[method]
            assert found.recall is not None and found.recall >= basic.recall, (method, found.recall, basic.recall)
            for question_type, basic_type in metrics.by_method_and_type["basic"].items():
                method_type = metrics.by_method_and_type[method][question_type]
                if basic_type.recall is not None:
                    assert method_type.recall is not None and method_type.recall >= basic_type.recall, (
                        method,
                        question_type,
                    )
    finally:
        await GraphStore(store).delete_kb(kb)
