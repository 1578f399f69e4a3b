"""driftrag as LlamaIndex parts: a retriever, a query engine and a tool over one kb and one mode.

    retriever = rag.as_retriever("alice", mode="drift", top_k=8)     # BaseRetriever → NodeWithScore
    engine = rag.as_query_engine("alice", mode="local")              # Response with source_nodes
    tool = rag.as_tool("alice", mode="drift", description="…")       # QueryEngineTool for an agent

Each source becomes a `TextNode` whose id is the source id (chunk, entity, relationship or report
id) and whose metadata holds its kind, title, origin and rank, so LlamaIndex's evaluators, postprocessors
and agents read driftrag's results as their own. The async paths (`aretrieve`, `aquery`) are the real
ones; the sync paths run them on the engine's own event loop (`DriftRAG.run_sync`), and refuse inside
a running loop, where `await` is the way.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import AsyncStreamingResponse, Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool

from driftrag.models.search import Source
from driftrag.search.models import QueryResult
from driftrag.search.streaming import AnswerDelta, AnswerReset, QueryFinished

if TYPE_CHECKING:
    from driftrag.facade import DriftRAG


def source_node(source: Source, rank: int) -> NodeWithScore:
    """One retrieved source as a scored node; without a retrieval score, its rank gives one (1/rank)."""
    node = TextNode(
        id_=source.id,
        text=source.text,
        metadata={"kind": source.kind, "title": source.title, "origin": source.origin, "rank": rank},
        excluded_embed_metadata_keys=["kind", "origin", "rank"],
        excluded_llm_metadata_keys=["origin", "rank"],
    )
    score = source.score if source.score is not None else 1.0 / rank
    return NodeWithScore(node=node, score=score)


def source_nodes(sources: list[Source], limit: int | None = None) -> list[NodeWithScore]:
    chosen = sources if limit is None else sources[:limit]
    return [source_node(source, rank) for rank, source in enumerate(chosen, start=1)]


def result_metadata(result: QueryResult) -> dict[str, Any]:
    """What a `Response` carries besides the answer: the mode, the run's cost, what its steps tolerated or
    replaced (`degraded`, weak models), DRIFT's follow-up tree."""
    metadata: dict[str, Any] = {
        "mode": result.mode,
        "kb": result.kb,
        "extractive": result.extractive,
        "llm_calls": result.llm_calls,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "seconds": result.seconds,
        "source_ids": list(result.source_ids),
        "degraded": [item.model_dump() for item in result.degraded],
        "result": result,
    }
    extras = result.extras()
    if extras.follow_ups:
        metadata["follow_ups"] = [follow_up.model_dump() for follow_up in extras.follow_ups]
    return metadata


def to_response(result: QueryResult) -> Response:
    """The answer, the sources it cites (every retrieved one when it cites none), and the metadata."""
    cited = result.cited_sources() or result.retrieved_sources()
    return Response(response=result.answer, source_nodes=source_nodes(cited), metadata=result_metadata(result))


class DriftRAGRetriever(BaseRetriever):
    """The `top_k` best-ranked sources of one mode's query (its own ranking, the one eval metrics read)."""

    def __init__(
        self,
        rag: DriftRAG,
        kb: str,
        *,
        mode: str,
        top_k: int = 10,
        community_level: int | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        super().__init__(callback_manager=callback_manager)
        self.rag, self.kb, self.mode, self.top_k, self.community_level = rag, kb, mode, top_k, community_level

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.rag.query(
            self.kb, query_bundle.query_str, mode=self.mode, community_level=self.community_level
        )
        return source_nodes(result.retrieved_sources(), self.top_k)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.rag.run_sync(lambda: self._aretrieve(query_bundle))


class DriftRAGQueryEngine(BaseQueryEngine):
    """One mode's answer as a LlamaIndex `Response`; `streaming=True` streams `aquery`'s answer as the model
    writes it (an `AsyncStreamingResponse` whose `source_nodes` and `metadata` fill in when it ends)."""

    def __init__(
        self,
        rag: DriftRAG,
        kb: str,
        *,
        mode: str,
        streaming: bool = False,
        community_level: int | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self.rag, self.kb, self.mode = rag, kb, mode
        self.streaming, self.community_level = streaming, community_level

    def _get_prompt_modules(self) -> dict[str, Any]:
        # The prompts are driftrag's templates (`driftrag/prompts/`), not LlamaIndex prompt modules.
        return {}

    async def _aquery(self, query_bundle: QueryBundle) -> Response | AsyncStreamingResponse:
        if self.streaming:
            return self._stream(query_bundle.query_str)
        result = await self.rag.query(
            self.kb, query_bundle.query_str, mode=self.mode, community_level=self.community_level
        )
        return to_response(result)

    def _query(self, query_bundle: QueryBundle) -> Response:
        if self.streaming:
            raise RuntimeError("a streaming driftrag query engine streams through `await engine.aquery(...)`")
        return self.rag.run_sync(lambda: self._aquery(query_bundle))  # type: ignore[return-value]

    def _stream(self, question: str) -> AsyncStreamingResponse:
        nodes: list[NodeWithScore] = []
        metadata: dict[str, Any] = {}

        async def tokens() -> AsyncGenerator[str, None]:
            events = self.rag.stream(self.kb, question, mode=self.mode, community_level=self.community_level)
            async for event in events:
                if isinstance(event, AnswerDelta):
                    yield event.text
                elif isinstance(event, AnswerReset):
                    # Text already handed out cannot be taken back: say that the answer starts over.
                    yield f"\n[{event.reason}: the answer starts over]\n"
                elif isinstance(event, QueryFinished):
                    finished = to_response(event.result)
                    nodes.extend(finished.source_nodes)
                    metadata.update(finished.metadata or {})

        return AsyncStreamingResponse(response_gen=tokens(), source_nodes=nodes, metadata=metadata)


def query_engine_tool(engine: DriftRAGQueryEngine, *, name: str | None = None, description: str | None = None):
    """A `QueryEngineTool` over `engine`, named after its kb and mode unless `name` says otherwise."""
    tool_name = name or f"{engine.kb}_{engine.mode}_search".replace("-", "_")
    text = description or (
        f"Answers a question from the knowledge base {engine.kb!r} with driftrag's {engine.mode} search, "
        "citing its sources. Input: one question in plain language."
    )
    return QueryEngineTool.from_defaults(query_engine=engine, name=tool_name, description=text)
