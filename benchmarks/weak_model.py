"""The sample corpus through a real small model served by llama.cpp (issue 34): ingestion, then every
query mode, printing for each answer its failed steps, its degraded reasons and whether it is grounded.
Not part of CI: it needs a running OpenAI-compatible llama.cpp server, e.g.

    pip install 'llama-cpp-python[server]'          # CMAKE_ARGS=-DGGML_NATIVE=ON builds it for this CPU
    python -m llama_cpp.server --model SmolLM2-135M-Instruct-Q4_K_M.gguf --n_ctx 8192 --port 8080
    .venv/bin/python benchmarks/weak_model.py --url http://127.0.0.1:8080/v1 [--questions data/questions/sample.jsonl]
        [--limit 5] [--modes basic,local,entity,global,drift] [--neo4j-uri bolt://127.0.0.1:7687]

Without `--url` (or `DRIFTRAG_BENCH_LLAMACPP_URL`) it says so and exits 0. Embeddings are the offline e5
(no embedding server needed); the response cache is off, so every call reaches the model. Without
`--neo4j-uri` the project's local Neo4j is started (`DRIFTRAG_NEO4J_PORT`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driftrag.corpora import DATA_DIR
from driftrag.eval.questions import load_questions
from driftrag.facade import DriftRAG
from driftrag.search.models import QueryResult, degraded_summary
from driftrag.search.modes import MODE_NAMES
from driftrag.settings import Settings

DEMO_QUESTION = (
    "Who made the light at Cinder Point Lighthouse fail, and why did Lady Maud Ferrers want the Lantern Charter "
    "to disappear?"
)
# The degradations that mean a step's own answer was lost (the others only tolerated something in it).
FAILED_STEP = {"fallback", "dropped"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("DRIFTRAG_BENCH_LLAMACPP_URL"), help="llama.cpp's /v1 URL")
    parser.add_argument("--model", default="local", help="the model name the server is asked for")
    parser.add_argument("--context-window", type=int, default=8192, help="the server's --n_ctx")
    parser.add_argument("--questions", type=Path, help="a question set (.jsonl); default: the demo question")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions only (0: all)")
    parser.add_argument("--modes", default=",".join(MODE_NAMES), help="comma-separated query modes")
    parser.add_argument("--neo4j-uri", default=None)
    parser.add_argument("--timeout", type=float, default=600.0, help="per model call, seconds")
    parser.add_argument("--no-json-format", action="store_true", help="send no response_format (llm_structured=off)")
    parser.add_argument("--kb", default="weak-model-bench")
    return parser.parse_args()


def grounded(result: QueryResult) -> str:
    return "ungrounded" if result.ungrounded else "grounded"


def excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def main(args: argparse.Namespace) -> int:
    if not args.url:
        print(
            "no llama.cpp server given: pass --url http://127.0.0.1:8080/v1 (or set DRIFTRAG_BENCH_LLAMACPP_URL) "
            "after `python -m llama_cpp.server --model <model.gguf>`; skipping"
        )
        return 0
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(
        model=args.model,
        api_base=args.url,
        api_key="none",
        is_chat_model=True,
        context_window=args.context_window,
        timeout=args.timeout,
        max_retries=0,
    )
    questions = [DEMO_QUESTION]
    if args.questions:
        questions = [item.question for item in load_questions(args.questions)]
    if args.limit:
        questions = questions[: args.limit]
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-weak-") as home:
        settings = Settings(
            neo4j_uri=args.neo4j_uri,
            home=Path(home),
            llm_cache=False,
            llm_timeout_s=args.timeout,
            llm_structured="off" if args.no_json_format else "auto",
            query_timeout_s=max(args.timeout * 10, 300.0),
        )
        async with DriftRAG(settings, llm=llm) as rag:
            print(rag.providers.describe())
            await rag.delete_kb(args.kb)
            started = time.monotonic()
            ingested = await rag.ingest(args.kb, paths=[DATA_DIR / "sample"])
            counts = ingested.counts
            print(
                f"ingestion {time.monotonic() - started:.0f} s: {counts.chunks} chunks, {counts.entities} entities, "
                f"{counts.relationships} relationships, {counts.communities} communities; "
                f"{counts.offline_extracted_chunks} chunks extracted offline, {len(ingested.failed_chunks)} failed"
            )
            for chunk in ingested.failed_chunks:
                print(f"  failed chunk {chunk.id}: {excerpt(chunk.error or '', 200)}")
            tally = {mode: {"answered": 0, "failed": 0, "degraded": 0, "ungrounded": 0} for mode in modes}
            try:
                for question in questions:
                    print(f"\n## {question}")
                    for mode in modes:
                        started = time.monotonic()
                        try:
                            result = await rag.query(args.kb, question, mode=mode)
                        except Exception as exc:  # a benchmark reports every failure and goes on
                            tally[mode]["failed"] += 1
                            print(f"- {mode}: FAILED ({type(exc).__name__}: {excerpt(str(exc), 200)})")
                            continue
                        seconds = time.monotonic() - started
                        tally[mode]["answered"] += 1
                        tally[mode]["degraded"] += bool(result.degraded)
                        tally[mode]["ungrounded"] += result.ungrounded
                        lost = sorted({item.step for item in result.degraded if item.reason in FAILED_STEP})
                        print(
                            f"- {mode} ({seconds:.0f} s, {result.llm_calls} calls, {grounded(result)}): "
                            f"{excerpt(result.answer)}"
                        )
                        print(f"  failed steps: {', '.join(lost) or 'none'}")
                        print(f"  degraded: {degraded_summary(result.degraded) or 'nothing'}")
            finally:
                await rag.delete_kb(args.kb)
    print("\nmode     answered  failed  degraded  ungrounded")
    for mode, row in tally.items():
        print(f"{mode:<8} {row['answered']:>8}  {row['failed']:>6}  {row['degraded']:>8}  {row['ungrounded']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
