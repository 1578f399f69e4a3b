"""Time to the first answer token vs the whole answer, per query mode, through the OpenAI-compatible
test server streaming its answers (`OpenAILike` as the LLM, a fixed latency per request and per token).

Ingests the small harbour corpus of the tests through the server, then streams each question in every
mode (`DriftRAG.stream`) and prints, per mode, medians of: seconds to the first `AnswerDelta`, seconds
to `QueryFinished`, and the number of deltas; then the unstreamed `DriftRAG.query` wall for comparison.

    .venv/bin/python benchmarks/stream_latency.py --neo4j-uri bolt://127.0.0.1:7687 [--latency 0.2] [--token-delay 0.02]
        [--record]   # replace the "Streamed answers" table of docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from llama_index.embeddings.openai import OpenAIEmbedding
from llama_index.llms.openai_like import OpenAILike

from benchmarks.record import add_record_option, record
from driftrag.facade import DriftRAG
from driftrag.search.modes import MODE_NAMES
from driftrag.search.streaming import AnswerDelta, QueryFinished
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import ScriptedResponder

DIMENSION = 384
QUESTIONS = [
    "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?",
    "Who keeps the lighthouse, and what does the harbour fear?",
    "What happened to the ships near the Grey Reef?",
]


async def run(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="bench-stream-") as home,
        FakeOpenAIServer(
            responder=ScriptedResponder(),
            embedding_dimension=DIMENSION,
            latency_s=args.latency,
            stream_delay_s=args.token_delay,
        ) as server,
    ):
        settings = Settings(
            _env_file=None, neo4j_uri=args.neo4j_uri, home=Path(home), llm_cache=False, chunk_size=120, chunk_overlap=10
        )
        llm = OpenAILike(model="bench", api_base=server.base_url, api_key="bench", is_chat_model=True)
        embed = OpenAIEmbedding(model_name="bench", api_base=server.base_url, api_key="bench", dimensions=DIMENSION)
        kb = f"bench-stream-{uuid.uuid4().hex[:6]}"
        async with DriftRAG(settings, llm=llm, embed_model=embed) as rag:
            try:
                await rag.ingest(kb, texts=CORPUS)
                print(f"latency {args.latency:g} s/request, {args.token_delay:g} s/token; {len(QUESTIONS)} questions")
                print("mode     first token s   whole answer s   deltas   unstreamed s")
                rows = []
                for mode in MODE_NAMES:
                    first, whole, deltas, plain = [], [], [], []
                    for question in QUESTIONS:
                        started = time.monotonic()
                        seen = None
                        count = 0
                        async for event in rag.stream(kb, question, mode=mode):
                            if isinstance(event, AnswerDelta):
                                count += 1
                                seen = seen if seen is not None else time.monotonic() - started
                            elif isinstance(event, QueryFinished):
                                whole.append(time.monotonic() - started)
                        first.append(seen or 0.0)
                        deltas.append(count)
                        started = time.monotonic()
                        await rag.query(kb, question, mode=mode)
                        plain.append(time.monotonic() - started)
                    print(
                        f"{mode:<8} {statistics.median(first):>13.2f} {statistics.median(whole):>16.2f} "
                        f"{statistics.median(deltas):>8.0f} {statistics.median(plain):>14.2f}"
                    )
                    rows.append(
                        [
                            mode,
                            f"{statistics.median(first):.2f} / {statistics.median(whole):.2f} s",
                            f"{statistics.median(deltas):.0f}",
                            f"{statistics.median(plain):.2f} s",
                        ]
                    )
            finally:
                await rag.delete_kb(kb)
    if args.record:
        columns = ["mode", "first token / whole answer", "deltas", "unstreamed"]
        note = (
            f"Medians of {len(QUESTIONS)} questions on the tests' harbour corpus; {args.latency:g} s per request, "
            f"{args.token_delay:g} s per streamed word."
        )
        record("stream-latency", "Streamed answers", columns, rows, note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--neo4j-uri", required=True, help="Bolt URI of a running Neo4j (e.g. the local one).")
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds before each response starts.")
    parser.add_argument("--token-delay", type=float, default=0.02, help="Seconds between streamed words.")
    add_record_option(parser)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
