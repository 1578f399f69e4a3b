"""The `driftrag` command line.

Exit codes: 0 success, 1 a driftrag error (message printed, no traceback unless --debug),
2 bad usage, 3 backend unavailable (Neo4j unreachable).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from driftrag.errors import BackendUnavailableError, DriftRAGError
from driftrag.settings import Settings

T = TypeVar("T")

app = typer.Typer(help="driftrag: GraphRAG on Neo4j with LlamaIndex Workflows.", no_args_is_help=True)
neo4j_app = typer.Typer(help="The project's local Neo4j Community server (Bolt on 127.0.0.1).")
schema_app = typer.Typer(help="Graph schema: constraints and vector indexes.")
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(schema_app, name="schema")

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
PortOption = Annotated[int | None, typer.Option(help="Bolt port (default: DRIFTRAG_NEO4J_PORT).")]


class _State:
    debug: bool = False


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    ctx.obj = _State()
    ctx.obj.debug = debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING)


def _run(ctx: typer.Context, action: Callable[[], T]) -> T:
    """Run an action, turning driftrag errors into a message and a meaningful exit code."""
    try:
        return action()
    except DriftRAGError as exc:
        if ctx.obj is not None and ctx.obj.debug:
            raise
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(3 if isinstance(exc, BackendUnavailableError) else 1) from None


def _arun(ctx: typer.Context, coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return _run(ctx, lambda: asyncio.run(coroutine()))


def _emit(model: BaseModel, as_json: bool, text: str) -> None:
    if as_json:
        console.print_json(model.model_dump_json())
    else:
        console.print(text, highlight=False)


# --- neo4j --------------------------------------------------------------------------------------


def _local(port: int | None):
    from driftrag.local_neo4j import LocalNeo4j

    return LocalNeo4j(Settings(), port=port)


def _describe(status) -> str:
    lines = [f"Neo4j {status.state}: {status.bolt_uri}"]
    if status.pid:
        lines.append(f"  pid {status.pid}, version {status.version}, resident {status.resident_mib:.0f} MiB")
    lines.append(f"  log {status.log_file}")
    if status.message:
        lines.append(f"  {status.message}")
    return "\n".join(lines)


@neo4j_app.command("start")
def neo4j_start(ctx: typer.Context, port: PortOption = None, as_json: JsonOption = False) -> None:
    """Resolve Neo4j Community 5.26 with Maven (first time) and start it; waits until Bolt answers."""
    status = _run(ctx, lambda: _local(port).start())
    _emit(status, as_json, _describe(status))


@neo4j_app.command("stop")
def neo4j_stop(ctx: typer.Context, port: PortOption = None, as_json: JsonOption = False) -> None:
    """Stop the local Neo4j cleanly (SIGTERM; SIGKILL after 60 s)."""
    status = _run(ctx, lambda: _local(port).stop())
    _emit(status, as_json, _describe(status))


@neo4j_app.command("status")
def neo4j_status(ctx: typer.Context, port: PortOption = None, as_json: JsonOption = False) -> None:
    """Say whether the local Neo4j runs, with its Bolt URI. Exit code 3 when stopped."""
    status = _run(ctx, lambda: _local(port).status())
    _emit(status, as_json, _describe(status))
    if status.state != "running":
        raise typer.Exit(3)


# --- schema -------------------------------------------------------------------------------------


@schema_app.command("init")
def schema_init(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Connect, check the server version, and create constraints and vector indexes (idempotent)."""
    from driftrag.providers import build_providers
    from driftrag.store import Neo4jStore

    class SchemaReport(BaseModel):
        server_version: str
        mode: str
        vector_indexes: dict[str, int]

    async def action() -> SchemaReport:
        settings = Settings()
        providers = build_providers(settings)
        async with Neo4jStore.from_settings(settings) as store:
            info = await store.connect()
            indexes = await store.ensure_schema(providers.embedding_dimension)
        return SchemaReport(
            server_version=info.version,
            mode=providers.describe(),
            vector_indexes={index.name: index.dimensions for index in indexes},
        )

    report = _arun(ctx, action)
    text = "\n".join(
        [f"Neo4j {report.server_version}; {report.mode}"]
        + [f"  {name}: {dims} dimensions, cosine" for name, dims in report.vector_indexes.items()]
    )
    _emit(report, as_json, text)


