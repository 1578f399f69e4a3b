"""Hostile uploads: small files that expand, and abandoned uploads, against the CLI and `driftrag serve`.

1. The two small files of issue 53, made by `tests/support/hostile_files.py`: an EPUB whose spine names one
   1 MB chapter 400 times (about 4 KB) and a PDF whose page tree lists one page 20,000 times (about 2.5 KB).
   Each is given to `driftrag ingest` (a fresh process: wall time, exit code, peak RSS) and uploaded
   `--uploads` times to the server (`POST …/documents/files`: time to the answer, status); the server's
   resident size (main process) before and after, and the peak of its parse workers.
2. A `basic` query on another kb (the harbour corpus, ingested offline), one client, sequential: its p50
   alone, then while `--abandoned` clients each upload a slow PDF (`--slow-pages` distinct pages, within
   every cap: slow only) and close their connection after `--abandon-after` seconds. Then the CPU the
   server's parse workers still use once every client is gone.

The server is `driftrag serve` in a subprocess on 127.0.0.1 (offline, a fresh manage key) over a running
Neo4j (`--neo4j-uri`, else `NEO4J_URI`, else the local one).

    .venv/bin/python benchmarks/hostile_uploads.py --neo4j-uri bolt://127.0.0.1:7687 [--uploads 10]
        [--abandoned 6] [--abandon-after 3] [--slow-pages 6000] [--queries 20]
        [--record]   # replace the "Hostile uploads" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.graph_search_load import running_server
from benchmarks.record import add_record_option, record
from driftrag.api.auth import create_key
from driftrag.errors import KnowledgeBaseNotFoundError
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.support.hostile_files import many_pages_pdf, repeated_page_pdf, repeated_spine_epub

KB = "bench-hostile-query"
UPLOAD_KB = "bench-hostile-uploads"
QUESTION = "Who sailed into Harbor Town?"


async def ensure_kb(settings: Settings) -> int:
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


def cli_run(path: Path, env: dict[str, str], home: Path) -> tuple[float, int, float, str]:
    """`driftrag ingest PATH`: wall seconds, exit code, peak RSS in MiB of the command and its parse worker
    together (sampled every 20 ms: `wait4`'s figure would count the pages this process had when it forked),
    and the last line it printed."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "driftrag", "ingest", str(path), "--kb", UPLOAD_KB],
        env=env,
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    tree, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        total = 0
        for member in (tree, *_children(tree)):
            try:
                total += member.memory_info().rss
            except psutil.Error:
                pass
        peak = max(peak, total)
        time.sleep(0.02)
    wall = time.monotonic() - started
    lines = [line for line in (process.stdout.read() if process.stdout else "").splitlines() if line.strip()]
    return wall, process.returncode, peak / 1_048_576, lines[-1] if lines else ""


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.Error:
        return []


class Sampler(threading.Thread):
    """The peak resident size of a process's children (the parse workers), sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak_children = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            total = 0
            for child in self.process.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
            self.peak_children = max(self.peak_children, total)
            time.sleep(0.05)


def rss_mib(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 1_048_576


def upload(client: httpx.Client, name: str, data: bytes) -> tuple[float, int, str]:
    started = time.monotonic()
    response = client.post(f"/api/v1/knowledge-bases/{UPLOAD_KB}/documents/files", files=[("files", (name, data))])
    detail = response.json().get("detail", "") if response.status_code >= 400 else ""
    return time.monotonic() - started, response.status_code, detail


def abandoned_upload(url: str, key: str, data: bytes, after_s: float) -> None:
    request = httpx.Request(
        "POST",
        f"{url}/api/v1/knowledge-bases/{UPLOAD_KB}/documents/files",
        headers={"Authorization": f"Bearer {key}"},
        files=[("files", ("slow.pdf", data, "application/pdf"))],
    )
    body = request.read()
    head = [f"POST {request.url.raw_path.decode()} HTTP/1.1", "Host: 127.0.0.1"]
    head += [f"{name}: {value}" for name, value in request.headers.items() if name.lower() != "host"]
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        time.sleep(after_s)


def queries(client: httpx.Client, count: int, *, while_alive: list[threading.Thread] = ()) -> list[float]:
    latencies: list[float] = []
    while len(latencies) < count or any(thread.is_alive() for thread in while_alive):
        started = time.monotonic()
        response = client.post(f"/api/v1/knowledge-bases/{KB}/query", json={"question": QUESTION, "mode": "basic"})
        latencies.append(time.monotonic() - started)
        response.raise_for_status()
    return latencies


def p50_ms(latencies: list[float]) -> str:
    return f"{statistics.median(latencies) * 1000:.0f} ms (n={len(latencies)}, max {max(latencies) * 1000:.0f} ms)"


def workers_cpu(pid: int, seconds: float) -> float:
    """CPU seconds the server's children used over `seconds` of wall time."""

    def used() -> float:
        total = 0.0
        for child in psutil.Process(pid).children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
        return total

    before = used()
    time.sleep(seconds)
    return max(0.0, used() - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=10, help="Uploads of each small hostile file.")
    parser.add_argument("--abandoned", type=int, default=6, help="Abandoned uploads of a slow PDF.")
    parser.add_argument("--abandon-after", type=float, default=3.0, help="Seconds before a client goes away.")
    parser.add_argument("--slow-pages", type=int, default=6000, help="Pages of the slow PDF.")
    parser.add_argument("--queries", type=int, default=20, help="Basic queries per phase (at least).")
    parser.add_argument("--neo4j-uri", default=None, help="Default: NEO4J_URI, else the local Neo4j (running).")
    add_record_option(parser)
    args = parser.parse_args()

    files = {
        "spine.epub": repeated_spine_epub(400, 1_000_000),
        "pages.pdf": repeated_page_pdf(20_000, fanout=200),
    }
    slow = many_pages_pdf(args.slow_pages)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="hostile-uploads-") as tmp:
        home = Path(tmp)
        settings = Settings(neo4j_uri=args.neo4j_uri, llm_provider="offline", home=home)
        entities = asyncio.run(ensure_kb(settings))
        keys_file = home / "keys.json"
        key, _ = create_key(keys_file, name="hostile", scopes=["read", "manage"], kbs=["*"])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTRAG_API_", "OPENAI_"))}
        env.update(
            NEO4J_URI=settings.bolt_uri,
            DRIFTRAG_LLM_PROVIDER="offline",
            DRIFTRAG_HOME=str(home),
            DRIFTRAG_API_KEYS_FILE=str(keys_file),
        )
        print(f"kb {KB}: {entities} entities; load average {os.getloadavg()[0]:.1f} at the start")

        for name, data in files.items():
            path = home / name
            path.write_bytes(data)
            wall, code, peak, last = cli_run(path, env, home)
            print(f"CLI {name} ({len(data)} bytes): exit {code} in {wall:.1f} s, peak RSS {peak:.0f} MiB: {last}")
            rows.append(
                [f"CLI `driftrag ingest` {name} ({len(data):,} B)", f"exit {code} in {wall:.1f} s, peak {peak:.0f} MiB"]
            )

        with running_server(env, key, 1, home) as (url, headers, server):
            client = httpx.Client(base_url=url, headers=headers, timeout=300)
            queries(client, 3)  # warm-up: the embedder loaded
            rss_before = rss_mib(server.pid)
            sampler = Sampler(server.pid)
            sampler.start()
            for name, data in files.items():
                results = [upload(client, name, data) for _ in range(args.uploads)]
                slowest = max(seconds for seconds, _, _ in results)
                statuses = sorted({status for _, status, _ in results})
                print(f"HTTP {name} x{args.uploads}: statuses {statuses}, slowest {slowest:.2f} s: {results[0][2]}")
                rows.append(
                    [
                        f"HTTP upload {name}, {args.uploads} times",
                        f"{'/'.join(map(str, statuses))} each, slowest {slowest:.2f} s",
                    ]
                )
            sampler.stop.set()
            sampler.join()
            rss_after = rss_mib(server.pid)
            print(
                f"server RSS {rss_before:.0f} MiB before, {rss_after:.0f} MiB after; parse workers' peak "
                f"{sampler.peak_children / 1_048_576:.0f} MiB"
            )
            rows.append(
                [
                    f"server RSS before / after the {2 * args.uploads} uploads",
                    f"{rss_before:.0f} / {rss_after:.0f} MiB ({rss_after - rss_before:+.0f} MiB); "
                    f"parse workers' peak {sampler.peak_children / 1_048_576:.0f} MiB",
                ]
            )

            alone = queries(client, args.queries)
            threads = [
                threading.Thread(target=abandoned_upload, args=(url, key, slow, args.abandon_after))
                for _ in range(args.abandoned)
            ]
            for thread in threads:
                thread.start()
            during = queries(client, args.queries, while_alive=threads)
            for thread in threads:
                thread.join()
            time.sleep(1.0)  # the server has seen every client go
            leftover = workers_cpu(server.pid, 5.0)
            client.close()
        print(f"basic query alone:  {p50_ms(alone)}")
        print(f"basic query during {args.abandoned} abandoned uploads of a {args.slow_pages}-page PDF:", p50_ms(during))
        print(f"parse workers' CPU in the 5 s after every client left: {leftover:.2f} s")
        rows += [
            ["basic query p50 alone", p50_ms(alone)],
            [
                f"basic query p50 during {args.abandoned} abandoned uploads "
                f"({args.slow_pages}-page PDF, client gone after {args.abandon_after:g} s)",
                p50_ms(during),
            ],
            ["parse workers' CPU in the 5 s after the clients left", f"{leftover:.2f} s"],
        ]
    if args.record:
        record(
            "hostile-uploads",
            "Hostile uploads",
            ["figure", "value"],
            rows,
            note="`benchmarks/hostile_uploads.py`: the small files of issue 53 through the CLI and the HTTP "
            "upload route, and a `basic` query while abandoned uploads of a slow PDF are read. Goals: each "
            "small file refused within 5 s at 300 MiB; the server within 50 MiB of its size after the uploads; "
            "the query p50 within 1 s during the abandoned uploads (40.4 s before the parse workers).",
        )


if __name__ == "__main__":
    main()
