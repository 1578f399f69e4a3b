"""`driftrag ingest`, `delete` and `stats`: building and maintaining a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from driftrag.cli.common import (
    JsonOption,
    KbOption,
    _arun,
    _emit,
    app,
    console,
    err_console,
)
from driftrag.settings import Settings


def _ingestion_deps(settings: Settings, store):
    from driftrag.ingestion.run import IngestionDeps
    from driftrag.providers import build_providers

    return IngestionDeps.from_providers(settings, store, build_providers(settings))


def _kb_lock(settings: Settings, store, kb: str):
    """The kb's write lock in Neo4j; while another process holds it, say so once and wait."""
    from driftrag.store.locks import KbLock

    def waiting(message: str) -> None:
        err_console.print(f"[yellow]waiting:[/yellow] {message}", highlight=False, soft_wrap=True)

    return KbLock(store, kb, ttl_s=settings.kb_lock_ttl_s, on_wait=waiting)


@app.command("ingest")
def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Text or markdown files (UTF-8), or folders of them.")],
    kb: KbOption,
    as_json: JsonOption = False,
) -> None:
    """Ingest files or folders into a knowledge base: chunks, entities, relationships, communities, reports, vectors."""
    from rich.progress import Progress as Bar

    from driftrag.ingestion.loading import collect_paths
    from driftrag.ingestion.run import IngestRequest
    from driftrag.store import Neo4jStore
    from driftrag.workflows.ingestion import IngestionWorkflow, IngestProgress, IngestStart

    async def action():
        settings = Settings()
        files = collect_paths(paths)
        async with Neo4jStore.from_settings(settings) as store:
            deps = _ingestion_deps(settings, store)
            await store.connect()
            async with _kb_lock(settings, store, kb):
                request = IngestRequest(kb=kb, paths=files)
                handler = IngestionWorkflow(deps).run(start_event=IngestStart(request=request))
                with Bar(console=err_console, transient=True, disable=as_json) as bar:
                    tasks: dict[str, int] = {}
                    async for event in handler.stream_events():
                        if isinstance(event, IngestProgress):
                            stage = event.progress.stage
                            if stage not in tasks:
                                tasks[stage] = bar.add_task(stage, total=event.progress.total)
                            bar.update(tasks[stage], completed=event.progress.done, total=event.progress.total)
                return await handler

    result = _arun(ctx, action)
    counts = result.counts
    text = (
        f"kb {result.kb}: {counts.documents} documents, {counts.chunks} chunks, {counts.entities} entities, "
        f"{counts.relationships} relationships, {counts.communities} communities, {counts.reports} reports\n"
        f"model calls {result.usage.chat_calls} (cache hits {result.usage.cache_hits}), "
        f"tokens {result.usage.prompt_tokens} in / {result.usage.completion_tokens} out; "
        f"failed chunks {len(result.failed_chunks)}"
    )
    _emit(result, as_json, text)
    if result.failed_chunks:
        raise typer.Exit(4)


@app.command("delete")
def delete(
    ctx: typer.Context,
    kb: KbOption,
    document: Annotated[str | None, typer.Option(help="Delete only this document id.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm the deletion.")] = False,
) -> None:
    """Delete a document (its chunks, and entities left without sources) or a whole knowledge base."""
    from driftrag.ingestion import indexing
    from driftrag.ingestion.run import no_progress
    from driftrag.store import Neo4jStore
    from driftrag.store.graph import GraphStore

    if not yes:
        err_console.print("refusing without --yes")
        raise typer.Exit(2)

    async def action() -> None:
        settings = Settings()
        async with Neo4jStore.from_settings(settings) as store:
            await store.connect()
            async with _kb_lock(settings, store, kb):
                if document is None:
                    await GraphStore(store).delete_kb(kb)
                else:
                    await indexing.delete_document(_ingestion_deps(settings, store), kb, document, no_progress)

    _arun(ctx, action)
    console.print(f"deleted {'document ' + document if document else 'knowledge base'} in kb {kb}")


@app.command("stats")
def stats(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Counts of a knowledge base, and the chunks whose extraction failed; exit 1 for an unknown kb."""
    from driftrag.store import Neo4jStore
    from driftrag.store.graph import FailedChunk, GraphStore, KbCounts

    class Stats(BaseModel):
        kb: str
        counts: KbCounts
        failed_chunks: list[FailedChunk]

    async def action() -> Stats:
        from driftrag.store.graph_search import GraphSearchStore

        async with Neo4jStore.from_settings(Settings()) as store:
            await store.connect()
            await GraphSearchStore(store).graph_enabled(kb)  # an unknown kb is an error (exit 1), as HTTP's 404
            graph = GraphStore(store)
            return Stats(kb=kb, counts=await graph.counts(kb), failed_chunks=await graph.failed_chunks(kb))

    result = _arun(ctx, action)
    lines = [f"kb {kb}: " + ", ".join(f"{value} {name}" for name, value in result.counts.model_dump().items())]
    lines += [f"  failed {c.id} (document {c.document_id}, #{c.index}): {c.error}" for c in result.failed_chunks]
    _emit(result, as_json, "\n".join(lines))
