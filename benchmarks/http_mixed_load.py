"""Mixed HTTP load and soak: N clients issue a weighted mix of API calls against `driftrag serve` on Alice.

The same set-up as `graph_search_load.py` (the offline Alice kb, `driftrag serve` in a subprocess on
127.0.0.1 with a fresh read key, one run per `--server-workers` value, back to back), but each request
of each client is drawn from `--mix` (seeded), and the resident memory of the server, of each of its
worker processes and of the local Neo4j is sampled every `--sample-every` seconds during the run.
Prints per operation: count, req/s, p50/p95/p99 and errors by status; the total; then the memory
summary (first and last minute medians, peak, growth per minute after a minute of warm-up, flat or
not), and with `--print-series` every sample.

The default mix, in weights (any subset, any weights with `--mix`):

    graph-search=55  POST …/graph-search, the entity-name rotation of graph_search_load.py
    local=25         POST …/query {"mode": "local"}, the Alice development questions in turn
    stats=10         GET  …/stats
    kb-list=5        GET  /api/v1/knowledge-bases
    basic=4          POST …/query {"mode": "basic"}
    drift=1          POST …/query {"mode": "drift"}

Why this mix: a front end over the API mostly browses the graph (graph search is what a UI calls per
keystroke or click), asks questions less often, local search being the cheap graph-aware mode, and
reads counts when it shows a kb; DRIFT costs about ten local queries of CPU offline (many local
searches and a reduce), so a small share of it is already a large share of the server's work.

    .venv/bin/python benchmarks/http_mixed_load.py [--clients 20] [--duration 60] [--server-workers 1,2]
    .venv/bin/python benchmarks/http_mixed_load.py --duration 300 --server-workers 2 --print-series   # soak
        [--mix graph-search=50,local=25,...] [--sample-every 5] [--neo4j-uri bolt://...] [--corpus PATH]
        [--record]   # replace the "HTTP mixed load" table of docs/benchmarks.md, or "HTTP soak" for a run of
                     # --duration 300 or more
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.graph_search_load import (
    KB,
    Tally,
    ensure_alice_graph,
    ms,
    pick_queries,
    running_server,
    server_env,
)
from benchmarks.process_memory import MemorySampler, print_series, print_summary, summarise
from benchmarks.record import add_record_option, record
from driftrag.eval.questions import load_questions
from driftrag.local_neo4j import LocalNeo4j
from driftrag.settings import Settings

DEFAULT_MIX = "graph-search=55,local=25,stats=10,kb-list=5,basic=4,drift=1"
QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "questions" / "alice.jsonl"
QUERY_MODES = ("local", "basic", "drift")


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str
    bodies: tuple[dict, ...] = ()  # taken in turn; none for a GET


def parse_mix(text: str) -> dict[str, float]:
    mix: dict[str, float] = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        try:
            mix[name.strip()] = float(weight)
        except ValueError:
            raise SystemExit(f"--mix: {part!r} is not name=weight") from None
    if not mix or any(weight < 0 for weight in mix.values()) or not sum(mix.values()):
        raise SystemExit("--mix needs at least one positive weight")
    return mix


def operations(kb: str, names: list[str], graph_queries: list[str], questions: list[str]) -> dict[str, Operation]:
    base = f"/api/v1/knowledge-bases/{kb}"
    known = {
        "graph-search": Operation(
            "graph-search", "POST", f"{base}/graph-search", tuple({"query": q} for q in graph_queries)
        ),
        "stats": Operation("stats", "GET", f"{base}/stats"),
        "kb-list": Operation("kb-list", "GET", "/api/v1/knowledge-bases"),
        **{
            mode: Operation(mode, "POST", f"{base}/query", tuple({"question": q, "mode": mode} for q in questions))
            for mode in QUERY_MODES
        },
    }  # fmt: skip
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"--mix: unknown operation(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return {name: known[name] for name in names}


async def one_client(
    url: str,
    headers: dict[str, str],
    ops: list[Operation],
    weights: list[float],
    index: int,
    seed: int,
    deadline: float,
    tallies: dict[str, Tally],
) -> None:
    rng = random.Random(seed * 1000 + index)
    turns = dict.fromkeys((op.name for op in ops), index)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=300) as client:
        while time.monotonic() < deadline:
            op = rng.choices(ops, weights)[0]
            body = op.bodies[turns[op.name] % len(op.bodies)] if op.bodies else None
            turns[op.name] += 1
            began = time.monotonic()
            try:
                response = await client.request(op.method, op.path, json=body)
            except httpx.HTTPError as exc:
                tallies[op.name].exceptions[type(exc).__name__] += 1
                continue
            tallies[op.name].record(began, response)


async def run_mix(
    url: str,
    headers: dict[str, str],
    mix: dict[str, Operation],
    weights: dict[str, float],
    clients: int,
    seconds: float,
    seed: int,
    sampler: MemorySampler | None = None,
) -> tuple[dict[str, Tally], float]:
    tallies = {name: Tally() for name in mix}
    ops = list(mix.values())
    started = time.monotonic()
    deadline = started + seconds
    loads = [
        one_client(url, headers, ops, [weights[op.name] for op in ops], index, seed, deadline, tallies)
        for index in range(clients)
    ]
    await asyncio.gather(*loads, *([sampler.run(deadline)] if sampler else []))
    return tallies, time.monotonic() - started


def report(tallies: dict[str, Tally], elapsed: float) -> list[str]:
    """Print the run's table; return its total and each operation's figures as recorded-table cells."""
    print(f"{'operation':<14}{'count':>8}{'req/s':>9}{'p50':>11}{'p95':>11}{'p99':>11}{'KiB':>7}  errors by status")
    for name, tally in tallies.items():
        count = len(tally.latencies)
        cells = (ms(tally.percentile(q)) for q in (50, 95, 99))
        print(
            f"{name:<14}{count:>8}{count / elapsed:>9.1f}" + "".join(f"{cell:>11}" for cell in cells)
            + f"{tally.response_bytes / max(count, 1) / 1024:>7.1f}  {tally.error_summary()}"
        )  # fmt: skip
    total = Tally()
    for tally in tallies.values():
        total.latencies += tally.latencies
        total.statuses.update(tally.statuses)
        total.exceptions.update(tally.exceptions)
        total.response_bytes += tally.response_bytes
    count = len(total.latencies)
    cells = (ms(total.percentile(q)) for q in (50, 95, 99))
    print(
        f"{'total':<14}{count:>8}{count / elapsed:>9.1f}" + "".join(f"{cell:>11}" for cell in cells)
        + f"{total.response_bytes / max(count, 1) / 1024:>7.1f}  {total.error_summary()}"
    )  # fmt: skip
    print(f"errors        {total.errors}")
    parts = [
        f"{name} {len(tally.latencies) / elapsed:.1f} req/s p50 {ms(tally.percentile(50))} "
        f"p99 {ms(tally.percentile(99))}"
        for name, tally in tallies.items()
    ]
    return [f"{count / elapsed:.1f} req/s, {count} requests, {total.errors} errors", "; ".join(parts)]


def neo4j_pid(neo4j_uri: str | None) -> int | None:
    """The local Neo4j's pid (the one `driftrag neo4j start` runs), None for a remote NEO4J_URI."""
    if neo4j_uri or os.environ.get("NEO4J_URI"):
        return None
    return LocalNeo4j(Settings()).status().pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="Seconds of load (300 for the soak).")
    parser.add_argument("--mix", default=DEFAULT_MIX, help=f"Operation weights (default {DEFAULT_MIX}).")
    parser.add_argument("--seed", type=int, default=15, help="Seed of each client's draws.")
    parser.add_argument("--sample-every", type=float, default=5.0, help="Seconds between memory samples.")
    parser.add_argument("--print-series", action="store_true", help="Print every memory sample.")
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
    weights = parse_mix(args.mix)
    questions = [item.question for item in load_questions(QUESTIONS)]
    # Windows of the memory summary: a minute, or a quarter of a short run.
    window_s = min(60.0, args.duration / 4)

    with tempfile.TemporaryDirectory(prefix="http-mixed-load-") as tmp:
        home = Path(tmp)
        settings = Settings(neo4j_uri=args.neo4j_uri, llm_provider="offline", home=home)
        counts, ingest_s = asyncio.run(ensure_alice_graph(settings, args.kb, args.rebuild, args.corpus))
        built = f"ingested offline in {ingest_s:.0f} s" if ingest_s is not None else "reused"
        print(f"kb {args.kb} ({built}): {counts.entities} entities, {counts.relationships} relationships")
        print(f"mix: {', '.join(f'{name} {weight:g}' for name, weight in weights.items())} (weights)")
        env, key = server_env(settings, home, args.kb)
        others = {"neo4j": pid} if (pid := neo4j_pid(args.neo4j_uri)) else {}
        for workers in [int(value) for value in args.server_workers.split(",")]:
            with running_server(env, key, workers, home) as (url, headers, server):
                graph_queries = [query for query, _, _ in asyncio.run(pick_queries(url, args.kb, headers))]
                mix = operations(args.kb, list(weights), graph_queries, questions)
                asyncio.run(run_mix(url, headers, mix, weights, args.clients, 5.0, args.seed + 1))  # warm-up
                start_load = os.getloadavg()
                print(
                    f"\nmixed load: {args.clients} clients x {args.duration:g} s, server workers {workers} "
                    f"(load average {start_load[0]:.1f} / {start_load[1]:.1f} / {start_load[2]:.1f} at the start)"
                )
                sampler = MemorySampler(server.pid, others, every_s=args.sample_every)
                tallies, elapsed = asyncio.run(
                    run_mix(url, headers, mix, weights, args.clients, args.duration, args.seed, sampler)
                )
                end_load = os.getloadavg()
            print(
                f"{elapsed:.1f} s; load average {end_load[0]:.1f} / {end_load[1]:.1f} / {end_load[2]:.1f} at the end "
                f"({os.cpu_count()} CPUs, shared machine)"
            )
            total, per_operation = report(tallies, elapsed)
            print_summary(sampler.series, sampler.cpu, warmup_s=window_s, window_s=window_s, every_s=args.sample_every)
            memory = summarise(sampler.series["server"], window_s=window_s, warmup_s=window_s)
            rows.append(
                [
                    f"{workers} server worker{'s' if workers > 1 else ''}, {args.duration:g} s",
                    total,
                    per_operation,
                    f"{memory.first_median:.1f} → {memory.last_median:.1f} MiB, peak {memory.peak:.1f} MiB, "
                    f"{memory.growth_per_min:+.2f} MiB/min ({'flat' if memory.flat else 'grows'})",
                ]
            )
            if args.print_series:
                print_series(sampler.series)
    if args.record:
        name, title = ("http-soak", "HTTP soak") if args.duration >= 300 else ("http-mixed-load", "HTTP mixed load")
        columns = ["run", "total", "per operation", "server resident memory (first → last window)"]
        note = f"{args.clients} clients, mix {args.mix}, memory sampled every {args.sample_every:g} s."
        record(name, title, columns, rows, note=note)


if __name__ == "__main__":
    main()
