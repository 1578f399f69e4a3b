"""Where the CPU of an offline ingestion goes: e5 engine threads against everything else.

Ingests the corpus in this process (offline mode, the given Neo4j, kb `bench-offline-cpu`, deleted at
the end), timing every engine call with its thread's CPU clock, and prints: the run's wall and process
CPU, the engines' CPU and texts, the rest (event loop, extraction, reports, Neo4j driver), and for
each kind of text (chunks, entities, reports) the count, the engine tokens (`E5Engine.token_count`:
the engine runs each text alone, without padding, and windows only texts over 512 tokens) and how many are
duplicates. The engine's CPU over its tokens is the floor a faster schedule cannot go under:
with 2 cores, wall >= CPU / 2.

    .venv/bin/python benchmarks/offline_ingest_cpu.py --neo4j-uri bolt://127.0.0.1:7687 [--corpus PATH]
        [--record]   # replace the "Offline ingestion CPU" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import threading
import time
from pathlib import Path

from driftrag.corpora import corpus_file
from driftrag.facade import DriftRAG
from driftrag.ingestion.indexing import community_text
from driftrag.models.graph import CommunityReport
from driftrag.providers import e5_pool
from driftrag.providers.e5_engine import E5Engine
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

KB = "bench-offline-cpu"


class EngineClock:
    """Wraps `EnginePool._run`: thread CPU seconds, texts and calls of every engine call."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.texts = 0
        self.calls = 0
        self._lock = threading.Lock()
        original = e5_pool.EnginePool._run

        def timed(pool, texts, is_query):
            started = time.thread_time()
            try:
                return original(pool, texts, is_query)
            finally:
                with self._lock:
                    self.cpu += time.thread_time() - started
                    self.texts += len(texts)
                    self.calls += 1

        e5_pool.EnginePool._run = timed


async def embedded_texts(rag: DriftRAG) -> dict[str, list[str]]:
    """The texts each vector of the kb was made from (as `driftrag.ingestion.indexing` builds them)."""
    stores = rag.stores
    layer = await stores.entity_layer.entity_layer(KB)
    entities = [f"{e.name}: {e.summary or (e.descriptions[0] if e.descriptions else '')}" for e in layer.entities]
    state = await stores.communities.community_state(KB)
    reports = [community_text(CommunityReport.model_validate_json(s.output)) for s in state.values() if s.output]
    chunk_ids = sorted(chunk["id"] for chunk in await stores.listing.chunks(KB))
    chunks = list((await stores.extractions.chunk_texts(KB, chunk_ids)).values())
    return {"chunk": chunks, "entity": entities, "community": reports}


async def run(args: argparse.Namespace) -> None:
    clock = EngineClock()
    async with DriftRAG(Settings(llm_provider="offline")) as rag:
        cpu, started, load = time.process_time(), time.monotonic(), os.getloadavg()[0]
        result = await rag.ingest(KB, paths=[args.corpus])
        wall, cpu = time.monotonic() - started, time.process_time() - cpu
        texts = await embedded_texts(rag)
        await rag.delete_kb(KB)
    print(
        f"offline ingestion of {args.corpus.name}: wall {wall:.1f} s, process CPU {cpu:.1f} s  (load {load:.1f} -> "
        f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)"
    )
    print(
        f"  e5 engine threads: {clock.cpu:.1f} CPU s ({100 * clock.cpu / cpu:.0f} %), {clock.texts} texts in "
        f"{clock.calls} calls; everything else {cpu - clock.cpu:.1f} CPU s"
    )
    print("  stages (wall s): " + "  ".join(f"{name} {s:.1f}" for name, s in result.seconds_per_stage.items()))
    counter = E5Engine()
    kinds = {kind: [counter.token_count(text, is_query=False) for text in items] for kind, items in texts.items()}
    total = sum(sum(tokens) for tokens in kinds.values())
    for kind, tokens in kinds.items():
        items = texts[kind]
        print(
            f"  {kind}: {len(items)} texts, {sum(tokens)} tokens ({100 * sum(tokens) / total:.0f} %), longest "
            f"{max(tokens, default=0)}, over 512: {sum(t > 512 for t in tokens)}, duplicates "
            f"{len(items) - len(set(items))}"
        )
    print(f"  engine CPU per 1,000 tokens: {1000 * clock.cpu / total:.2f} s; CPU / 2 cores: {cpu / 2:.1f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS {peak:.0f} MiB")
    if args.record:
        rows = [
            ["wall, process CPU", f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MiB"],
            [
                "e5 engine threads",
                f"{clock.cpu:.1f} CPU s ({100 * clock.cpu / cpu:.0f} %) over {clock.texts} texts and {total:,} engine "
                f"tokens: {1000 * clock.cpu / total:.2f} CPU s per 1,000 tokens",
            ],
            ["everything else", f"{cpu - clock.cpu:.1f} CPU s"],
            *([f"{kind} texts", f"{len(texts[kind])} texts, {sum(tokens):,} tokens"] for kind, tokens in kinds.items()),
        ]
        record("offline-ingest-cpu", "Offline ingestion CPU", ["figure", "value"], rows, note=args.corpus.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--neo4j-uri", default="bolt://127.0.0.1:7687")
    parser.add_argument("--corpus", type=Path, help="The text (default: the copy `driftrag data fetch alice` keeps).")
    add_record_option(parser)
    args = parser.parse_args()
    os.environ["NEO4J_URI"] = args.neo4j_uri
    args.corpus = corpus_file("alice", home=Settings().home, path=args.corpus)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
