"""Ingest the sample corpus through the local OpenAI-compatible test server twice: once fault-free, once
with random faults (by default 20 % 429/500, 5 % malformed bodies, 2 % time-outs, a fixed seed), and
print the calls, retries, failed chunks and whether the two graphs are equal.

Chat answers come from the scripted test double (`tests/fakes/scripted_llm.py`) on the server side,
embeddings are deterministic; the response cache is off, so every call reaches the server.

    .venv/bin/python benchmarks/faults.py [--seed 14] [--neo4j-uri bolt://127.0.0.1:17714]
        [--record]   # replace the "Model-server faults" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from benchmarks.ingest_alice import ScriptedResponder
from benchmarks.record import add_record_option, record
from driftrag.corpora import DATA_DIR
from driftrag.facade import DriftRAG
from driftrag.ingestion.requests import IngestionResult
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer, FaultRates

# 384 d: the dimension of the offline embedder, so the vector indexes of a shared server stay as they are.
DIMENSION = 384
CHAT = "/v1/chat/completions"


async def snapshot(rag: DriftRAG, kb: str) -> dict[str, Any]:
    """The graph without anything run-specific (embeddings, flags): what must match between the runs."""
    entities = sorted(
        (e["id"], e["name"], e["type"], e["summary"], tuple(sorted(e["source_chunk_ids"])))
        for e in await rag.entities(kb)
    )
    relationships = sorted(
        (r["id"], r["source_id"], r["target_id"], r["type"], r["summary"], tuple(sorted(r["source_chunk_ids"])))
        for r in await rag.relationships(kb)
    )
    communities = sorted(
        (c["id"], c["level"], c["title"], c["summary"], c["rating"]) for c in await rag.communities(kb)
    )
    return {"entities": entities, "relationships": relationships, "communities": communities}


async def ingest(settings: Settings, kb: str) -> tuple[IngestionResult, dict[str, Any], float]:
    rag = DriftRAG(settings)
    await rag.connect(start_local=False)
    try:
        await rag.delete_kb(kb)
        started = time.monotonic()
        result = await rag.ingest(kb, paths=[DATA_DIR / "sample"])
        seconds = time.monotonic() - started
        graph = await snapshot(rag, kb)
        await rag.delete_kb(kb)
        return result, graph, seconds
    finally:
        await rag.close()


async def run_once(args: argparse.Namespace, rates: FaultRates | None, kb: str):
    with (
        tempfile.TemporaryDirectory(prefix="bench-faults-") as home,
        FakeOpenAIServer(responder=ScriptedResponder(), embedding_dimension=DIMENSION, fault_rates=rates) as server,
    ):
        settings = Settings(
            _env_file=None,
            openai_api_key="bench",
            openai_base_url=server.base_url,
            llm_provider="openai",
            neo4j_uri=args.neo4j_uri,
            home=Path(home),
            embedding_dimensions=DIMENSION,
            llm_cache=False,
            llm_timeout_s=args.timeout,
            llm_max_retries=args.retries,
            connect_retries=3,
        )
        result, graph, seconds = await ingest(settings, kb)
        requests = server.request_count
        chat_requests = len(server.requests_to(CHAT))
        return result, graph, seconds, requests, chat_requests, dict(server.faults_served)


async def main(args: argparse.Namespace) -> None:
    rates = FaultRates(
        rate_limit=args.rate_limit,
        server_error=args.server_error,
        malformed_json=args.malformed,
        timeout=args.timeouts,
        timeout_s=args.timeout * 1.5,
        seed=args.seed,
    )
    clean, clean_graph, clean_s, clean_requests, clean_chat, _ = await run_once(args, None, "bench-faults-clean")
    faulty, faulty_graph, faulty_s, requests, chat_requests, served = await run_once(args, rates, "bench-faults")
    logical_chat = faulty.usage.chat_calls + faulty.usage.failed_calls
    print(
        f"fault shares: 429 {args.rate_limit:.0%}, 500 {args.server_error:.0%}, malformed {args.malformed:.0%}, "
        f"time-out {args.timeouts:.0%} (seed {args.seed}); client: {args.retries} retries, {args.timeout:g} s time-out"
    )
    print(f"fault-free run: {clean_requests} requests ({clean_chat} chat), {clean_s:.1f} s")
    print(f"faulty run:     {requests} requests ({chat_requests} chat), {faulty_s:.1f} s")
    print(f"faults served:  {served}")
    print(
        f"chat calls:     {faulty.usage.chat_calls} answered, {faulty.usage.failed_calls} failed after retries, "
        f"{chat_requests - logical_chat} retried requests in all ({faulty.usage.retried_calls} of them "
        "unreadable bodies)"
    )
    print(f"embedding requests answered: {faulty.usage.embedding_requests}")
    print(f"failed chunks:  {len(faulty.failed_chunks)} (fault-free: {len(clean.failed_chunks)})")
    print(f"counts:         {faulty.counts.model_dump()}\nfault-free:     {clean.counts.model_dump()}")
    equal = faulty_graph == clean_graph
    print(f"graph equals the fault-free one: {'yes' if equal else 'NO'}")
    if not equal:
        for part in ("entities", "relationships", "communities"):
            missing = set(clean_graph[part]) - set(faulty_graph[part])
            extra = set(faulty_graph[part]) - set(clean_graph[part])
            print(f"  {part}: {len(missing)} missing, {len(extra)} differing or extra")
    if args.record:
        rows = [
            [
                f"seed {args.seed}",
                f"{chat_requests - logical_chat} retried requests for {logical_chat} chat calls, "
                f"{faulty.usage.failed_calls} failed after retries",
                f"{len(faulty.failed_chunks)} (fault-free {len(clean.failed_chunks)})",
                "yes" if equal else "no",
            ]
        ]
        note = (
            f"Fault shares: 429 {args.rate_limit:.0%}, 500 {args.server_error:.0%}, malformed {args.malformed:.0%}, "
            f"time-out {args.timeouts:.0%}; client: {args.retries} retries, {args.timeout:g} s time-out."
        )
        columns = ["run", "requests", "failed chunks", "graph equal to the fault-free one"]
        record("faults", "Model-server faults", columns, rows, note=note)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--neo4j-uri", default=Settings().bolt_uri, help="default: NEO4J_URI or the local Neo4j")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--rate-limit", type=float, default=0.10, help="share of 429 answers")
    parser.add_argument("--server-error", type=float, default=0.10, help="share of 500 answers")
    parser.add_argument("--malformed", type=float, default=0.05, help="share of malformed 200 bodies")
    parser.add_argument("--timeouts", type=float, default=0.02, help="share of answers slower than the time-out")
    parser.add_argument("--timeout", type=float, default=2.0, help="client time-out per request, seconds")
    parser.add_argument("--retries", type=int, default=3, help="DRIFTRAG_LLM_MAX_RETRIES")
    add_record_option(parser)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
