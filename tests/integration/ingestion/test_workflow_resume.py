"""An ingestion run stopped between two steps, its context serialised, resumes in another process and
ends with the graph an unstopped run builds."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from workflows.errors import WorkflowCancelledByUser
from workflows.events import StepState, StepStateChanged

from driftrag.ingestion.requests import IngestionResult, IngestRequest
from driftrag.settings import Settings
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart
from tests.fakes.harbor_corpus import DescriptiveChatModel
from tests.support.ingestion import Ingestor, texts_of

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


async def _stopped_after_extraction(ingestor: Ingestor, kb: str) -> dict:
    """Runs the workflow until its extract step has finished, stops it there, returns its context."""
    workflow = IngestionWorkflow(ingestor.deps(DescriptiveChatModel()))
    handler = workflow.run(start_event=IngestStart(request=IngestRequest(kb=kb, texts=texts_of())))
    async for event in handler.stream_events(expose_internal=True):
        if isinstance(event, StepStateChanged) and event.name == "extract":
            if event.step_state == StepState.NOT_RUNNING:
                break
    await handler.cancel_run()
    with contextlib.suppress(WorkflowCancelledByUser):
        await handler
    assert handler.ctx is not None
    return handler.ctx.to_dict()


async def test_a_stopped_ingestion_resumes_from_its_serialised_context_in_a_new_process(
    ingestor: Ingestor, ingest_settings: Settings, kb: str, tmp_path: Path
) -> None:
    saved = await _stopped_after_extraction(ingestor, kb)
    stopped = await ingestor.graph.counts(kb)
    assert stopped.chunks > 0 and stopped.communities == 0 and await ingestor.graph.is_stale(kb)

    context_file, result_file = tmp_path / "context.json", tmp_path / "result.json"
    context_file.write_text(json.dumps(saved), encoding="utf-8")
    env = {**os.environ, "NEO4J_URI": ingest_settings.neo4j_uri, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.support.resume_ingestion", str(context_file), str(ingest_settings.home)]
    run = [*command, str(result_file)]
    done = await asyncio.to_thread(subprocess.run, run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    resumed = IngestionResult.model_validate_json(result_file.read_text(encoding="utf-8"))
    assert resumed.graph_rebuilt and not resumed.stale and resumed.failed_chunks == []
    # What the first process did is in the context it handed over: its stages' times and its documents.
    assert {"documents", "extract", "entities and communities", "embeddings"} <= set(resumed.seconds_per_stage)
    assert [d.status for d in resumed.documents] == ["new"] * len(texts_of())
    unstopped = await ingestor.run(f"{kb}-whole")
    assert resumed.counts == unstopped.result.counts == await ingestor.graph.counts(kb)
    assert resumed.counts.communities > 0
