"""Slow clients against `driftrag serve`: how long until the server closes each, and what they cost others.

N raw-socket connections (half trickling a request header, half a request body after a complete header)
each send one byte every `--trickle-every` seconds, for at most `--max-wait` seconds. Meanwhile one client
sends ordinary graph searches, one after another, until the last slow connection is closed; `--requests`
of them run first without slow clients.
Prints, per slow connection, the seconds until the server closed it and what it answered (a 408, or
nothing for a header that never began), then the latency of the ordinary requests with and without them.

The server is `driftrag serve` in a subprocess on 127.0.0.1 (offline, a fresh read key) over a small kb
ingested offline into a running Neo4j (`--neo4j-uri`, else `NEO4J_URI`, else the local one), with
the time-outs given here (`DRIFTRAG_API_HEADER_TIMEOUT_S`, `DRIFTRAG_API_BODY_TIMEOUT_S`).

    .venv/bin/python benchmarks/slow_clients.py [--connections 10] [--trickle-every 4] [--max-wait 75]
        [--header-timeout 10] [--body-timeout 30] [--requests 40] [--neo4j-uri bolt://...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.graph_search_load import running_server, server_env
from driftrag.errors import KnowledgeBaseNotFoundError
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS

KB = "bench-slow-clients"
QUERY = {"query": "Captain Mirela Voss"}


@dataclass
class Closed:
    kind: str
    seconds: float
    answer: str  # the status line the server wrote, "" for none, "still open" at --max-wait


async def ensure_kb(settings: Settings) -> int:
    """The small harbour corpus ingested offline once; its entity count."""
    rag = DriftRAG(settings)
    await rag.connect(start_local=False)
    try:
        try:
            if (await rag.graph_enabled(KB)) is not None:
                return (await rag.stats(KB)).entities
        except KnowledgeBaseNotFoundError:
            pass
        return (await rag.ingest(KB, texts=CORPUS)).counts.entities
    finally:
        await rag.close()


def trickle(url: str, kind: str, key: str, every_s: float, max_wait_s: float, results: list[Closed]) -> None:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        if kind == "header":
            sock.sendall(b"GET /api/v1/system HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ")
        else:
            head = (
                f"POST /api/v1/knowledge-bases/{KB}/graph-search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            )
            sock.sendall(head.encode())
        started = time.monotonic()
        received = b""
        sock.settimeout(every_s)
        while True:
            if time.monotonic() - started > max_wait_s:
                results.append(Closed(kind, time.monotonic() - started, "still open"))
                return
            try:
                sock.sendall(b"a")
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                break
            received += chunk
    answer = received.split(b"\r\n", 1)[0].decode("latin-1") if received else ""
    results.append(Closed(kind, time.monotonic() - started, answer))


def ordinary(url: str, key: str, count: int, *, while_alive: list[threading.Thread] = ()) -> list[float]:
    """Sequential graph searches: `count` of them, and more while any of `while_alive` runs."""
    latencies: list[float] = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        while len(latencies) < count or any(thread.is_alive() for thread in while_alive):
            started = time.monotonic()
            response = client.post(f"/api/v1/knowledge-bases/{KB}/graph-search", json=QUERY)
            latencies.append(time.monotonic() - started)
            response.raise_for_status()
    return latencies


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"n={len(ordered)}  p50 {statistics.median(ordered) * 1000:.0f} ms  p95 {p95 * 1000:.0f} ms  "
        f"max {ordered[-1] * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=10, help="Slow connections (half header, half body).")
    parser.add_argument("--trickle-every", type=float, default=4.0, help="Seconds between two trickled bytes.")
    parser.add_argument("--max-wait", type=float, default=75.0, help="A slow client gives up after this.")
    parser.add_argument("--header-timeout", type=float, default=10.0, help="DRIFTRAG_API_HEADER_TIMEOUT_S")
    parser.add_argument("--body-timeout", type=float, default=30.0, help="DRIFTRAG_API_BODY_TIMEOUT_S")
    parser.add_argument("--requests", type=int, default=40, help="Ordinary requests per phase.")
    parser.add_argument("--neo4j-uri", default=None, help="Default: NEO4J_URI, else the local Neo4j (running).")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="slow-clients-") as tmp:
        home = Path(tmp)
        settings = Settings(neo4j_uri=args.neo4j_uri, llm_provider="offline", home=home)
        entities = asyncio.run(ensure_kb(settings))
        env, key = server_env(settings, home, KB)
        env.update(
            DRIFTRAG_API_HEADER_TIMEOUT_S=str(args.header_timeout), DRIFTRAG_API_BODY_TIMEOUT_S=str(args.body_timeout)
        )
        with running_server(env, key, 1, home) as (url, _, _):
            ordinary(url, key, 5)  # warm-up
            print(
                f"kb {KB}: {entities} entities; header time-out {args.header_timeout:g} s, body time-out "
                f"{args.body_timeout:g} s; {args.connections} slow connections, one byte every "
                f"{args.trickle_every:g} s, giving up after {args.max_wait:g} s "
                f"(load average {os.getloadavg()[0]:.1f} at the start)"
            )
            alone = ordinary(url, key, args.requests)

            results: list[Closed] = []
            threads = [
                threading.Thread(
                    target=trickle,
                    args=(url, "header" if i % 2 == 0 else "body", key, args.trickle_every, args.max_wait, results),
                )
                for i in range(args.connections)
            ]
            for thread in threads:
                thread.start()
            time.sleep(0.5)  # every slow connection open before the ordinary requests start
            beside = ordinary(url, key, args.requests, while_alive=threads)

    print("\nslow connections (seconds until the server closed them):")
    for kind in ("header", "body"):
        rows = sorted((row for row in results if row.kind == kind), key=lambda row: row.seconds)
        for row in rows:
            print(f"  {kind:6}  {row.seconds:6.1f} s  {row.answer or '(closed without an answer)'}")
    print("\nordinary graph searches, one client, sequential:")
    print(f"  without slow clients: {summary(alone)}")
    print(f"  with slow clients:    {summary(beside)}")


if __name__ == "__main__":
    main()
