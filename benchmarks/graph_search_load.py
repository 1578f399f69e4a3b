"""Load on the HTTP graph-search endpoint: N concurrent clients for S seconds against the Alice graph.

Builds the Alice graph with the offline extractive ingestion (once: an existing kb with entities is
reused unless --rebuild), starts `driftrag serve` in a subprocess with a fresh API key, then runs
`--clients` concurrent `httpx.AsyncClient`s, each posting graph searches in a rotation of entity-name
queries for `--duration` seconds, and prints throughput, p50/p90/p99 latency and the error count.
Neo4j must be running (`driftrag neo4j start`, or NEO4J_URI / --neo4j-uri).

    .venv/bin/python benchmarks/graph_search_load.py [--clients 20] [--duration 30] [--server-workers 1,2]
        [--neo4j-uri bolt://...] [--corpus PATH]   # default corpus: the copy `driftrag data fetch alice` keeps
        [--record]   # replace the "HTTP graph search" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from driftrag.api.auth import create_key
from driftrag.corpora import corpus_file
from driftrag.errors import KnowledgeBaseNotFoundError
from driftrag.facade import DriftRAG
from driftrag.models.graph import KbCounts
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

KB = "bench-alice-offline"
# Entity names of the story, exact and partial; the ones without a match in the graph are dropped.
CANDIDATE_QUERIES = [
    "Alice", "Queen", "Hatter", "Rabbit", "White Rabbit", "Mock Turtle", "Gryphon", "Cheshire Cat", "King",
    "Duchess", "Dormouse", "Caterpillar", "March Hare", "Mouse", "Bill", "Knave",
]  # fmt: skip


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    statuses: collections.Counter = field(default_factory=collections.Counter)
    exceptions: collections.Counter = field(default_factory=collections.Counter)
    response_bytes: int = 0

    @property
    def errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status != 200) + sum(self.exceptions.values())

    def record(self, began: float, response: httpx.Response) -> None:
        self.latencies.append(time.monotonic() - began)
        self.statuses[response.status_code] += 1
        self.response_bytes += len(response.content)

    def percentile(self, q: int) -> float:
        """The q-th percentile of the latencies (inclusive method), 0 without two of them."""
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else 0.0
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1]

    def error_summary(self) -> str:
        failed = {str(status): n for status, n in sorted(self.statuses.items()) if status != 200}
        failed.update(self.exceptions)
        return ", ".join(f"{what}: {n}" for what, n in failed.items()) or "none"


async def ensure_alice_graph(
    settings: Settings, kb: str, rebuild: bool, corpus: Path | None
) -> tuple[KbCounts, float | None]:
    """The kb's counts, ingesting Alice offline first when it is missing, empty, or --rebuild."""
    rag = DriftRAG(settings)
    await rag.connect(start_local=False)
    try:
        try:
            counts = await rag.stats(kb)
            exists = (await rag.graph_enabled(kb)) is not None
        except KnowledgeBaseNotFoundError:
            exists, counts = False, KbCounts()
        if exists and counts.entities and not rebuild:
            await rag.set_graph_enabled(kb, True)
            return counts, None
        if exists:
            await rag.delete_kb(kb)
        started = time.monotonic()
        alice = corpus_file("alice", home=Settings().home, path=corpus)
        result = await rag.ingest(kb, paths=[alice])
        return result.counts, time.monotonic() - started
    finally:
        await rag.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(env: dict[str, str], port: int, log_path: Path) -> subprocess.Popen:
    log = log_path.open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "driftrag", "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
    )


def server_env(settings: Settings, home: Path, kb: str) -> tuple[dict[str, str], str]:
    """The environment of an offline `driftrag serve` over `settings`' Neo4j, and a read key for `kb`."""
    keys_file = home / "keys.json"
    key, _ = create_key(keys_file, name="load", scopes=["read"], kbs=[kb])
    env = {key_: value for key_, value in os.environ.items() if not key_.startswith(("DRIFTRAG_API_", "OPENAI_"))}
    env.update(
        NEO4J_URI=settings.bolt_uri,
        DRIFTRAG_LLM_PROVIDER="offline",
        DRIFTRAG_HOME=str(home),
        DRIFTRAG_API_KEYS_FILE=str(keys_file),
    )
    return env, key


@contextmanager
def running_server(
    env: dict[str, str], key: str, workers: int, home: Path
) -> Iterator[tuple[str, dict[str, str], subprocess.Popen]]:
    """`driftrag serve` with `workers` processes on a free loopback port, ready: (url, headers, process)."""
    port, log_path = _free_port(), home / f"server-{workers}.log"
    url, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {key}"}
    server = start_server({**env, "DRIFTRAG_API_WORKERS": str(workers)}, port, log_path)
    try:
        wait_ready(url, headers, server, log_path)
        yield url, headers, server
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


