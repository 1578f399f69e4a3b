"""driftrag as LlamaIndex parts on the real Neo4j: the retriever, the query engine and the tool, read by
LlamaIndex's own evaluator and agent. The graph is the session's (`conftest.graph_kb`); queries are
answered by the scripted double of the model API."""

from __future__ import annotations

import pytest
from llama_index.core.agent.workflow import ReActAgent
from llama_index.core.base.response.schema import AsyncStreamingResponse, Response
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.schema import NodeWithScore
from llama_index.core.settings import Settings as LlamaIndexSettings

from driftrag.errors import InvalidQueryError
from driftrag.facade import DriftRAG
from driftrag.providers import Providers
from driftrag.providers.factory import build_providers
from driftrag.search.modes import MODE_NAMES
from driftrag.settings import Settings
from tests.fakes.custom_llm import ScriptedCustomLLM
from tests.fakes.react_llm import ScriptedReActLLM
from tests.fakes.scripted_llm import ScriptedChatModel

QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


def make_rag(settings: Settings, providers: Providers) -> DriftRAG:
    return DriftRAG(settings, providers=providers, chat=ScriptedChatModel())


@pytest.mark.parametrize("mode", MODE_NAMES)
async def test_the_retriever_returns_the_modes_ranking_as_nodes(
    search_settings: Settings, search_providers: Providers, graph_kb: str, mode: str
) -> None:
    async with make_rag(search_settings, search_providers) as rag:
        result = await rag.query(graph_kb, QUESTION, mode=mode)
        nodes = await rag.as_retriever(graph_kb, mode=mode, top_k=5).aretrieve(QUESTION)
    ranked = result.retrieved_sources()[:5]
    assert [n.node.node_id for n in nodes] == [s.id for s in ranked]
    assert all(isinstance(n, NodeWithScore) and n.score is not None for n in nodes)
    assert [n.node.metadata["rank"] for n in nodes] == list(range(1, len(nodes) + 1))
    assert [n.node.metadata["kind"] for n in nodes] == [s.kind for s in ranked]
    assert [n.node.get_content() for n in nodes] == [s.text for s in ranked]


async def test_llama_indexs_retriever_evaluator_reads_the_retriever(
    search_settings: Settings, search_providers: Providers, graph_kb: str
) -> None:
    async with make_rag(search_settings, search_providers) as rag:
        result = await rag.query(graph_kb, QUESTION, mode="basic")
        ranked = [s.id for s in result.retrieved_sources()]
        evaluator = RetrieverEvaluator.from_metric_names(
            ["hit_rate", "mrr"], retriever=rag.as_retriever(graph_kb, mode="basic", top_k=4)
        )
        # The mode's third-ranked source is the one expected: a hit, reciprocal rank 1/3.
        found = await evaluator.aevaluate(QUESTION, expected_ids=[ranked[2]])
        missed = await evaluator.aevaluate(QUESTION, expected_ids=["no-such-chunk"])
    assert found.metric_vals_dict == {"hit_rate": 1.0, "mrr": pytest.approx(1 / 3)}
    assert missed.metric_vals_dict == {"hit_rate": 0.0, "mrr": 0.0}


@pytest.mark.parametrize("mode", ["drift", "local", "global"])
async def test_the_query_engine_answers_with_cited_source_nodes_and_the_runs_cost(
    search_settings: Settings, search_providers: Providers, graph_kb: str, mode: str
) -> None:
    async with make_rag(search_settings, search_providers) as rag:
        response = await rag.as_query_engine(graph_kb, mode=mode).aquery(QUESTION)
    assert isinstance(response, Response)
    result = response.metadata["result"]
    assert response.response == result.answer and result.answer.strip()
    assert [n.node.node_id for n in response.source_nodes] == [s.id for s in result.cited_sources()]
    assert response.metadata["llm_calls"] == result.llm_calls > 0
    assert response.metadata["prompt_tokens"] == result.prompt_tokens > 0
    assert response.metadata["degraded"] == [item.model_dump() for item in result.degraded]
    if mode == "drift":
        assert response.metadata["follow_ups"] == [f.model_dump() for f in result.follow_ups]


