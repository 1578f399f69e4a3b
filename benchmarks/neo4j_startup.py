"""Cold and warm start of the project's local Neo4j, and its resident memory.

Cold: an empty driftrag home (no jars, empty Maven repository): `driftrag neo4j fetch` (Maven
resolves the pinned version from the network) then `driftrag neo4j start`, each timed as a user
runs them. Warm: the same home, a fresh data directory every run: `driftrag neo4j start` until Bolt
answers (manifest verification included), resident memory when idle and after a small write
workload (schema + 2,000 nodes with 384-d vectors), then `stop`. The first warm start of a runtime
and JDK records the JVM's class archive (written at its stop); the later ones map it: the median is
over those, the recording start is printed on its own. Prints medians.

    .venv/bin/python benchmarks/neo4j_startup.py [--runs 3] [--port 17690] [--skip-cold] [--record]

`--skip-cold` measures warm starts on `DRIFTRAG_HOME` (resolving there first if needed). `--record`
replaces the "Local Neo4j start" table of docs/benchmarks.md with this run's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from driftrag.local_neo4j import LocalNeo4j
from driftrag.models.graph import Chunk, SourceDocument
from driftrag.models.vector_spaces import space_for
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.documents import DocumentWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

DIMENSION = 384


async def _workload(settings: Settings, uri: str) -> None:
    async with Neo4jStore.from_settings(settings, uri) as store:
        await store.connect()
        await store.ensure_schema()
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
        await store.claim_vector_space("bench", space_for("bench-random", DIMENSION))
        await writer.upsert_document(document, chunks)
        rng = random.Random(7)
        vectors = [(c.id, [rng.uniform(-1, 1) for _ in range(DIMENSION)]) for c in chunks]
        await writer.set_embeddings("chunk", "bench", vectors)


def _cli(home: Path, *args: str) -> tuple[float, dict]:
    """Run `driftrag neo4j <args> --json` as a user would; wall time and the JSON it prints."""
    env = {k: v for k, v in os.environ.items() if k != "NEO4J_URI"} | {"DRIFTRAG_HOME": str(home)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "driftrag", "neo4j", *args, "--json"], capture_output=True, text=True, env=env
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"`driftrag neo4j {' '.join(args)}` failed ({done.returncode}):\n{done.stderr}")
    return elapsed, json.loads(done.stdout)


def _cold(home: Path, port: int) -> list[str]:
    fetch_s, runtime = _cli(home, "fetch")
    start_s, status = _cli(home, "start", "--port", str(port))
    _cli(home, "stop", "--port", str(port))
    shutil.rmtree(LocalNeo4j(Settings(neo4j_uri=None, home=home), port=port).home)
    maven_mib = sum(f.stat().st_size for f in (home / "neo4j" / "m2").rglob("*") if f.is_file()) / 2**20
    print(
        f"cold: fetch (Maven, network) {fetch_s:.1f} s + start {start_s:.1f} s = {fetch_s + start_s:.1f} s; "
        f"Neo4j {runtime['version']}, {runtime['jar_count']} jars, Maven repository {maven_mib:.0f} MiB; "
        f"pid {status['pid']}"
    )
    return [
        "cold, empty home",
        f"`neo4j fetch` {fetch_s:.1f} s ({runtime['jar_count']} jars, {maven_mib:.0f} MiB Maven repository) "
        f"+ first `neo4j start` {start_s:.1f} s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=17690)
    parser.add_argument("--skip-cold", action="store_true", help="only warm starts, on DRIFTRAG_HOME")
    add_record_option(parser)
    args = parser.parse_args()
    rows: list[list[str]] = []

    with tempfile.TemporaryDirectory(prefix="driftrag-cold-") as scratch:
        home = Settings(neo4j_uri=None).home if args.skip_cold else Path(scratch)
        if args.skip_cold:
            _cli(home, "fetch")
        else:
            rows.append(_cold(home, args.port))
        settings = Settings(neo4j_uri=None, home=home)
        print(f"heap {settings.neo4j_heap_mb} MiB, page cache {settings.neo4j_pagecache_mb} MiB")
        startup_s, idle_mib, loaded_mib = [], [], []
        archives = list((home / "neo4j" / "runtime").glob("*/cds/*.jsa"))
        print(f"class archive before the warm starts: {'present' if archives else 'none yet (run 1 records it)'}")
        for run in range(args.runs + (0 if archives else 1)):
            server = LocalNeo4j(settings, port=args.port)
            shutil.rmtree(server.home, ignore_errors=True)  # a fresh data directory every run
            elapsed, status = _cli(home, "start", "--port", str(args.port))
            startup_s.append(elapsed)
            idle_mib.append(status["resident_mib"] or 0.0)
            try:
                asyncio.run(_workload(settings, status["bolt_uri"]))
                loaded_mib.append(server.status().resident_mib or 0.0)
            finally:
                server.stop()
                shutil.rmtree(server.home, ignore_errors=True)
            print(
                f"warm run {run + 1}: `neo4j start` {startup_s[-1]:.1f} s, RSS idle {idle_mib[-1]:.0f} MiB, "
                f"after workload {loaded_mib[-1]:.0f} MiB, load average {os.getloadavg()[0]:.1f}"
                + ("" if archives or run else " (records the class archive; not in the medians)")
            )
        if not archives:
            del startup_s[0], idle_mib[0], loaded_mib[0]
    print(
        f"median warm start {statistics.median(startup_s):.1f} s; median RSS idle "
        f"{statistics.median(idle_mib):.0f} MiB, after workload {statistics.median(loaded_mib):.0f} MiB "
        f"({args.runs} runs, 2-core machine shared with others, noisy)"
    )
    if args.record:
        rows += [
            [
                "warm `neo4j start` with the class archive",
                f"median {statistics.median(startup_s):.1f} s ({min(startup_s):.1f}-{max(startup_s):.1f} s, "
                f"{len(startup_s)} runs)",
            ],
            [
                "resident memory",
                f"{statistics.median(idle_mib):.0f} MiB idle, {statistics.median(loaded_mib):.0f} MiB after the "
                "write workload (medians)",
            ],
        ]
        note = f"Heap {settings.neo4j_heap_mb} MiB, page cache {settings.neo4j_pagecache_mb} MiB."
        record("neo4j-startup", "Local Neo4j start", ["figure", "value"], rows, note=note)


if __name__ == "__main__":
    main()
