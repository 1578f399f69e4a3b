"""How fast a lost Neo4j is reported: the time from `kill -9` of the server to the CLI's exit 3 (during an
ingestion and during a DRIFT query) and to the HTTP API's 503, on a throwaway local Neo4j of its own port.

    .venv/bin/python benchmarks/neo4j_loss.py [--port 17724] [--repeats 3] [--record]

Each repeat: start the throwaway Neo4j, ingest the sample (offline) once; then
- ingest: `driftrag ingest data/sample` into a new kb, Neo4j killed 3 s after the process connected;
- query: `driftrag query … --mode drift`, Neo4j killed 0.3 s after the process connected, and the same
  DRIFT query in this process (`DriftRAG.drift`), Neo4j killed after its HyDE phase;
- HTTP: a uvicorn server in this process queried every 0.1 s, Neo4j killed, time to the first 503 and
  the median latency of the 503s that follow (answered from the known-down state).
Neo4j is started again between scenarios. Prints each time and the medians, and each exit code; with
`--record`, the medians replace the "Neo4j loss" table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from driftrag.api import ApiKeys, create_app
from driftrag.api.server import BackgroundServer
from driftrag.corpora import DATA_DIR
from driftrag.facade import DriftRAG
from driftrag.local_neo4j import LocalNeo4j
from driftrag.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record

CLI = Path(sys.executable).parent / "driftrag"
QUESTION = "Who made the light at Cinder Point Lighthouse fail?"


def connected(pid: int, port: int) -> bool:
    """Whether process `pid` holds an established connection to the Bolt port (read from `ss`)."""
    out = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"( dport = :{port} )"], capture_output=True, text=True
    ).stdout
    return f"pid={pid}," in out


def kill_neo4j(server: LocalNeo4j) -> float:
    pid = server.status().pid
    assert pid is not None, "Neo4j is not running"
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    while server.status().state == "running":
        time.sleep(0.01)
    return killed


def cli(args: list[str], uri: str, home: Path) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_"))}
    env |= {"NEO4J_URI": uri, "DRIFTRAG_HOME": str(home)}
    return subprocess.Popen(
        [str(CLI), *args], env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def kill_during(process: subprocess.Popen[str], server: LocalNeo4j, port: int, after_s: float):
    """Kill Neo4j `after_s` after the process connected; (seconds from kill to exit, exit code, stderr lines)."""
    while not connected(process.pid, port):
        if process.poll() is not None:
            raise RuntimeError(f"the process ended before connecting: {process.stderr.read()[-2000:]}")
        time.sleep(0.02)
    time.sleep(after_s)
    if process.poll() is not None:
        return None
    killed = kill_neo4j(server)
    _, stderr = process.communicate(timeout=600)
    return time.monotonic() - killed, process.returncode, [line for line in stderr.splitlines() if line.strip()]


def http_to_503(settings: Settings, server: LocalNeo4j, kb: str) -> tuple[float, float]:
    """(seconds from kill to the first 503, median seconds of the next 503s)."""
    app = create_app(DriftRAG(settings), ApiKeys.insecure_no_auth())
    with BackgroundServer(app) as api, httpx.Client(base_url=f"{api.url}/api/v1", timeout=120) as client:
        assert client.get(f"/knowledge-bases/{kb}/stats").status_code == 200
        killed = kill_neo4j(server)
        while True:
            status = client.get(f"/knowledge-bases/{kb}/stats").status_code
            if status == 503:
                first = time.monotonic() - killed
                break
            time.sleep(0.1)
        later = []
        for _ in range(10):
            started = time.monotonic()
            assert client.get(f"/knowledge-bases/{kb}/stats").status_code == 503
            later.append(time.monotonic() - started)
        return first, statistics.median(later)


def drift_in_process(settings: Settings, server: LocalNeo4j, kb: str) -> tuple[float, str]:
    """The facade's DRIFT with Neo4j killed after its HyDE phase: (seconds from kill to the error, error)."""
    killed: list[float] = []

    def kill_after_hyde(event) -> None:
        if event.phase == "hyde" and not killed:
            killed.append(kill_neo4j(server))

    async def run() -> tuple[float, str]:
        async with DriftRAG(settings) as rag:
            try:
                await rag.drift(kb, QUESTION, on_progress=kill_after_hyde)
            except Exception as exc:
                return time.monotonic() - killed[0], type(exc).__name__
        raise RuntimeError("the query answered although Neo4j was killed")

    return asyncio.run(run())


