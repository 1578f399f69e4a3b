"""Run the ingestion workflow against the test Neo4j with a chat double: `Ingestor(settings, store,
providers).run(kb, chat)` streams its progress and returns the result with the events.

    run = await ingestor.run(kb, DescriptiveChatModel(), texts=texts_of())
    run.result.counts, run.events
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from driftrag.composition import ingestion_deps
from driftrag.ingestion.deps import IngestionDeps
from driftrag.ingestion.requests import IngestionResult, IngestRequest, Progress, TextInput
from driftrag.providers import Providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow, IngestProgress, IngestStart
from tests.fakes.harbor_corpus import CORPUS, DescriptiveChatModel
from tests.fakes.scripted_llm import ScriptedChatModel

# Small chunks keep the offline embedder fast; the corpus then spans a handful of chunks.
SMALL_CHUNKS = {"chunk_size": 120, "chunk_overlap": 10}


def texts_of(corpus: Mapping[str, str] = CORPUS) -> list[TextInput]:
    return [TextInput(title=title, text=text) for title, text in corpus.items()]


@dataclass
class IngestRun:
    result: IngestionResult
    events: list[Progress] = field(default_factory=list)


@dataclass
class Ingestor:
    """Runs the ingestion workflow against the test Neo4j with a given chat double."""

    settings: Settings
    store: Neo4jStore
    providers: Providers

    @property
    def graph(self) -> GraphStore:
        return GraphStore(self.store)

    def deps(self, chat: ScriptedChatModel, settings: Settings | None = None) -> IngestionDeps:
        settings = settings or self.settings
        return ingestion_deps(settings, neo4j_roles(self.store), self.providers, chat)

    async def run(
        self,
        kb: str,
        chat: ScriptedChatModel | None = None,
        *,
        texts: list[TextInput] | None = None,
        paths: list[Path] | None = None,
        settings: Settings | None = None,
    ) -> IngestRun:
        chat = chat if chat is not None else DescriptiveChatModel()
        if texts is None and paths is None:
            texts = texts_of()
        request = IngestRequest(kb=kb, texts=texts or [], paths=paths or [])
        handler = IngestionWorkflow(self.deps(chat, settings)).run(start_event=IngestStart(request=request))
        events = [event.progress async for event in handler.stream_events() if isinstance(event, IngestProgress)]
        result = await handler
        return IngestRun(result=result, events=events)