@schema_app.command("reset-vectors")
def schema_reset_vectors(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: embeddings of every knowledge base go.")] = False,
) -> None:
    """Drop the vector indexes and all embeddings (to change embedder); the graph itself is kept."""
    from driftrag.store import Neo4jStore

    if not yes:
        err_console.print("refusing without --yes: this removes the embeddings of every knowledge base")
        raise typer.Exit(2)

    async def action() -> None:
        async with Neo4jStore.from_settings(Settings()) as store:
            await store.connect()
            await store.reset_vector_indexes()

    _arun(ctx, action)
    console.print("vector indexes and embeddings removed; run `driftrag schema init` with the new embedder")


# --- ingestion ------------------------------------------------------------------------------------


def _valid_kb(kb: str) -> str:
    """Refuse a bad kb id before anything connects."""
    from driftrag.store import validate_kb_id

    try:
        return validate_kb_id(kb)
    except DriftRAGError as exc:
        raise typer.BadParameter(str(exc)) from None


KbOption = Annotated[str, typer.Option("--kb", help="Knowledge base id (1-64 of A-Z a-z 0-9 _ -).", callback=_valid_kb)]


def _ingestion_deps(settings: Settings, store):
    from driftrag.ingestion.run import IngestionDeps
    from driftrag.providers import build_providers

    return IngestionDeps.from_providers(settings, store, build_providers(settings))


@app.command("ingest")
def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Text or markdown files (UTF-8).")],
    kb: KbOption,
    as_json: JsonOption = False,
) -> None:
    """Ingest files into a knowledge base: chunks, entities, relationships, communities, reports, vectors."""
    from rich.progress import Progress as Bar

    from driftrag.ingestion.run import IngestRequest
    from driftrag.store import Neo4jStore
    from driftrag.workflows.ingestion import IngestionWorkflow, IngestProgress, IngestStart

    async def action():
        settings = Settings()
        async with Neo4jStore.from_settings(settings) as store:
            deps = _ingestion_deps(settings, store)
            await store.connect()
            handler = IngestionWorkflow(deps).run(start_event=IngestStart(request=IngestRequest(kb=kb, paths=paths)))
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
            if document is None:
                await GraphStore(store).delete_kb(kb)
            else:
                await indexing.delete_document(_ingestion_deps(settings, store), kb, document, no_progress)

    _arun(ctx, action)
    console.print(f"deleted {'document ' + document if document else 'knowledge base'} in kb {kb}")