def main(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-loss-"))
    server = LocalNeo4j(Settings(_env_file=None), port=args.port)
    uri = server.bolt_uri
    settings = Settings(_env_file=None, neo4j_uri=uri, home=home, llm_provider="offline", connect_retries=2)
    kb = f"bench-loss-{uuid.uuid4().hex[:6]}"
    results: dict[str, list] = {
        "ingest": [],
        "query": [],
        "query in process": [],
        "http first 503": [],
        "http next 503s": [],
    }
    try:
        server.start()

        async def prepare() -> None:
            async with DriftRAG(settings) as rag:
                await rag.ingest(kb, paths=[DATA_DIR / "sample"])

        asyncio.run(prepare())
        for repeat in range(args.repeats):
            server.start()
            run = kill_during(
                cli(["ingest", str(DATA_DIR / "sample"), "--kb", f"{kb}-x{repeat}"], uri, home), server, args.port, 3.0
            )
            results["ingest"].append(run)
            server.start()
            run = kill_during(
                cli(["query", QUESTION, "--kb", kb, "--mode", "drift"], uri, home), server, args.port, 0.3
            )
            results["query"].append(run)
            server.start()
            results["query in process"].append(drift_in_process(settings, server, kb))
            server.start()
            first, later = http_to_503(settings, server, kb)
            results["http first 503"].append(first)
            results["http next 503s"].append(later)
    finally:
        if server.status().state != "running":
            server.start()

        async def clean() -> None:
            async with DriftRAG(settings) as rag:
                for name in [kb, *(f"{kb}-x{r}" for r in range(args.repeats))]:
                    try:
                        await rag.delete_kb(name)
                    except Exception:  # a kb the killed ingestion never created
                        pass

        asyncio.run(clean())
        server.stop()

    for scenario in ("ingest", "query"):
        runs = [run for run in results[scenario] if run is not None]
        for seconds, code, lines in runs:
            print(f"{scenario}: kill -> exit {code} in {seconds:.2f} s; stderr {len(lines)} line(s):")
            for line in lines:
                print(f"    {line[:200]}")
        if runs:
            print(
                f"{scenario}: median kill -> exit {statistics.median(r[0] for r in runs):.2f} s over {len(runs)} runs"
            )
        skipped = len(results[scenario]) - len(runs)
        if skipped:
            print(f"{scenario}: {skipped} run(s) ended before the kill")
    in_process = results["query in process"]
    print(
        f"query in process (DriftRAG.drift): median kill -> {in_process[0][1]} "
        f"{statistics.median(r[0] for r in in_process):.2f} s (each: {', '.join(f'{r[0]:.2f}' for r in in_process)})"
    )
    print(
        f"http: median kill -> first 503 {statistics.median(results['http first 503']):.2f} s "
        f"(each: {', '.join(f'{s:.2f}' for s in results['http first 503'])})"
    )
    print(
        "http: median latency of the 503s while known down "
        f"{statistics.median(results['http next 503s']) * 1000:.0f} ms"
    )
    if args.record:
        record(
            "neo4j-loss",
            "Neo4j loss",
            ["scenario", "kill → error"],
            loss_rows(results),
            note=f"{args.repeats} repeats.",
        )


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def loss_rows(results: dict[str, list]) -> list[list[str]]:
    rows = []
    for scenario, label in (("ingest", "`ingest` → exit 3"), ("query", "`query --mode drift` → exit 3")):
        runs = [run for run in results[scenario] if run is not None]
        rows.append([label, spread([run[0] for run in runs]) if runs else "every run ended before the kill"])
    rows += [
        ["DRIFT in process → error", spread([run[0] for run in results["query in process"]])],
        [
            "first HTTP 503",
            spread(results["http first 503"])
            + f", then 503s in {statistics.median(results['http next 503s']) * 1000:.0f} ms while known down",
        ],
    ]
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=17724, help="Bolt port of the throwaway Neo4j")
    parser.add_argument("--repeats", type=int, default=3)
    add_record_option(parser)
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
