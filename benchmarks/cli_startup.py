"""How long the `driftrag` command line makes people wait before it does anything.

Times, warm (one untimed run of each first), the medians of `--runs` runs of:
`driftrag --help`, `driftrag info`, `driftrag stats --kb K`, and the overhead of `driftrag query`
over the time the query itself reports (`seconds` of its JSON): the start-up, connecting, closing.
Each command runs as a new process, as a user runs it, in offline mode, against a local Neo4j on
`--port` (found running, or started and stopped again); the kb is ingested from `data/sample` when
it holds no documents.

With `--baseline DIR` (another checkout of the project, e.g. `git archive main | tar -x -C DIR`) the
runs alternate between that tree and this one, so both see the same machine load, and the table
shows them side by side. With `--record` the table replaces the "CLI start-up" table of
docs/benchmarks.md (`benchmarks/record.py`).

    .venv/bin/python benchmarks/cli_startup.py [--runs 5] [--port 17766] [--kb cli-startup] [--baseline DIR]
        [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

from benchmarks.record import add_record_option, record
from driftrag.local_neo4j import LocalNeo4j
from driftrag.settings import Settings

TREE = Path(__file__).resolve().parents[1]
QUESTION = "Who found the lodestone?"
# The targets of a CLI that answers in about a second (warm, at ordinary load).
TARGETS_S = {"--help": 0.3, "info": 0.5, "stats": 1.0, "query overhead": 1.0}


def _env(port: int, tree: Path) -> dict[str, str]:
    dropped = {"OPENAI_API_KEY", "NEO4J_URI", "DRIFTRAG_NEO4J_URI", "DRIFTRAG_LLM_PROVIDER", "PYTHONPATH"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return env | {"PYTHONPATH": str(tree), "DRIFTRAG_NEO4J_PORT": str(port), "DRIFTRAG_LLM_PROVIDER": "offline"}


def _run(tree: Path, port: int, *args: str) -> tuple[float, float, str]:
    """One `driftrag <args>` as a new process of `tree`'s code: its wall time, CPU time and stdout."""
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "driftrag", *args], cwd=tree, env=_env(port, tree), capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"`driftrag {' '.join(args)}` in {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, _children_cpu_s() - cpu_before, done.stdout


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _commands(kb: str) -> dict[str, tuple[str, ...]]:
    return {
        "--help": ("--help",),
        "info": ("info",),
        "stats": ("stats", "--kb", kb),
        "query overhead": ("query", QUESTION, "--kb", kb, "--json"),
    }


def _measure(tree: Path, port: int, name: str, args: tuple[str, ...]) -> tuple[float, float]:
    """Wall and CPU seconds of one run; for the query, the wall time over the query's own `seconds`."""
    elapsed, cpu, stdout = _run(tree, port, *args)
    if name == "query overhead":
        return elapsed - json.loads(stdout)["seconds"], cpu
    return elapsed, cpu


def _ensure_kb(port: int, kb: str) -> None:
    _, _, stdout = _run(TREE, port, "kb", "list", "--json")
    known = {summary["kb"]: summary["counts"]["documents"] for summary in json.loads(stdout)["knowledge_bases"]}
    if not known.get(kb):
        print(f"ingesting data/sample into kb {kb} (offline)…", flush=True)
        _run(TREE, port, "ingest", str(TREE / "data" / "sample"), "--kb", kb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--port", type=int, default=17766, help="Bolt port of the local Neo4j to find or start")
    parser.add_argument("--kb", default="cli-startup")
    parser.add_argument("--baseline", type=Path, help="another checkout to time alternately with this one")
    add_record_option(parser)
    args = parser.parse_args()

    trees = {"after": TREE} if args.baseline is None else {"before": args.baseline.resolve(), "after": TREE}
    server = LocalNeo4j(Settings(neo4j_uri=None), port=args.port)
    started_here = server.status().state != "running"
    if started_here:
        print(f"starting the local Neo4j on {args.port}…", flush=True)
        server.start()
    try:
        _ensure_kb(args.port, args.kb)
        commands = _commands(args.kb)
        load_before = os.getloadavg()
        for tree in trees.values():  # warm: page cache, bytecode caches, the Neo4j query plans
            for name, command in commands.items():
                _measure(tree, args.port, name, command)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for name, command in commands.items():
                for label, tree in trees.items():
                    times.setdefault((label, name), []).append(_measure(tree, args.port, name, command))
        load_after = os.getloadavg()
    finally:
        if started_here:
            server.stop()

    labels = list(trees)
    print(f"\nmedians of {args.runs} warm runs, alternated; offline mode, Neo4j on {args.port}, kb {args.kb}")
    print("wall s (query: wall over the query's own time) and CPU s of the process (user + system)")
    print(
        f"{'command':<16}"
        + "".join(f"{label + ' wall':>13}{label + ' cpu':>12}" for label in labels)
        + f"{'target':>8}"
    )
    rows = []
    for name in commands:
        walls = [statistics.median(wall for wall, _ in times[(label, name)]) for label in labels]
        cpus = [statistics.median(cpu for _, cpu in times[(label, name)]) for label in labels]
        verdict = "ok" if walls[-1] <= TARGETS_S[name] else "over"
        print(
            f"{name:<16}"
            + "".join(f"{wall:>13.2f}{cpu:>12.2f}" for wall, cpu in zip(walls, cpus, strict=True))
            + f"{TARGETS_S[name]:>8.1f}  {verdict}"
        )
        cells = [f"{wall:.2f} s (CPU {cpu:.2f} s)" for wall, cpu in zip(walls, cpus, strict=True)]
        shown = f"`driftrag {shlex.join(commands[name])}`" + (" over its own time" if name == "query overhead" else "")
        rows.append([shown, *cells, f"≤ {TARGETS_S[name]:.1f} s {verdict}"])
    load = (
        "load average (1, 5, 15 min) before "
        + ", ".join(f"{x:.1f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.1f}" for x in load_after)
    )
    print(load + f"; {os.cpu_count()} cores, shared with other work: wall times are noisy")
    if args.record:
        columns = ["command", *(f"{label} wall (CPU)" for label in labels), "target (this checkout)"]
        note = (
            f"Medians of {args.runs} warm runs of each command as a new process, "
            + ("alternated with the `--baseline` checkout (before), " if args.baseline is not None else "")
            + "offline mode, a kb ingested from `data/sample`. The query row is the wall time over the "
            "query's own `seconds` (start-up, connecting, closing); its CPU is the whole process's. "
            f"The {load} while measuring."
        )
        record("cli-startup", "CLI start-up", columns, rows, note=note)


if __name__ == "__main__":
    main()
