"""Peak memory of loading and chunking a file at the size limit, up to the chunks' write to Neo4j.

Writes a text file of `--mib` MiB (default 50, the default `max_file_mb`; the bundled sample corpus
repeated, each copy headed by its number), then, in a fresh process for each run, ingests it as far as
its chunks are stored (offline mode, the given Neo4j, kb `bench-large-file`, deleted at the end): load
(read, decode, normalise, hash) and chunk + write (`store_documents`). Extraction is not run: on a file
this size it takes hours. Prints the process's resident size after start-up (imports, the tokenizer),
its peak over the run (VmHWM), the growth over the file's size, the chunks and the wall time of each
phase.

    .venv/bin/python benchmarks/large_file_memory.py --neo4j-uri bolt://127.0.0.1:7687 [--mib 50] [--runs 1]
        [--record]   # replace the "Large file memory" table of docs/benchmarks.md

Another checkout's library is measured with this script by putting it first on the path
(`PYTHONPATH=/other/checkout`): the phases it calls are the same functions there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# For benchmarks.record; appended, so that a checkout first on PYTHONPATH is the library measured.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.record import add_record_option, record

KB = "bench-large-file"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def write_file(path: Path, mib: float) -> int:
    """The sample corpus repeated to `mib` MiB (whole copies; the last one cut at a line)."""
    corpus = "\n\n".join(file.read_text() for file in sorted(SAMPLE.glob("*.md")))
    limit = int(mib * 1024 * 1024)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        copy = 0
        while written < limit:
            copy += 1
            piece = f"\n\n# Part {copy}\n\n{corpus}"
            if written + len(piece) > limit:
                out.write(piece[: max(piece.rfind("\n", 0, limit - written), 0)])
                break
            out.write(piece)
            written += len(piece)
    return path.stat().st_size


async def child(uri: str, path: Path, home: Path) -> dict:
    """One run in this process: load, then chunk and write; the figures as a dict."""
    from driftrag.facade import DriftRAG
    from driftrag.ingestion import indexing
    from driftrag.ingestion.requests import IngestRequest, no_progress
    from driftrag.providers.tokens import get_encoding
    from driftrag.settings import Settings

    settings = Settings(_env_file=None, neo4j_uri=uri, home=home, llm_provider="offline")
    async with DriftRAG(settings) as rag:
        deps = rag.ingestion_deps()
        get_encoding()
        await rag.delete_kb(KB)
        baseline = _status_mib("VmRSS")
        started = time.monotonic()
        request = IngestRequest(kb=KB, paths=[path])
        documents = await indexing.load_documents(request, settings, deps.tasks.document_check)
        loaded = time.monotonic()
        peak_load = _status_mib("VmHWM")
        outcomes = await indexing.store_documents(deps, KB, documents, no_progress)
        stored = time.monotonic()
        figures = {
            "baseline_mib": baseline,
            "peak_load_mib": peak_load,
            "peak_mib": _status_mib("VmHWM"),
            "chunks": sum(outcome.chunks for outcome in outcomes),
            "load_s": loaded - started,
            "chunk_write_s": stored - loaded,
        }
        del documents
        await rag.delete_kb(KB)
    return figures


def run_child(uri: str, path: Path, home: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--neo4j-uri", uri, "--file", str(path), "--home", str(home)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )
    if done.returncode != 0:
        raise SystemExit(f"the measured run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--neo4j-uri", default="bolt://127.0.0.1:7687")
    parser.add_argument("--mib", type=float, default=50.0, help="Size of the file (MiB).")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    add_record_option(parser)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.neo4j_uri, args.file, args.home))))
        return
    with tempfile.TemporaryDirectory(prefix="driftrag-large-file-") as folder:
        path = Path(folder) / "large.md"
        size = write_file(path, args.mib)
        input_mib = size / 1_048_576
        print(f"file: {size} bytes ({input_mib:.1f} MiB)")
        runs = []
        for number in range(1, args.runs + 1):
            figures = run_child(args.neo4j_uri, path, Path(folder) / "home")
            growth = figures["peak_mib"] - figures["baseline_mib"]
            figures["growth_x"] = growth / input_mib
            runs.append(figures)
            print(
                f"run {number}: resident after start-up {figures['baseline_mib']:.0f} MiB, peak while loading "
                f"{figures['peak_load_mib']:.0f} MiB, peak {figures['peak_mib']:.0f} MiB (growth {growth:.0f} MiB = "
                f"{figures['growth_x']:.1f}x the file); {figures['chunks']} chunks; load {figures['load_s']:.1f} s, "
                f"chunk + write {figures['chunk_write_s']:.1f} s"
            )
    if args.record:
        best = min(runs, key=lambda figures: figures["peak_mib"])
        rows = [
            [
                "file",
                f"{input_mib:.1f} MiB of text (the sample corpus repeated), {best['chunks']} chunks (offline sizes)",
            ],
            ["resident after start-up", f"{best['baseline_mib']:.0f} MiB"],
            [
                "peak while loading, chunking and writing",
                f"{best['peak_mib']:.0f} MiB: {best['peak_mib'] - best['baseline_mib']:.0f} MiB over start-up, "
                f"{best['growth_x']:.1f}x the file",
            ],
            ["wall", f"load {best['load_s']:.1f} s, chunk + write {best['chunk_write_s']:.1f} s"],
        ]
        record(
            "large-file-memory",
            "Large file memory",
            ["figure", "value"],
            rows,
            note="`benchmarks/large_file_memory.py`: a file at the size limit loaded, chunked and its chunks "
            "written (no extraction), in a fresh process. Goal: the growth stays within 4x the file.",
        )


if __name__ == "__main__":
    main()
