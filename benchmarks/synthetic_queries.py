"""Query-side figures on a kb built by `benchmarks/synthetic_kb.py`: p50/p95 per operation.

    .venv/bin/python benchmarks/synthetic_queries.py --kb syn1m --relationships 1000000 [--runs 20]
    .venv/bin/python benchmarks/synthetic_queries.py --kb syn1m --relationships 1000000 --only leiden
    .venv/bin/python benchmarks/synthetic_queries.py --kb syn1m --relationships 1000000 --only graph
    .venv/bin/python benchmarks/synthetic_queries.py --kb syn50k --relationships 50000 --only delete
    .venv/bin/python benchmarks/synthetic_queries.py --kb syn1m --relationships 1000000 --only local  # or drift, stats

`--relationships` and `--seed` must be the generator's: the entity names (exact names, hubs) are
regenerated from them, nothing is read to find them. Operations:

- graph search: 10 exact names, one-letter queries, and the names of the 5 biggest hubs (each once
  untimed first: a warm server's figures), with the CPU time per query of this process and of the
  local Neo4j (from /proc: on a shared machine the wall figures follow the load, the CPU figures much
  less) and the answer's JSON size; each response
  is checked against the caps (seeds <= max_seeds, rows <= max_rows, a hub's rows_total above what is
  returned and `results_truncated` set, counts flagged as lower bounds beyond the counting cap), and
  the check is printed (`--only graph` runs these alone);
- local context: `build_local_context` for random unit query vectors, and the same seeded with the 5
  biggest hubs (the graph reads local search does for them);
- DRIFT: whole queries with the scripted test double as model (in process) and, as embedder, random
  unit vectors seeded by the text (`--drift-embedder random`, the kb's own vector distribution) or the
  hashing test double (`hashing`: its sparse vectors sit far from the kb's random ones, nearer to any
  kb embedded by that double in the same Neo4j, so the shared vector index over-fetches deep);
  the time inside the model's calls is measured and subtracted (the double is synchronous, so its calls
  never overlap on the event loop): the remainder is the non-model time;
- stats (`GraphStore.counts`) and the kb list (`GraphStore.list_kbs`: every kb's counts; `--only stats`);
- the query-side operations run after the set-up is frozen out of the cyclic collector's reach, as
  `driftrag serve` does once started (`--no-freeze`: not);
- Leiden (`--only leiden`, in a child process so its peak RSS is Leiden's): the paged read of the
  stored graph and hierarchical Leiden with its splits, time and peak RSS;
- deleting documents (`--only delete [--delete-runs N]`, changes the kb: run it last): each delete
  and the refresh of the derived layers with the scripted double and hashing embedder, its time and
  this process's peak RSS, then p50/p95.

Nothing is asserted on time; figures are medians (p50) and p95 of `--runs` runs per query. With
`--record` (and `--relationships 1000000`), each group of operations that ran replaces its table of
docs/benchmarks.md ("Synthetic kb: graph search", "… local context", "… DRIFT", "… stats", "… Leiden",
"… document delete").
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.record import add_record_option, record
from benchmarks.synthetic_kb import DIMENSION, SyntheticGraph, entity_name
from driftrag.collector import freeze_startup_objects
from driftrag.composition import ingestion_deps, query_deps
from driftrag.ingestion import indexing
from driftrag.ingestion.communities import detect_graph_communities, read_community_graph
from driftrag.ingestion.requests import no_progress
from driftrag.local_neo4j import LocalNeo4j
from driftrag.models.search import Source
from driftrag.models.storage import Stores
from driftrag.providers.factory import Providers
from driftrag.providers.usage import UsageTracker
from driftrag.search.graph_search import graph_search
from driftrag.search.local import build_local_context
from driftrag.settings import Settings
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.drift import DriftStart, DriftWorkflow
from tests.fakes.hashing_embedding import HashingEmbedding
from tests.fakes.scripted_llm import ScriptedChatModel

ONE_LETTER = ["a", "K"]
LOCAL_QUESTION = "What is known about {name}, and who is connected to {name}?"
DRIFT_QUESTIONS = [
    "How is {a} related to {b}?",
    "What does {a} do, and who works with {a}?",
    "Which groups does {a} belong to?",
]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def local_neo4j_pid(settings: Settings) -> int | None:
    """The pid of the Neo4j the project's launcher started at the settings' address (the default one, or
    `--neo4j-uri` on this machine's loopback), or None for a server it did not start."""
    if not settings.neo4j_uri:
        return LocalNeo4j(settings).status().pid
    address = urlsplit(settings.neo4j_uri)
    if address.hostname not in ("127.0.0.1", "localhost") or address.port is None:
        return None
    return LocalNeo4j(settings.model_copy(update={"neo4j_uri": None}), port=address.port).status().pid


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process so far (0 without a pid or on a system without /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def line(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (
        f"{name:<44} n={len(ms):<4} p50 {statistics.median(ms):8.1f} ms   p95 {pct(ms, 95):8.1f} ms   "
        f"max {max(ms):8.1f} ms"
    )


def row(name: str, seconds: list[float], note: str = "") -> list[str]:
    """One operation as a recorded-table row: name, p50 / p95, runs, note."""
    ms = [s * 1000 for s in seconds]
    return [name, f"{statistics.median(ms):.1f} / {pct(ms, 95):.1f} ms", str(len(ms)), note]


# The recorded tables, one per group of operations: (marker name, title).
TABLES = {
    "graph": ("synthetic-queries-graph", "Synthetic kb: graph search"),
    "local": ("synthetic-queries-local", "Synthetic kb: local context"),
    "drift": ("synthetic-queries-drift", "Synthetic kb: DRIFT"),
    "stats": ("synthetic-queries-stats", "Synthetic kb: stats and the kb list"),
    "leiden": ("synthetic-queries-leiden", "Synthetic kb: Leiden"),
    "delete": ("synthetic-queries-delete", "Synthetic kb: document delete"),
}
Rows = list[list[str]]


class TimedChat:
    """The scripted double, with the time spent inside its calls summed."""

    def __init__(self) -> None:
        self.inner = ScriptedChatModel()
        self.seconds = 0.0

    async def chat(self, messages, **kwargs):
        started = time.perf_counter()
        try:
            return await self.inner.chat(messages, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


class SeededRandomEmbedding(HashingEmbedding):
    """Dense random unit vectors seeded by the text: the synthetic kb's vectors are drawn so too."""

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).standard_normal(self.dimension)
        return (vector / np.linalg.norm(vector)).tolist()


def providers(embedder: str = "hashing") -> Providers:
    embedding = SeededRandomEmbedding if embedder == "random" else HashingEmbedding
    return Providers(
        mode="openai",
        model_client=None,
        embedder=embedding(dimension=DIMENSION),
        embedding_dimension=DIMENSION,
        usage=UsageTracker(),
        description=f"scripted test double + {embedder} embedder (benchmark)",
    )


async def graph_searches(stores: Stores, settings: Settings, kb: str, graph: SyntheticGraph, runs: int) -> Rows:
    rng = np.random.default_rng(1)
    hubs = np.argsort(graph.degree)[::-1][:5].tolist()
    groups = {
        "graph search: exact names": [entity_name(int(i)) for i in rng.choice(graph.n_entities, 10, replace=False)],
        "graph search: one-letter queries": ONE_LETTER,
        "graph search: hub names (5 biggest)": [entity_name(i) for i in hubs],
    }
    # Every query once, untimed: the figures are a warm server's (plans cached, code compiled, the pages
    # these queries read in the page cache). Right after a restart the same queries read the store from
    # disk: seconds each at first, and it takes some hundreds of queries to settle.
    for queries in groups.values():
        for query in queries:
            await graph_search(stores.graph_search, settings, kb, query)
    checks: dict[str, str] = {}
    rows: Rows = []
    neo4j = local_neo4j_pid(settings)
    for name, queries in groups.items():
        times, sizes = [], {}
        cpu_before, neo4j_before = time.process_time(), cpu_seconds(neo4j)
        for _ in range(runs):
            for query in queries:
                started = time.perf_counter()
                response = await graph_search(stores.graph_search, settings, kb, query)
                times.append(time.perf_counter() - started)
                if query not in checks:  # checked once, and not kept: a server drops each answer once sent
                    checks[query] = cap_check(query, response, settings)
                    sizes[query] = len(response.model_dump_json())
                del response
        cpu_ms = (time.process_time() - cpu_before) * 1000 / len(times)
        neo4j_ms = (cpu_seconds(neo4j) - neo4j_before) * 1000 / len(times)
        sizes = list(sizes.values())
        print(line(name, times), flush=True)
        print(
            f"{'':<44} CPU per query: this process {cpu_ms:6.1f} ms, Neo4j {neo4j_ms:6.1f} ms"
            f"{'' if neo4j else ' (not local)'}; answer {statistics.median(sizes) / 1e6:.2f} MB JSON (median)",
            flush=True,
        )
        cpu = f"CPU per query: this process {cpu_ms:.1f} ms" + (f", Neo4j {neo4j_ms:.1f} ms" if neo4j else "")
        rows.append(row(name, times, f"{cpu}; answer {statistics.median(sizes) / 1e6:.2f} MB"))
    print("caps and truncation markers (first run of each query):")
    print("\n".join(checks.values()))
    return rows


def cap_check(query: str, response, settings: Settings) -> str:
    """One line: what matched and was returned, and whether the caps and truncation markers hold."""
    t = response.truncation
    ok = t.candidates_returned <= settings.graph_search_max_seeds and t.rows_returned <= settings.graph_search_max_rows
    ok = ok and len(response.relationships) <= settings.graph_search_max_rows
    ok = ok and (t.results_truncated == (t.rows_total > t.rows_returned or t.rows_total_is_lower_bound))
    ok = ok and (
        t.candidates_truncated == (t.candidates_matched > t.candidates_returned or t.candidates_matched_is_lower_bound)
    )
    ok = ok and t.rows_returned <= t.rows_total and t.candidates_returned <= t.candidates_matched
    matched = f"{'>=' if t.candidates_matched_is_lower_bound else '  '}{t.candidates_matched:>7,}"
    total = f"{'>=' if t.rows_total_is_lower_bound else '  '}{t.rows_total:>7,}"
    return (
        f"  {query!r:>22}: matched {matched} seeds {t.candidates_returned:>4} rows "
        f"{t.rows_returned:>5}/{total} results_truncated={t.results_truncated!s:<5} "
        f"candidates_truncated={t.candidates_truncated!s:<5} fields cut {len(t.fields):>4}  "
        f"{'caps hold' if ok else 'CAPS BROKEN'}"
    )


class HubSeeded:
    """A search store whose entity vector search returns given entities: local search's graph reads
    for hubs (the nearest entities of a real question can be hubs; random vectors rarely are)."""

    def __init__(self, inner, seeds) -> None:
        self._inner, self._seeds = inner, seeds

    async def search_entities(self, kb, vector, k, *, seen=None):
        return self._seeds[:k]

    def __getattr__(self, name):
        return getattr(self._inner, name)


async def local_contexts(stores: Stores, settings: Settings, kb: str, graph: SyntheticGraph, runs: int) -> Rows:
    deps = query_deps(settings, stores, providers(), TimedChat())
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((runs, DIMENSION))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).tolist()
    names = [entity_name(int(i)) for i in rng.choice(graph.n_entities, runs, replace=False)]
    await build_local_context(deps, kb, LOCAL_QUESTION.format(name=names[0]), vectors[0])
    times, tokens = [], []
    for name, vector in zip(names, vectors, strict=True):
        started = time.perf_counter()
        context = await build_local_context(deps, kb, LOCAL_QUESTION.format(name=name), vector)
        times.append(time.perf_counter() - started)
        tokens.append(len(context.sources))
    print(line("local context: random query vectors", times), f"sources/context {statistics.median(tokens):.0f}")
    rows = [row("local context: random query vectors", times, f"{statistics.median(tokens):.0f} sources per context")]
    hub_names = [entity_name(i) for i in np.argsort(graph.degree)[::-1][:5].tolist()]
    hubs = [match for name in hub_names for match in await stores.search.match_entity_names(kb, [name], 1)]
    seeds = [
        Source(id=r.id, kind="entity", title=r.name, text=f"{r.name}: {r.description}", score=1.0, origin="vector")
        for r in hubs
    ]
    hub_deps = query_deps(
        settings, Stores(**{**stores.__dict__, "search": HubSeeded(stores.search, seeds)}), providers(), TimedChat()
    )
    times = []
    for name, vector in zip(hub_names * runs, vectors, strict=False):
        started = time.perf_counter()
        await build_local_context(hub_deps, kb, LOCAL_QUESTION.format(name=name), vector)
        times.append(time.perf_counter() - started)
    print(line("local context: seeded with the 5 biggest hubs", times))
    return [*rows, row("local context: seeded with the 5 biggest hubs", times)]


async def drift_queries(
    stores: Stores, settings: Settings, kb: str, graph: SyntheticGraph, runs: int, embedder: str
) -> Rows:
    rng = np.random.default_rng(3)
    hubs = np.argsort(graph.degree)[::-1][:20].tolist()
    walls, non_model, model, calls = [], [], [], []
    for i in range(runs):
        a, b = (entity_name(int(x)) for x in rng.choice(hubs + rng.choice(graph.n_entities, 20).tolist(), 2))
        chat = TimedChat()
        deps = query_deps(settings, stores, providers(embedder), chat)
        question = DRIFT_QUESTIONS[i % len(DRIFT_QUESTIONS)].format(a=a, b=b)
        started = time.perf_counter()
        result = await DriftWorkflow(deps).run(start_event=DriftStart(kb=kb, question=question))
        wall = time.perf_counter() - started
        if i == 0:
            continue  # warm-up
        walls.append(wall)
        model.append(chat.seconds)
        non_model.append(wall - chat.seconds)
        calls.append(result.llm_calls)
    print(f"DRIFT embedder: {embedder}")
    print(line("DRIFT: wall (scripted model in process)", walls))
    print(line("DRIFT: time inside the model's calls", model))
    print(line("DRIFT: non-model time", non_model), f"model calls/query {statistics.median(calls):.0f}")
    calls_note = f"{statistics.median(calls):.0f} model calls per query; embedder {embedder}"
    return [
        row("DRIFT: wall (scripted model in process)", walls),
        row("DRIFT: time inside the model's calls", model),
        row("DRIFT: non-model time", non_model, calls_note),
    ]


async def stats(stores: Stores, kb: str, runs: int) -> Rows:
    """`stats` of the kb, and the kb list (every kb of the server with its counts, this one among them)."""
    rows: Rows = []
    for name, call in (("stats", lambda: stores.kbs.counts(kb)), ("kb list", stores.kbs.list_kbs)):
        await call()
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            result = await call()
            times.append(time.perf_counter() - started)
        counts = result if name == "stats" else next(summary.counts for summary in result if summary.kb == kb)
        print(line(name, times), counts, flush=True)
        rows.append(row(name, times))
    return rows


async def leiden(stores: Stores, settings: Settings, kb: str) -> None:
    # The phases inside community detection (Leiden, splits, listing) are logged at debug level.
    phases: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: phases.append(record.getMessage())  # type: ignore[method-assign]
    communities_log = logging.getLogger("driftrag.ingestion.communities")
    communities_log.addHandler(handler)
    communities_log.setLevel(logging.DEBUG)
    started = time.perf_counter()
    community_graph = await read_community_graph(stores.communities, kb)
    read = time.perf_counter() - started
    communities = detect_graph_communities(
        community_graph, max_cluster_size=settings.max_cluster_size, seed=settings.leiden_seed
    )
    total = time.perf_counter() - started
    levels = sorted({c.level for c in communities})
    print(
        json.dumps(
            {
                "read_s": round(read, 2),
                "total_s": round(total, 2),
                "edges": len(community_graph.edges),
                "communities": len(communities),
                "levels": len(levels),
                "phases": phases,
                # This process's CPU time: what the machine's load does not inflate (the server's is apart).
                "cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            }
        )
    )


def _rss_mib() -> tuple[float, float]:
    """(current, peak) resident memory of this process, MiB."""
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def delete_documents(stores: Stores, settings: Settings, kb: str, runs: int) -> Rows:
    """Delete `runs` documents one after another (each the middle one of those left), each followed by
    the refresh of the derived layers; time and peak RSS of each, then p50/p95."""
    deps = ingestion_deps(settings, stores, providers(), TimedChat())
    # The phases (entity layer: read, merge, write, PMIs; communities and reports; embeddings) are logged.
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("  %(name)s: %(message)s"))
    for name in (
        "driftrag.ingestion.indexing",
        "driftrag.ingestion.incremental",
        "driftrag.ingestion.community_refresh",
    ):
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.INFO)
    seconds = []
    for _ in range(runs):
        documents = await stores.extractions.documents(kb)
        document = documents[len(documents) // 2]
        stale = await stores.kbs.is_stale(kb)
        started = time.perf_counter()
        await indexing.delete_document(deps, kb, document["id"], no_progress)
        seconds.append(time.perf_counter() - started)
        current, peak = _rss_mib()
        print(
            f"delete one document ({document['title']}, of {len(documents)}; kb stale before: {stale}) and "
            f"refresh: {seconds[-1]:.1f} s, RSS now {current:.0f} MiB, peak so far {peak:.0f} MiB, "
            f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        print(f"  {await stores.kbs.counts(kb)}")
    print(
        f"delete one document: p50 {statistics.median(seconds):.1f} s, p95 {pct(seconds, 95):.1f} s "
        f"over {len(seconds)}; peak RSS {_rss_mib()[1]:.0f} MiB"
    )
    return [
        [
            "delete one document and refresh the derived layers",
            f"{statistics.median(seconds):.1f} / {pct(seconds, 95):.1f} s",
            str(len(seconds)),
            f"peak RSS {_rss_mib()[1]:.0f} MiB; scripted model, hashing embedder",
        ]
    ]


async def run(args: argparse.Namespace) -> None:
    if args.only == "leiden-child":
        settings = Settings(neo4j_uri=args.neo4j_uri) if args.neo4j_uri else Settings()
        stores = neo4j_roles(Neo4jStore.from_settings(settings))
        try:
            await stores.database.connect()
            await leiden(stores, settings, args.kb)
        finally:
            await stores.database.close()
        return
    tables = await run_operations(args)
    if args.record:
        for group, rows in tables.items():
            name, title = TABLES[group]
            note = f"kb `{args.kb}`, {args.relationships:,} relationships (seed {args.seed})."
            record(name, title, ["operation", "p50 / p95", "runs", "notes"], rows, note=note)


async def run_operations(args: argparse.Namespace) -> dict[str, Rows]:
    """Run the operations `--only` selects; the rows of each group that ran."""
    settings = Settings(neo4j_uri=args.neo4j_uri) if args.neo4j_uri else Settings()
    stores = neo4j_roles(Neo4jStore.from_settings(settings))
    tables: dict[str, Rows] = {}
    try:
        await stores.database.connect()
        if args.only == "delete":
            tables["delete"] = await delete_documents(stores, settings, args.kb, args.delete_runs)
            return tables
        if args.only in (None, "leiden"):  # not for "graph": only the graph searches run
            results = []
            for _ in range(args.leiden_runs):
                child = await asyncio.to_thread(
                    subprocess.run,
                    [sys.executable, __file__, *sys.argv[1:], "--only", "leiden-child"],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                results.append(json.loads(child.stdout.strip().splitlines()[-1]))
            for r in results:
                print(f"Leiden run: {r}")
            if results:
                print(
                    f"Leiden on the stored graph: median {statistics.median(r['total_s'] for r in results):.1f} s "
                    f"(paged read {statistics.median(r['read_s'] for r in results):.1f} s), "
                    f"peak RSS median {statistics.median(r['peak_rss_mib'] for r in results):.0f} MiB"
                )
                tables["leiden"] = [
                    [
                        "Leiden on the stored graph (paged read, Leiden, splits, listing)",
                        f"median {statistics.median(r['total_s'] for r in results):.1f} s",
                        str(len(results)),
                        f"paged read {statistics.median(r['read_s'] for r in results):.1f} s, "
                        f"CPU {statistics.median(r['cpu_s'] for r in results):.1f} s, peak RSS "
                        f"{statistics.median(r['peak_rss_mib'] for r in results):.0f} MiB, "
                        f"{results[0]['communities']:,} communities",
                    ]
                ]
            if args.only == "leiden":
                return tables
        graph = SyntheticGraph(args.relationships, args.seed)
        if not args.no_freeze:
            freeze_startup_objects()  # as `driftrag serve` does once started
        if args.graph_runs and args.only in (None, "graph"):
            tables["graph"] = await graph_searches(stores, settings, args.kb, graph, args.graph_runs)
        if args.only in (None, "local"):
            tables["local"] = await local_contexts(stores, settings, args.kb, graph, args.runs)
        if args.only in (None, "drift"):
            drift_runs = max(args.runs // 2, 3) + 1
            tables["drift"] = await drift_queries(stores, settings, args.kb, graph, drift_runs, args.drift_embedder)
        if args.only in (None, "stats"):
            tables["stats"] = await stats(stores, args.kb, args.runs)
    finally:
        await stores.database.close()
    return tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", default="synthetic")
    parser.add_argument("--relationships", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--runs", type=int, default=20, help="local contexts and stats; DRIFT runs half as many")
    parser.add_argument("--graph-runs", type=int, default=3, help="passes over the graph-search queries")
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="leave the objects of the set-up in the cyclic collector's reach (the server freezes them once started)",
    )
    parser.add_argument("--leiden-runs", type=int, default=3)
    parser.add_argument("--delete-runs", type=int, default=1, help="documents deleted one after another")
    parser.add_argument(
        "--only", choices=["graph", "leiden", "delete", "local", "drift", "stats", "leiden-child"], default=None
    )
    parser.add_argument("--neo4j-uri", default=None)
    parser.add_argument("--drift-embedder", choices=["random", "hashing"], default="random")
    add_record_option(parser)
    args = parser.parse_args()
    if args.record and args.relationships != 1_000_000:
        parser.error("--record writes the million-relationship tables: use it with --relationships 1000000")
    logging.getLogger("driftrag.search.graph_search").setLevel(logging.ERROR)  # one warning per cut search
    child = args.only == "leiden-child"
    if not child:
        print(f"load average {open('/proc/loadavg').read().split()[:3]}", flush=True)
    asyncio.run(run(args))
    if not child:
        print(f"load average {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
