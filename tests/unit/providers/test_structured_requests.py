"""Structured outputs over real HTTP: each JSON task's request carries its answer schema, and `auto`
steps down (JSON mode, then the prompt alone) on a server that refuses it, remembering the refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from driftrag.errors import ModelError
from driftrag.eval.generate import PersonasPayload, QuestionsPayload, generate_questions
from driftrag.eval.judge import JudgeVerdict, PairwiseJudge, TrialSpec
from driftrag.ingestion.config_draft import ConfigDraftPayload, LLMConfigDrafter
from driftrag.ingestion.llm_tasks import LLMCommunityReporter, LLMGraphExtractor
from driftrag.ingestion.reports import build_report_context
from driftrag.models.graph import (
    MAX_ITEMS_PER_CHUNK,
    Chunk,
    Community,
    ExtractConfig,
    MergedEntity,
    ReportPayload,
    extraction_payload,
    items_for_passage,
)
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers import ModelClient, UsageTracker, build_providers
from driftrag.providers.handles import Handles
from driftrag.providers.structured import response_format, strict_schema
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.global_search.models import GlobalPoint, MapPayload, ReportBatch
from driftrag.search.llm_tasks import EntityNames, llm_query_tasks
from driftrag.search.models import ReducedAnswer, cited_answer_payload
from driftrag.settings import Settings
from tests.fakes.custom_llm import ScriptedCustomLLM
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import ScriptedResponder
from tests.support.search_context import SOURCES, context_of

CHAT = "/v1/chat/completions"
PROMPTS = PromptRegistry.load()
CHUNK = Chunk(
    id="chunk-1",
    document_id="doc-1",
    index=0,
    text="Captain Mirela Voss sailed the Amber Lantern out of Harbor Town. Jonas Pell kept the charts for Mirela Voss.",
    n_tokens=30,
    start_char=0,
    end_char=100,
)


def _client(settings: Settings, **updates: object) -> ModelClient:
    client = build_providers(settings.model_copy(update=updates)).model_client
    assert client is not None
    return client


def _formats(server: FakeOpenAIServer) -> list[Any]:
    return [request.json.get("response_format") for request in server.requests_to(CHAT)]


def _assert_schema_of(sent: Any, model: type[BaseModel]) -> None:
    assert sent == response_format(model)
    assert sent["json_schema"]["strict"] is True
    schema = sent["json_schema"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == list(schema["properties"])


def _community_context():
    entities = [
        MergedEntity(
            id=f"entity-{i}",
            name=name,
            normalised_name=name.lower(),
            type="PERSON",
            descriptions=[f"{name} sails from Harbor Town."],
            source_chunk_ids=["chunk-1"],
        )
        for i, name in enumerate(["Mirela Voss", "Jonas Pell"])
    ]
    community = Community(
        id="community-0-0", level=0, entity_ids=[e.id for e in entities], chunk_ids=["chunk-1"], relationship_ids=[]
    )
    return build_report_context(community, {e.id: e for e in entities}, {}, {}, {}, 4000)


async def test_the_ingestion_tasks_send_their_answer_schema(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.responder = ScriptedResponder()
    client = _client(openai_settings)
    outcome = await LLMGraphExtractor(client, PROMPTS, max_gleanings=1).extract(CHUNK, ExtractConfig())
    report = await LLMCommunityReporter(client, PROMPTS).report(_community_context())
    assert outcome.entities and outcome.gleaning_rounds == 1 and not report.failed
    extraction, gleaning, reporting = _formats(openai_server)
    # A short chunk's lists are bounded by its length, in the first question and the gleaning alike.
    bounded = extraction_payload(items_for_passage(CHUNK.n_tokens))
    _assert_schema_of(extraction, bounded)
    _assert_schema_of(gleaning, bounded)
    assert extraction["json_schema"]["schema"]["properties"]["entities"]["maxItems"] < MAX_ITEMS_PER_CHUNK
    _assert_schema_of(reporting, ReportPayload)
    assert client.usage.snapshot().json_schema_calls == 3


async def test_the_query_tasks_send_their_answer_schema(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.responder = ScriptedResponder()
    tasks = llm_query_tasks(_client(openai_settings), PROMPTS, openai_settings)
    context = context_of(SOURCES)
    await tasks.namer.entity_names("Who is Mirela Voss?")
    await tasks.answerer.answer("Who sails?", context, max_follow_ups=2)
    await tasks.primer.prime("Who sails?", context_of(SOURCES[2:]), max_follow_ups=2)
    answer = IntermediateAnswer(
        id="primer", depth=0, query="q", answer="Voss sails.", score=70, source_ids=["chunk-aaa1"]
    )
    await tasks.reducer.reduce("Who sails?", [answer])
    await tasks.global_mapper.map("Who sails?", ReportBatch(index=0, first_rank=0, context=context), max_points=3)
    point = GlobalPoint(id="b0-p1", batch=0, description="Voss sails.", score=80, report_ids=["community-0-1"])
    await tasks.global_reducer.reduce("Who sails?", [point])
    await tasks.hyde.hypothetical_report("Who sails?", "# Title\n\nA report.")
    names, local, primer, drift_reduce, global_map, global_reduce, hyde = _formats(openai_server)
    for sent, model in (
        (names, EntityNames),
        (local, cited_answer_payload(tuple(Handles(s.id for s in SOURCES).ids))),
        (primer, cited_answer_payload(tuple(Handles(s.id for s in SOURCES[2:]).ids))),
        (drift_reduce, ReducedAnswer),
        (global_map, MapPayload),
        (global_reduce, ReducedAnswer),
    ):
        _assert_schema_of(sent, model)
    assert hyde is None  # plain text: no format asked
    # An answer can cite only the handles its context showed.
    cited = local["json_schema"]["schema"]["properties"]["citations"]
    assert cited["items"]["enum"] == [f"S{n}" for n in range(1, len(SOURCES) + 1)]


async def test_the_evaluation_and_config_tasks_send_their_answer_schema(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    answers = {
        "PersonasPayload": {"personas": [{"name": "a sailor", "description": "", "tasks": ["Find the ships"]}]},
        "QuestionsPayload": {"questions": ["Which ships sail?"]},
        "JudgeVerdict": {"reasoning": "r", **dict.fromkeys(("comprehensiveness", "diversity", "empowerment"), "1")}
        | {"directness": "tie"},
        "ConfigDraftPayload": {"text": "Voss sails.", "tags": ["SAILS"], "nodes": [], "relations": []},
    }
    openai_server.responder = lambda request: json.dumps(answers[request["response_format"]["json_schema"]["name"]])
    client = _client(openai_settings)
    await generate_questions(client, "A corpus of sea stories.", personas=1, tasks=1, questions=1, prompts=PROMPTS)
    spec = TrialSpec(question_id="q1", method_a="a", repeat_a=0, method_b="b", repeat_b=0, trial=0, order="ab")
    await PairwiseJudge(client, PROMPTS, max_tokens=500).judge(spec, "Who?", "Voss.", "Pell.")
    await LLMConfigDrafter(client, PROMPTS).draft("Sea stories of a harbour town.")
    personas, questions, verdict, draft = _formats(openai_server)
    for sent, model in (
        (personas, PersonasPayload),
        (questions, QuestionsPayload),
        (verdict, JudgeVerdict),
        (draft, ConfigDraftPayload),
    ):
        _assert_schema_of(sent, model)


async def test_a_refused_schema_is_asked_again_in_json_mode_then_remembered(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    openai_server.rejects_json_schema = True
    client = _client(openai_settings)
    messages = [{"role": "user", "content": "names?"}]
    first = await client.chat(messages, schema=EntityNames)
    assert first.text
    assert [f and f["type"] for f in _formats(openai_server)] == ["json_schema", "json_object"]
    # The next call goes straight to JSON mode.
    await client.chat([{"role": "user", "content": "more names?"}], schema=EntityNames)
    assert [f and f["type"] for f in _formats(openai_server)][2:] == ["json_object"]
    usage = client.usage.snapshot()
    assert (usage.structured_fallbacks, usage.json_object_calls, usage.json_schema_calls, usage.failed_calls) == (
        1,
        2,
        0,
        0,
    )
    # A server refusing any format next: the same call steps down to the prompt alone, and stays there.
    openai_server.rejects_response_format = True
    await client.chat([{"role": "user", "content": "and now?"}], schema=EntityNames)
    await client.chat([{"role": "user", "content": "and later?"}], schema=EntityNames)
    assert [f and f["type"] for f in _formats(openai_server)][3:] == ["json_object", None, None]
    usage = client.usage.snapshot()
    assert (usage.structured_fallbacks, usage.prompt_only_json_calls, usage.chat_calls) == (2, 2, 4)


async def test_a_fixed_level_is_not_stepped_down(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    openai_server.rejects_json_schema = True
    client = _client(openai_settings, llm_structured="json_schema")
    with pytest.raises(ModelError, match="json_schema"):
        await client.chat([{"role": "user", "content": "names?"}], schema=EntityNames)
    assert len(openai_server.requests_to(CHAT)) == 1
    # JSON mode asked for: no schema is sent, even with one given.
    client = _client(openai_settings, llm_structured="json_object")
    await client.chat([{"role": "user", "content": "names?"}], schema=EntityNames)
    assert _formats(openai_server)[-1] == {"type": "json_object"}


async def test_another_schema_is_another_cache_entry(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    client = _client(openai_settings)
    messages = [{"role": "user", "content": "same prompt"}]
    await client.chat(messages, schema=EntityNames)
    assert (await client.chat(messages, schema=EntityNames)).cached
    assert not (await client.chat(messages, schema=ReducedAnswer)).cached
    assert len(openai_server.requests_to(CHAT)) == 2


class RecordingLLM(ScriptedCustomLLM):
    """A LlamaIndex LLM that is not of the OpenAI classes, answering `{}` and recording its call options."""

    def _answer(self, messages: Any, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._kwargs.append(dict(kwargs))
        return '{"names": []}', {}


class Ollama(RecordingLLM):
    """Named as LlamaIndex's own Ollama class (llama_index.llms.ollama), which takes a schema as `format`."""


async def test_ollamas_own_class_gets_the_schema_as_format() -> None:
    llm = Ollama()
    client = ModelClient(llm, provider="ollama", model="llama3.2", usage=UsageTracker())
    await client.chat([{"role": "user", "content": "Who is Mirela Voss?"}], schema=EntityNames)
    await client.chat([{"role": "user", "content": "Who is Jonas Pell?"}], json_mode=True)
    await client.chat([{"role": "user", "content": "Who is Anselm Hale?"}])
    assert [kwargs.get("format") for kwargs in llm.call_kwargs] == [strict_schema(EntityNames), "json", None]
    # Any other LlamaIndex LLM still gets the messages alone.
    other = RecordingLLM()
    await ModelClient(other, provider="custom", model="m", usage=UsageTracker()).chat(
        [{"role": "user", "content": "Who is Mirela Voss?"}], schema=EntityNames
    )
    assert other.call_kwargs == [{}]
