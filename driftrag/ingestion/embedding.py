"""Embedding what changed: rows in batches with several requests in flight, and hash bookkeeping so
that only what was embedded counts as done (a failed batch is embedded by the next run)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping

from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.requests import Progress, ProgressCallback
from driftrag.models.graph import CommunityReport, StoredState, stable_hash

log = logging.getLogger(__name__)


def community_text(report: CommunityReport) -> str:
    """What a community's vector is made from."""
    return f"{report.title}\n{report.summary}"


async def embed_changed(
    deps: IngestionDeps,
    kb: str,
    kind: str,
    texts: dict[str, str],
    state: dict[str, StoredState],
    progress: ProgressCallback,
    *,
    nodes_written: asyncio.Event | None = None,
    write_lock: asyncio.Lock | None = None,
) -> tuple[int, int]:
    """(embedded, failed): only what was embedded gets its hash, so a failed batch is embedded next run.
    With `nodes_written`, the vectors are requested at once and stored once it is set; with `write_lock`,
    the vectors and hashes are written under it."""
    hashes = {node_id: stable_hash(text, length=32) for node_id, text in texts.items()}
    stale = sorted(
        node_id
        for node_id, value in hashes.items()
        if node_id not in state or not state[node_id].embedded or state[node_id].embedding_hash != value
    )
    rows = [(node_id, texts[node_id]) for node_id in stale]
    embedded = await embed_rows(
        deps, kb, kind, rows, progress, nodes_written=nodes_written, write_lock=write_lock, hashes=hashes
    )
    return len(embedded), len(stale) - len(embedded)


async def embed_rows(
    deps,
    kb,
    kind,
    rows: list[tuple[str, str]],
    progress,
    *,
    nodes_written: asyncio.Event | None = None,
    write_lock: asyncio.Lock | None = None,
    hashes: Mapping[str, str] | None = None,
) -> set[str]:
    """Embed in batches, several requests in flight (bounded like model calls); returns the ids embedded.
    A batch's vectors are stored once `nodes_written` (if given) is set, under `write_lock` (if given), each
    with its text's hash from `hashes` (if given).

    A batch whose request fails after the embedder's retries is left out, not fatal: the kb then stays
    stale, so the next run embeds it (everything else is reused).
    """
    batch = deps.settings.embed_batch_size
    parts = [rows[start : start + batch] for start in range(0, len(rows), batch)]
    limit = asyncio.Semaphore(deps.settings.llm_concurrency)
    done = 0
    embedded: set[str] = set()

    async def one(part: list[tuple[str, str]]) -> None:
        nonlocal done
        async with limit:
            try:
                vectors = await deps.embedder.aget_text_embedding_batch([text for _, text in part])
            except Exception as exc:  # the provider boundary: any failure of the request
                log.warning(
                    "embedding %d %s texts failed after retries, left for the next run: %s", len(part), kind, exc
                )
                return
        if nodes_written is not None:
            await nodes_written.wait()
        async with write_lock or contextlib.nullcontext():
            await deps.documents.set_embeddings(
                kind, kb, [(node_id, vector) for (node_id, _), vector in zip(part, vectors, strict=True)], hashes
            )
        embedded.update(node_id for node_id, _ in part)
        done += len(part)
        await progress(Progress(stage=f"embed-{kind}", done=done, total=len(rows)))

    await asyncio.gather(*(one(part) for part in parts))
    return embedded
