"""An ingestion says what its extraction will cost before the first chunk is extracted: the chunk count,
the model calls and the basis of both; through the CLI (real processes, offline) and the workflow's events."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

from driftrag.corpora import DATA_DIR
from driftrag.facade import DriftRAG
from driftrag.ingestion.requests import IngestionResult
from driftrag.settings import Settings
from tests.fakes.scripted_llm import ScriptedChatModel
from tests.support.cli import CLI, cli_env, run_cli
from tests.support.ingestion import Ingestor

SAMPLE = sorted((DATA_DIR / "sample").glob("*.md"))
ESTIMATE = re.compile(r"^estimate: (\d[\d,]*) chunks to extract, no model calls \(the offline extractive mode")


def _ingest(uri: str, home: Path, kb: str) -> subprocess.CompletedProcess[str]:
    """`driftrag ingest` with stderr and stdout in one stream, in the order the process wrote them."""
    command = [str(CLI), "ingest", *map(str, SAMPLE[:2]), "--kb", kb]
    env = cli_env(uri, home) | {"COLUMNS": "400"}  # one line per message, however long
    return subprocess.run(command, env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


async def test_the_cli_prints_the_chunk_count_and_the_estimate_before_the_extraction_result(
    neo4j_uri: str, neo4j_settings: Settings, tmp_path: Path, kb: str
) -> None:
    try:
        run = await asyncio.to_thread(_ingest, neo4j_uri, tmp_path, kb)
        assert run.returncode == 0, run.stdout[-3000:]
        lines = run.stdout.splitlines()
        estimates = [i for i, line in enumerate(lines) if ESTIMATE.match(line)]
        summary = next(i for i, line in enumerate(lines) if line.startswith(f"kb {kb}: "))
        assert len(estimates) == 1 and estimates[0] < summary, run.stdout
        line = lines[estimates[0]]
        chunks = int(ESTIMATE.match(line)[1].replace(",", ""))
        assert f" {chunks} chunks, " in lines[summary], "the count is of the chunks stored and extracted"
        assert "duration not known yet (measured once extraction has run 30 s)" in line
        assert "warning: a large run" not in run.stdout, "a small run is not flagged"

        # Unchanged documents: nothing to extract, nothing estimated. With --json the line stays on stderr.
        again = await asyncio.to_thread(
            run_cli, "ingest", *map(str, SAMPLE[:2]), "--kb", kb, "--json", uri=neo4j_uri, home=tmp_path
        )
        assert again.returncode == 0, again.stderr
        assert IngestionResult.model_validate_json(again.stdout).extracted_chunks == 0
        assert "estimate:" not in again.stderr
    finally:
        async with DriftRAG(neo4j_settings) as rag:
            await rag.delete_kb(kb)


async def test_the_estimate_event_comes_before_any_chunk_and_counts_each_chunks_model_calls(
    ingestor: Ingestor, kb: str
) -> None:
    """With a model: chunks x (1 answer + gleaning rounds); the scripted model finds something new in
    every allowed round, so the bound is met exactly."""
    settings = ingestor.settings.model_copy(update={"max_gleanings": 1})
    chat = ScriptedChatModel(glean_new_rounds=1)
    run = await ingestor.run(kb, chat, settings=settings)
    extract = [event for event in run.events if event.stage == "extract"]
    first = extract[0]
    assert first.done == 0 and first.estimate is not None, "the estimate is the extraction's first event"
    estimate = first.estimate
    stored = sum(document.chunks for document in run.result.documents)
    assert estimate.chunks == first.total == stored == run.result.extracted_chunks
    assert estimate.model_calls == 2 * stored == chat.calls["extract"] + chat.calls["glean"]
    assert "1 answer + 1 gleaning round(s) per chunk" in first.message == estimate.describe()