async def test_a_streaming_engine_streams_the_answer_then_fills_its_sources(
    search_settings: Settings, search_providers: Providers, graph_kb: str
) -> None:
    # A LlamaIndex LLM that streams word by word, so the answer really arrives in pieces.
    rag = DriftRAG(search_settings, llm=ScriptedCustomLLM(), embed_model=search_providers.embedder)
    async with rag:
        response = await rag.as_query_engine(graph_kb, mode="local", streaming=True).aquery(QUESTION)
        assert isinstance(response, AsyncStreamingResponse) and response.source_nodes == []
        pieces = [piece async for piece in response.async_response_gen()]
    result = response.metadata["result"]
    assert len(pieces) > 1 and "".join(pieces) == result.answer
    assert [n.node.node_id for n in response.source_nodes] == [s.id for s in result.cited_sources()]


async def test_an_agent_calls_the_tool_and_answers_with_what_it_returned(
    search_settings: Settings, search_providers: Providers, graph_kb: str
) -> None:
    async with make_rag(search_settings, search_providers) as rag:
        tool = rag.as_tool(graph_kb, mode="local")
        expected = await rag.query(graph_kb, QUESTION, mode="local")
        llm = ScriptedReActLLM(tool_name=tool.metadata.name, question=QUESTION)
        agent = ReActAgent(tools=[tool], llm=llm)
        handler = agent.run(user_msg=QUESTION)
        calls = [event async for event in handler.stream_events() if type(event).__name__ == "ToolCallResult"]
        output = await handler
    assert tool.metadata.name == f"{graph_kb}_local_search".replace("-", "_")
    assert graph_kb in tool.metadata.description
    assert [c.tool_name for c in calls] == [tool.metadata.name]
    assert calls[0].tool_kwargs == {"input": QUESTION}
    assert str(calls[0].tool_output) == expected.answer
    assert expected.answer in str(output.response)


def test_the_sync_paths_run_on_the_engines_own_loop(
    search_settings: Settings, search_providers: Providers, graph_kb: str
) -> None:
    rag = make_rag(search_settings, search_providers)
    try:
        nodes = rag.as_retriever(graph_kb, mode="basic", top_k=3).retrieve(QUESTION)
        response = rag.as_query_engine(graph_kb, mode="basic").query(QUESTION)
        again = rag.as_retriever(graph_kb, mode="basic", top_k=3).retrieve(QUESTION)
    finally:
        rag.close_sync()
    assert len(nodes) == 3 and [n.node.node_id for n in again] == [n.node.node_id for n in nodes]
    assert str(response) == response.metadata["result"].answer


async def test_a_sync_call_inside_a_running_loop_is_refused_with_the_async_form_named(
    search_settings: Settings, search_providers: Providers, graph_kb: str
) -> None:
    rag = make_rag(search_settings, search_providers)
    with pytest.raises(RuntimeError, match="await the async form"):
        rag.as_retriever(graph_kb, mode="basic").retrieve(QUESTION)
    with pytest.raises(InvalidQueryError, match="unknown mode"):
        rag.as_query_engine(graph_kb, mode="nope")


def test_llama_indexs_global_models_are_used_when_none_are_given(search_settings: Settings) -> None:
    offline = search_settings.model_copy(update={"llm_provider": "offline"})
    assert DriftRAG(offline).mode == "offline"
    LlamaIndexSettings.llm = ScriptedCustomLLM()
    try:
        assert DriftRAG(offline).mode == "llm"
        # Parts given to the engine win over LlamaIndex's globals.
        assert DriftRAG(offline, providers=build_providers(offline)).mode == "offline"
    finally:
        LlamaIndexSettings._llm = None
    assert DriftRAG(offline).mode == "offline"
