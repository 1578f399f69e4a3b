"""A new multi-step mode is three parts: its result, its workflow, and one entry in the registry. This
test writes a toy one (two steps: search, then an answer that cites what was found) and registers it;
the facade, streaming, notebooks, Markdown and the LlamaIndex query engine then run it unchanged."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from driftrag.facade import DriftRAG
from driftrag.models.search import Source
from driftrag.notebook import AnswerView
from driftrag.providers import Providers
from driftrag.search.basic import retrieve_basic
from driftrag.search.deps import QueryDeps
from driftrag.search.models import QueryResult, ResultExtras
from driftrag.search.modes import MODES, Mode, start_run
from driftrag.search.options import QueryOptions
from driftrag.search.run import QueryRun
from driftrag.search.streaming import AnswerDelta, ProgressEvent, QueryFinished
from driftrag.settings import Settings
from driftrag.workflows.streaming import QueryProgressEvent
from tests.fakes.scripted_llm import ScriptedChatModel

QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"

# --- the toy mode: its result -------------------------------------------------------------------------


class ToyResult(QueryResult):
    sources: list[Source] = Field(default_factory=list)

    def retrieved_sources(self) -> list[Source]:
        return list(self.sources)

    def extras(self) -> ResultExtras:
        return ResultExtras(notes=[f"two steps over {len(self.sources)} chunks"])

    def markdown(self, *, with_answer: bool = True) -> str:
        head = f"### {self.question}\n\n{self.answer}\n\n" if with_answer else ""
        return head + f"*toy search: {len(self.sources)} chunks*"


# --- its workflow ----------------------------------------------------------------------------------------


class ToyStart(StartEvent):
    kb: str
    question: str


class ToyProgress(QueryProgressEvent):
    phase: str
    message: str

    def progress_event(self, mode: str) -> ProgressEvent:
        return ProgressEvent(mode=mode, phase=self.phase, message=self.message)


class ChunksFound(Event):
    sources: list[Source]


class ToyState(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: QueryRun | None = Field(default=None, exclude=True)


class ToyWorkflow(Workflow):
    def __init__(self, deps: QueryDeps, *, timeout: float | None = None) -> None:
        super().__init__(timeout=timeout)
        self._deps = deps

    @classmethod
    def start_event(cls, mode: str, kb: str, question: str, options: QueryOptions, *, stream: bool) -> ToyStart:
        return ToyStart(kb=kb, question=question)

    @step
    async def search(self, ctx: Context[ToyState], ev: ToyStart) -> ChunksFound:
        run = start_run(self._deps, "toy", ev.kb, ev.question)
        async with ctx.store.edit_state() as state:
            state.run = run
        await run.ensure_available()
        context = await retrieve_basic(run)
        ctx.write_event_to_stream(ToyProgress(phase="search", message=f"{len(context.sources)} chunks"))
        return ChunksFound(sources=context.sources[:3])

    @step
    async def answer(self, ctx: Context[ToyState], ev: ChunksFound) -> StopEvent:
        run = (await ctx.store.get_state()).run
        assert run is not None
        cited = [source.id for source in ev.sources[:2]]
        answer = "The toy found " + " and ".join(f"[{source_id}]" for source_id in cited) + "."
        ctx.write_event_to_stream(ToyProgress(phase="answer", message=f"{len(cited)} cited"))
        result = ToyResult(
            mode="toy", kb=run.kb, question=run.question, answer=answer, source_ids=cited, sources=ev.sources
        )
        return StopEvent(result=result.model_copy(update=run.accounting()))


# --- its entry in the registry ---------------------------------------------------------------------------


@pytest.fixture
def toy_mode(monkeypatch: pytest.MonkeyPatch) -> str:
    mode = Mode("toy", "Two steps: basic search, then an answer citing two chunks.", workflow=f"{__name__}:ToyWorkflow")
    monkeypatch.setitem(MODES, mode.name, mode)
    return mode.name


async def test_a_new_multi_step_mode_runs_everywhere_from_its_registry_entry(
    search_settings: Settings, search_providers: Providers, graph_kb: str, toy_mode: str
) -> None:
    progress: list[object] = []
    async with DriftRAG(search_settings, providers=search_providers, chat=ScriptedChatModel()) as rag:
        result = await rag.query(graph_kb, QUESTION, mode=toy_mode, on_progress=progress.append)
        streamed = [event async for event in rag.stream(graph_kb, QUESTION, mode=toy_mode)]
        response = await rag.as_query_engine(graph_kb, mode=toy_mode).aquery(QUESTION)

    assert isinstance(result, ToyResult) and len(result.source_ids) == 2
    assert all(f"[{source_id}]" in result.answer for source_id in result.source_ids)
    assert [p.phase for p in progress] == ["search", "answer"]  # type: ignore[attr-defined]

    phases = [event.phase for event in streamed if isinstance(event, ProgressEvent)]
    deltas = "".join(event.text for event in streamed if isinstance(event, AnswerDelta))
    assert phases == ["search", "answer"] and deltas == result.answer
    assert isinstance(streamed[-1], QueryFinished) and streamed[-1].result.answer == result.answer

    view = str(AnswerView(result))
    assert view.startswith("toy answer") and all(f"[{source_id}]" in view for source_id in result.source_ids)
    assert result.markdown(with_answer=False) == "*toy search: 3 chunks*"
    assert [node.node.node_id for node in response.source_nodes] == result.source_ids
    assert response.metadata is not None and response.metadata["mode"] == toy_mode


def test_a_mode_names_a_retriever_or_its_own_workflow() -> None:
    with pytest.raises(ValueError, match="retriever"):
        Mode("half", "neither")
    with pytest.raises(ValueError, match="retriever"):
        Mode("both", "both", retriever="driftrag.search.basic:retrieve_basic", workflow=f"{__name__}:ToyWorkflow")
