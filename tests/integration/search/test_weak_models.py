"""A weak model through the OpenAI-compatible test server (issue 34): ingestion completes with the
chunks it could not extract filled offline and marked, and every mode answers, saying in `degraded`
what it tolerated or replaced; an answer that copies the prompt's example is flagged ungrounded."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from driftrag.api.models import QueryResponse
from driftrag.corpora import DATA_DIR
from driftrag.eval.questions import load_questions
from driftrag.facade import DriftRAG
from driftrag.search.modes import MODE_NAMES
from driftrag.search.streaming import AnswerDelta, AnswerReset, QueryFinished
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.weak_model import WeakModelResponder

DIMENSION = 384  # the offline embedder's, so the shared vector indexes stay as they are
QUESTION = "Who made the light at Cinder Point Lighthouse fail?"
# The model cannot extract the chunks naming the charter: a wrong object, as SmolLM2 wrote.
UNEXTRACTABLE = "Charter"
# What SmolLM2-135M did in issue 34, and the other mistakes of small and reasoning models.
ISSUE_34 = {
    "answer": "missing_score",
    "primer": "missing_score",
    "names": "wrong_object",
    "reduce": "think",
    "global_map": "prose",
    "global_reduce": "example_copy",
}


@pytest.fixture(scope="module")
async def weak(neo4j_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple]:
    responder = WeakModelResponder({"extract": "wrong_object"}, chunks_containing=UNEXTRACTABLE)
    with FakeOpenAIServer(responder=responder, embedding_dimension=DIMENSION) as server:
        settings = neo4j_settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_api_key": SecretStr("test"),
                "openai_base_url": server.base_url,
                "home": Path(tmp_path_factory.mktemp("weak")),
                "embedding_dimensions": DIMENSION,
                "llm_cache": False,
                "llm_max_retries": 0,
                "llm_timeout_s": 5.0,
                "chunk_size": 300,
                "chunk_overlap": 20,
            }
        )
        kb = f"test-weak-{uuid.uuid4().hex[:8]}"
        async with DriftRAG(settings) as rag:
            try:
                ingested = await rag.ingest(kb, paths=[DATA_DIR / "sample"])
                yield rag, kb, responder, ingested
            finally:
                await rag.delete_kb(kb)


async def test_ingestion_fills_the_unusable_chunks_offline_and_marks_them(weak: tuple) -> None:
    rag, kb, _, ingested = weak
    assert ingested.failed_chunks == []
    counts = await rag.stats(kb)
    assert 0 < counts.offline_extracted_chunks < counts.chunks
    assert ingested.counts.offline_extracted_chunks == counts.offline_extracted_chunks
    assert counts.entities and counts.reports
    extractions = await rag.stores.extractions.extractions(kb)
    offline = [o for o in extractions if o.origin == "offline"]
    assert len(offline) == counts.offline_extracted_chunks and all(o.entities for o in offline)


@pytest.mark.parametrize(
    ("mode", "behaviours", "expected"),
    [
        ("basic", {"answer": "missing_score"}, [("answer", "missing_score")]),
        ("basic", {"answer": "prose"}, [("answer", "prose_answer")]),
        ("local", {"answer": "wrong_object"}, [("answer", "fallback")]),
        ("local", {"answer": "think"}, [("answer", "think_block")]),
        (
            "entity",
            {"names": "wrong_object", "answer": "response_key"},
            [("query entities", "fallback"), ("answer", "answer_key")],
        ),
        ("entity", {"answer": "example_copy"}, [("answer", "ungrounded")]),
        (
            "drift",
            {"primer": "missing_score", "answer": "Answer_key", "reduce": "think"},
            [("primer", "missing_score"), ("follow-up", "answer_key"), ("reduce", "think_block")],
        ),
        (
            "drift",
            {"primer": "wrong_object", "reduce": "wrong_object"},
            [("primer", "fallback"), ("reduce", "fallback")],
        ),
        ("drift", {"answer": "wrong_object"}, [("follow-up", "dropped")]),
        (
            "global",
            {"global_map": "missing_score", "global_reduce": "example_copy"},
            [("global map", "missing_score"), ("global reduce", "ungrounded")],
        ),
        ("global", {"global_map": "wrong_object", "global_reduce": "prose"}, [("global map", "fallback")]),
    ],
)
async def test_every_mode_answers_a_weak_model_and_says_how(
    weak: tuple, mode: str, behaviours: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    rag, kb, responder, _ = weak
    responder.behaviours = behaviours
    try:
        result = await rag.query(kb, QUESTION, mode=mode)
    finally:
        responder.behaviours = {}
    assert result.answer.strip()
    reasons = [(item.step, item.reason) for item in result.degraded]
    assert set(expected) <= set(reasons), reasons
    # Python, HTTP and the CLI's one line say the same.
    assert QueryResponse.from_result(result).degraded == result.degraded
    assert "*Degraded: " in result._repr_markdown_()
    if mode == "drift" and ("primer", "fallback") in expected:
        assert any(f.query == QUESTION and f.status == "searched" for f in result.follow_ups)


@pytest.mark.parametrize(
    ("mode", "task", "behaviour", "step"),
    [
        ("basic", "answer", "lone_citation", "answer"),
        ("local", "answer", "token_run", "answer"),
        ("entity", "answer", "loop", "answer"),
        ("drift", "reduce", "loop", "reduce"),
        ("global", "global_reduce", "lone_citation", "global reduce"),
    ],
)
async def test_a_degenerate_answer_is_flagged_in_every_mode(
    weak: tuple, mode: str, task: str, behaviour: str, step: str
) -> None:
    rag, kb, responder, _ = weak
    responder.behaviours = {task: behaviour}
    try:
        result = await rag.query(kb, QUESTION, mode=mode)
    finally:
        responder.behaviours = {}
    assert (step, "degenerate") in [(item.step, item.reason) for item in result.degraded], result.degraded
    assert result.degenerate and result.answer.strip()


async def test_a_well_formed_model_degrades_nothing(weak: tuple) -> None:
    rag, kb, _, _ = weak
    for mode in ("basic", "local", "drift"):
        result = await rag.query(kb, QUESTION, mode=mode)
        assert result.degraded == [], (mode, result.degraded)
        assert "Degraded" not in result._repr_markdown_()


async def test_the_sample_question_set_has_no_failed_query_in_any_mode(weak: tuple) -> None:
    rag, kb, responder, _ = weak
    questions = load_questions(DATA_DIR / "questions" / "sample.jsonl")
    responder.behaviours = dict(ISSUE_34)
    ungrounded = dict.fromkeys(MODE_NAMES, 0)
    global_reduces = 0
    try:
        for mode in MODE_NAMES:
            for item in questions:
                result = await rag.query(kb, item.question, mode=mode)  # a failure would raise here
                assert result.answer.strip(), (mode, item.id)
                assert result.degraded, (mode, item.id)
                ungrounded[mode] += result.ungrounded
                global_reduces += mode == "global" and bool(result.reduced_from)
    finally:
        responder.behaviours = {}
    print("ungrounded share:", {mode: f"{n}/{len(questions)}" for mode, n in ungrounded.items()})
    # Only global's reduce copies the example here: flagged whenever it ran (a question whose map found
    # no key point is answered without a reduce), and nothing else is.
    assert global_reduces > 0
    assert ungrounded == {mode: global_reduces if mode == "global" else 0 for mode in MODE_NAMES}


@pytest.mark.parametrize(("mode", "task"), [("local", "answer"), ("drift", "reduce"), ("global", "global_reduce")])
async def test_a_streamed_answer_that_falls_back_ends_as_the_result(weak: tuple, mode: str, task: str) -> None:
    rag, kb, responder, _ = weak
    responder.behaviours = {task: "wrong_object"}
    text, result = "", None
    try:
        async for event in rag.stream(kb, QUESTION, mode=mode):
            if isinstance(event, AnswerReset):
                text = ""
            elif isinstance(event, AnswerDelta):
                text += event.text
            elif isinstance(event, QueryFinished):
                result = event.result
    finally:
        responder.behaviours = {}
    assert result is not None and result.answer.strip()
    assert text == result.answer
    assert any(item.reason == "fallback" for item in result.degraded)
