"""Start-up time and resident memory of the project's local Neo4j.

Starts and stops the server several times on a spare port (jars already cached after the first
resolution) and prints the median time to Bolt readiness, and resident memory when idle and after a
small write workload (schema + 2,000 nodes with 384-d vectors).

    .venv/bin/python benchmarks/neo4j_startup.py [--runs 3] [--port 17690]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from driftrag.local_neo4j import LocalNeo4j
from driftrag.local_neo4j.resolver import resolve_runtime
from driftrag.models.graph import Chunk, SourceDocument
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.documents import DocumentWriter

DIMENSION = 384


async def _workload(settings: Settings, uri: str) -> None:
    async with Neo4jStore.from_settings(settings, uri) as store:
        await store.connect()
        await store.ensure_schema(DIMENSION)
        document = SourceDocument(id="document-bench", kb="bench", title="bench", text="x", content_hash="h")
        chunks = [
            Chunk(
                id=f"chunk-{i}",
                document_id=document.id,
                index=i,
                text=f"chunk {i}",
                n_tokens=2,
                start_char=0,
                end_char=1,
            )
            for i in range(2000)
        ]
        writer = DocumentWriter(store)
        await writer.upsert_document(document, chunks)
        rng = random.Random(7)
        vectors = [(c.id, [rng.uniform(-1, 1) for _ in range(DIMENSION)]) for c in chunks]
        await writer.set_embeddings("chunk", "bench", vectors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=17690)
    args = parser.parse_args()

    base = Settings(neo4j_uri=None)
    runtime = resolve_runtime(base.neo4j_runtime_dir, base.neo4j_version_range)
    print(
        f"Neo4j {runtime.version} ({runtime.jar_count} jars); heap {base.neo4j_heap_mb} MiB, "
        f"page cache {base.neo4j_pagecache_mb} MiB"
    )
    startup_s, idle_mib, loaded_mib = [], [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as home:
            # A fresh data directory every run; the marker points at the jars already cached.
            settings = base.model_copy(update={"home": Path(home)})
            settings.neo4j_runtime_dir.mkdir(parents=True)
            shutil.copy(base.neo4j_runtime_dir / "resolved.json", settings.neo4j_runtime_dir)
            server = LocalNeo4j(settings, port=args.port)
            started = time.monotonic()
            status = server.start()
            startup_s.append(time.monotonic() - started)
            idle_mib.append(status.resident_mib or 0.0)
            try:
                asyncio.run(_workload(settings, status.bolt_uri))
                loaded_mib.append(server.status().resident_mib or 0.0)
            finally:
                server.stop()
            print(
                f"run {run + 1}: ready in {startup_s[-1]:.1f} s, RSS idle {idle_mib[-1]:.0f} MiB, "
                f"after workload {loaded_mib[-1]:.0f} MiB"
            )
    print(
        f"median start-up {statistics.median(startup_s):.1f} s; median RSS idle "
        f"{statistics.median(idle_mib):.0f} MiB, after workload {statistics.median(loaded_mib):.0f} MiB "
        f"({args.runs} runs, 2-core machine, noisy)"
    )


if __name__ == "__main__":
    main()