def wait_ready(url: str, headers: dict[str, str], server: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited during start-up:\n{log_path.read_text()}")
        try:
            response = httpx.get(f"{url}/api/v1/system", headers=headers, timeout=10)
            if response.json().get("graph_engine") == "Neo4j":
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise SystemExit("the server did not answer within 180 s")


async def pick_queries(url: str, kb: str, headers: dict[str, str]) -> list[tuple[str, int, int]]:
    """(query, entities, relationships) of the candidates that match something."""
    picked = []
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        for query in CANDIDATE_QUERIES:
            response = await client.post(f"/api/v1/knowledge-bases/{kb}/graph-search", json={"query": query})
            response.raise_for_status()
            body = response.json()
            if body["entities"]:
                picked.append((query, len(body["entities"]), len(body["relationships"])))
    if not picked:
        raise SystemExit(f"no candidate query matches an entity of kb {kb}")
    return picked


async def one_client(
    url: str, path: str, headers: dict[str, str], queries: list[str], start: int, deadline: float, tally: Tally
) -> None:
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        turn = start
        while time.monotonic() < deadline:
            query = queries[turn % len(queries)]
            turn += 1
            began = time.monotonic()
            try:
                response = await client.post(path, json={"query": query})
            except httpx.HTTPError as exc:
                tally.exceptions[type(exc).__name__] += 1
                continue
            tally.record(began, response)


async def run_load(url: str, kb: str, headers: dict[str, str], queries: list[str], clients: int, seconds: float):
    tally = Tally()
    path = f"/api/v1/knowledge-bases/{kb}/graph-search"
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*(one_client(url, path, headers, queries, index, deadline, tally) for index in range(clients)))
    return tally, time.monotonic() - started


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def report(tally: Tally, elapsed: float, clients: int, queries: list[tuple[str, int, int]]) -> str:
    """Print the run's figures; return them in one line for the recorded table."""
    done = len(tally.latencies)
    p50, p90, p99 = (tally.percentile(q) for q in (50, 90, 99))
    print(f"\nrotation ({len(queries)} queries): " + ", ".join(f"{q!r} {e}e/{r}r" for q, e, r in queries))
    print(f"clients {clients}, {elapsed:.1f} s, {done} responses ({dict(tally.statuses)})")
    print(f"throughput  {done / elapsed:.1f} req/s")
    print(f"latency     p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(max(tally.latencies))}")
    print(f"errors      {tally.errors} (non-200 responses and transport errors: {dict(tally.exceptions) or 'none'})")
    print(f"mean body   {tally.response_bytes / max(done, 1) / 1024:.1f} KiB")
    print(f"machine     {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end (shared box)")
    return (
        f"{done / elapsed:.1f} req/s, p50 {ms(p50)}, p99 {ms(p99)}, {tally.errors} errors, "
        f"{tally.response_bytes / max(done, 1) / 1024:.0f} KiB bodies"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=30.0, help="Seconds of load.")
    parser.add_argument("--kb", default=KB)
    parser.add_argument("--neo4j-uri", default=None, help="Default: NEO4J_URI, else the local Neo4j.")
    parser.add_argument("--rebuild", action="store_true", help="Ingest Alice again even if the kb exists.")
    parser.add_argument(
        "--corpus", type=Path, help="Alice's text (default: the copy `driftrag data fetch alice` keeps)."
    )
    parser.add_argument("--server-workers", default="1,2", help="DRIFTRAG_API_WORKERS per run, comma separated")
    add_record_option(parser)
    args = parser.parse_args()
    rows: list[list[str]] = []

    with tempfile.TemporaryDirectory(prefix="graph-search-load-") as tmp:
        home = Path(tmp)
        settings = Settings(neo4j_uri=args.neo4j_uri, llm_provider="offline", home=home)
        counts, ingest_s = asyncio.run(ensure_alice_graph(settings, args.kb, args.rebuild, args.corpus))
        built = f"ingested offline in {ingest_s:.0f} s" if ingest_s is not None else "reused"
        print(f"kb {args.kb} ({built}): {counts.entities} entities, {counts.relationships} relationships")

        env, key = server_env(settings, home, args.kb)
        # One run per server worker count, back to back (an A/B pair on the same machine state).
        for workers in [int(value) for value in args.server_workers.split(",")]:
            with running_server(env, key, workers, home) as (url, headers, _):
                picked = asyncio.run(pick_queries(url, args.kb, headers))
                asyncio.run(run_load(url, args.kb, headers, [q for q, _, _ in picked], args.clients, 3.0))  # warm-up
                print(
                    f"\nload: {args.clients} clients x {args.duration:g} s on POST "
                    f".../knowledge-bases/{args.kb}/graph-search, server workers {workers} "
                    f"(load average {os.getloadavg()[0]:.1f} at the start)"
                )
                tally, elapsed = asyncio.run(
                    run_load(url, args.kb, headers, [q for q, _, _ in picked], args.clients, args.duration)
                )
            rows.append(
                [f"{workers} server worker{'s' if workers > 1 else ''}", report(tally, elapsed, args.clients, picked)]
            )
    if args.record:
        note = f"{args.clients} clients x {args.duration:g} s on kb {args.kb} ({counts.relationships} relationships)."
        record("graph-search-load", "HTTP graph search", ["run", "result"], rows, note=note)


if __name__ == "__main__":
    main()
