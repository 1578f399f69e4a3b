"""The checkpointing extractor: outcomes saved without holding up the next model call, none lost."""

from __future__ import annotations

import asyncio

import pytest

from driftrag.ingestion.extraction import extract_all
from driftrag.ingestion.requests import no_progress
from driftrag.ingestion.task_adapters import CheckpointingExtractor
from driftrag.models.graph import Chunk, ExtractConfig, ExtractionOutcome


def _chunk(i: int) -> Chunk:
    return Chunk(
        id=f"chunk-{i:04d}", document_id="document-1", index=i, text=f"text {i}", n_tokens=2, start_char=0, end_char=6
    )


class _Extractor:
    async def extract(self, chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome:
        await asyncio.sleep(0)
        return ExtractionOutcome(chunk_id=chunk.id)


class _SlowGraph:
    """Records each save; a save waits until `release` is set."""

    def __init__(self, fail: bool = False) -> None:
        self.saves: list[list[str]] = []
        self.release = asyncio.Event()
        self.fail = fail

    async def save_extractions(self, kb: str, outcomes) -> None:
        await self.release.wait()
        if self.fail:
            raise RuntimeError("neo4j write failed")
        self.saves.append([outcome.chunk_id for outcome in outcomes])


async def test_extraction_goes_on_while_a_checkpoint_is_saved_and_every_outcome_is_saved_once():
    graph = _SlowGraph()
    extractor = CheckpointingExtractor(_Extractor(), graph, "kb", 6, no_progress)
    # All six chunks are extracted with one slot, although no save has finished yet.
    outcomes = await asyncio.wait_for(
        extract_all([_chunk(i) for i in range(6)], ExtractConfig(), extractor, concurrency=1), 5
    )
    assert [o.chunk_id for o in outcomes] == [f"chunk-{i:04d}" for i in range(6)]
    assert graph.saves == []
    graph.release.set()
    await extractor.flush()
    saved = [chunk_id for batch in graph.saves for chunk_id in batch]
    assert sorted(saved) == [f"chunk-{i:04d}" for i in range(6)]
    assert len(graph.saves) < 6  # those that finished during a save went into the next one together


async def test_a_failed_checkpoint_save_is_raised_by_flush():
    graph = _SlowGraph(fail=True)
    extractor = CheckpointingExtractor(_Extractor(), graph, "kb", 1, no_progress)
    await extractor.extract(_chunk(0), ExtractConfig())
    graph.release.set()
    with pytest.raises(RuntimeError, match="neo4j write failed"):
        await extractor.flush()