@app.command("stats")
def stats(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Counts of a knowledge base, and the chunks whose extraction failed."""
    from driftrag.store import Neo4jStore
    from driftrag.store.graph import FailedChunk, GraphStore, KbCounts

    class Stats(BaseModel):
        kb: str
        counts: KbCounts
        failed_chunks: list[FailedChunk]

    async def action() -> Stats:
        async with Neo4jStore.from_settings(Settings()) as store:
            await store.connect()
            graph = GraphStore(store)
            return Stats(kb=kb, counts=await graph.counts(kb), failed_chunks=await graph.failed_chunks(kb))

    result = _arun(ctx, action)
    lines = [f"kb {kb}: " + ", ".join(f"{value} {name}" for name, value in result.counts.model_dump().items())]
    lines += [f"  failed {c.id} (document {c.document_id}, #{c.index}): {c.error}" for c in result.failed_chunks]
    _emit(result, as_json, "\n".join(lines))


@app.command("demo")
def demo(ctx: typer.Context) -> None:
    """The main job: local Neo4j, schema, then ingest + DRIFT on the bundled sample (offline by default)."""
    from driftrag.local_neo4j import LocalNeo4j
    from driftrag.providers import build_providers
    from driftrag.store import Neo4jStore

    settings = Settings()
    if settings.neo4j_uri is None:
        status = _run(ctx, lambda: LocalNeo4j(settings).start())
        console.print(_describe(status), highlight=False)

    async def action() -> str:
        providers = build_providers(settings)
        async with Neo4jStore.from_settings(settings) as store:
            info = await store.connect()
            await store.ensure_schema(providers.embedding_dimension)
        return f"Neo4j {info.version} ready, schema in place; {providers.describe()}"

    console.print(_arun(ctx, action), highlight=False)
    console.print(
        "Not built yet, so the demo stops here: the offline extractive model tasks and the bundled sample "
        "corpus (issue 5), and the DRIFT query workflow (issue 4). With OPENAI_API_KEY set, "
        "`driftrag ingest FILE --kb NAME` already builds the graph.",
        highlight=False,
    )


# --- info -----------------------------------------------------------------------------------------


@app.command("info")
def info(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the active model mode and where the graph lives (no network call)."""
    from driftrag.providers import build_providers

    class Info(BaseModel):
        mode: str
        description: str
        neo4j_uri: str
        local_neo4j: bool

    def action() -> Info:
        settings = Settings()
        providers = build_providers(settings)
        return Info(
            mode=providers.mode,
            description=providers.describe(),
            neo4j_uri=settings.bolt_uri,
            local_neo4j=settings.neo4j_uri is None,
        )

    result = _run(ctx, action)
    _emit(result, as_json, f"{result.description}\nNeo4j: {result.neo4j_uri}")


# --- graph search and its switches ------------------------------------------------------------------

chunk_app = typer.Typer(help="Enable or disable chunks as sources of graph search.")
app.add_typer(chunk_app, name="chunk")

ChunkIdsArgument = Annotated[list[str], typer.Argument(help="Chunk ids (chunk-…).")]


@app.command("graph-search")
def graph_search_command(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Case-sensitive substring of entity names.")],
    kb: KbOption,
    max_seeds: Annotated[
        int | None, typer.Option("--max-seeds", min=1, help="Seeds at most (default: DRIFTRAG_GRAPH_SEARCH_MAX_SEEDS).")
    ] = None,
    max_rows: Annotated[
        int | None, typer.Option("--max-rows", min=1, help="Rows at most (default: DRIFTRAG_GRAPH_SEARCH_MAX_ROWS).")
    ] = None,
) -> None:
    """Bounded one-hop graph search (no model call); prints the JSON response with its truncation markers."""
    from driftrag.search.graph_search import graph_search, parse_request
    from driftrag.store import Neo4jStore

    try:  # a bad request is bad usage (exit 2), refused before anything connects
        parse_request(kb, query, max_seeds=max_seeds, max_rows=max_rows)
    except DriftRAGError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None

    async def action():
        settings = Settings()
        async with Neo4jStore.from_settings(settings) as store:
            await store.connect()
            return await graph_search(store, settings, kb, query, max_seeds=max_seeds, max_rows=max_rows)

    # Plain JSON, not rich: the response can be large and must stay parseable byte for byte.
    typer.echo(_arun(ctx, action).model_dump_json(indent=2))


class ChunkSwitchReport(BaseModel):
    kb: str
    enabled: bool
    requested: int
    matched: int


def _switch_chunks(ctx: typer.Context, kb: str, chunk_ids: list[str], enabled: bool, as_json: bool) -> None:
    from driftrag.store import Neo4jStore
    from driftrag.store.graph_search import GraphSearchStore

    async def action() -> ChunkSwitchReport:
        async with Neo4jStore.from_settings(Settings()) as store:
            await store.connect()
            matched = await GraphSearchStore(store).set_chunks_enabled(kb, chunk_ids, enabled)
        return ChunkSwitchReport(kb=kb, enabled=enabled, requested=len(set(chunk_ids)), matched=matched)

    report = _arun(ctx, action)
    verb = "enabled" if enabled else "disabled"
    missing = report.requested - report.matched
    text = f"{verb} {report.matched} chunk(s) in kb {kb}" + (f"; {missing} not found" if missing else "")
    _emit(report, as_json, text)


@chunk_app.command("disable")
def chunk_disable(ctx: typer.Context, chunk_ids: ChunkIdsArgument, kb: KbOption, as_json: JsonOption = False) -> None:
    """Disable chunks: graph search stops counting them as sources (entities left without any vanish)."""
    _switch_chunks(ctx, kb, chunk_ids, False, as_json)


@chunk_app.command("enable")
def chunk_enable(ctx: typer.Context, chunk_ids: ChunkIdsArgument, kb: KbOption, as_json: JsonOption = False) -> None:
    """Enable chunks again as sources of graph search."""
    _switch_chunks(ctx, kb, chunk_ids, True, as_json)


def _switch_graph(ctx: typer.Context, kb: str, enabled: bool) -> None:
    from driftrag.store import Neo4jStore
    from driftrag.store.graph_search import GraphSearchStore

    async def action() -> None:
        async with Neo4jStore.from_settings(Settings()) as store:
            await store.connect()
            await GraphSearchStore(store).set_graph_enabled(kb, enabled)

    _arun(ctx, action)
    console.print(f"graph search {'enabled' if enabled else 'disabled'} for kb {kb}", highlight=False)


@app.command("graph-enable")
def graph_enable(ctx: typer.Context, kb: KbOption) -> None:
    """Allow graph search on a knowledge base."""
    _switch_graph(ctx, kb, True)


@app.command("graph-disable")
def graph_disable(ctx: typer.Context, kb: KbOption) -> None:
    """Refuse graph search on a knowledge base (it answers 'backend unavailable', exit code 3)."""
    _switch_graph(ctx, kb, False)


def main() -> None:
    app()
