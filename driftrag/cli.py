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
            handler = IngestionWorkflow(deps).run(start_event=IngestStart(request=IngestRequest(kb=kb, paths=files)))
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


DEMO_KB = "sample"
DEMO_QUESTION = (
    "Who made the light at Cinder Point Lighthouse fail, and why did Lady Maud Ferrers want the Lantern Charter "
    "to disappear?"
)


@app.command("demo")
def demo(
    ctx: typer.Context,
    question: Annotated[str, typer.Option("--question", help="The DRIFT question to ask.")] = DEMO_QUESTION,
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base to build.", callback=_valid_kb)] = DEMO_KB,
    as_json: JsonOption = False,
) -> None:
    """The main job: local Neo4j, ingest the bundled sample corpus, then a DRIFT answer with its sources."""
    from driftrag.corpora import DATA_DIR
    from driftrag.facade import DriftRAG

    settings = Settings()

    async def action():
        async with DriftRAG(settings) as rag:
            err_console.print(f"{rag.providers.describe()}", highlight=False)
            with err_console.status("ingesting the sample corpus…", spinner="dots") as status:
                ingested = await rag.ingest(
                    kb,
                    paths=[DATA_DIR / "sample"],
                    on_progress=lambda p: status.update(f"ingest {p.stage}: {p.done}/{p.total}"),
                )
            counts = ingested.counts
            err_console.print(
                f"kb {kb}: {counts.documents} documents, {counts.chunks} chunks, {counts.entities} entities, "
                f"{counts.relationships} relationships, {counts.communities} communities",
                highlight=False,
            )
            with err_console.status("DRIFT search…", spinner="dots") as status:
                return await rag.drift(
                    kb, question, on_progress=lambda e: status.update(f"{e.phase}: {e.message[:100]}")
                )

    _print_result(_arun(ctx, action), as_json)


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


# --- query ----------------------------------------------------------------------------------------

QUERY_MODES = ("drift", "local", "entity", "basic")


def _valid_mode(mode: str) -> str:
    if mode not in QUERY_MODES:
        raise typer.BadParameter(f"choose one of {', '.join(QUERY_MODES)}")
    return mode


async def _answer(settings: Settings, kb: str, question: str, mode: str, on_progress=None):
    from driftrag.facade import DriftRAG

    async with DriftRAG(settings) as rag:
        if mode == "drift":
            return await rag.drift(kb, question, on_progress=on_progress)
        return await rag.query(kb, question, mode=mode)


def _print_result(result, as_json: bool) -> None:
    from rich.markdown import Markdown

    if as_json:
        # Plain JSON: the answer, intermediate answers (DRIFT) and every source with its id and text.
        typer.echo(result.model_dump_json(indent=2))
    else:
        console.print(Markdown(result._repr_markdown_()))


@app.command("query")
def query_command(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    kb: KbOption,
    mode: Annotated[
        str, typer.Option("--mode", help="drift | local | entity | basic.", callback=_valid_mode)
    ] = "drift",
    as_json: JsonOption = False,
) -> None:
    """Answer a question from a knowledge base; prints the answer with its sources (and DRIFT's follow-up tree)."""
    settings = Settings()

    async def action():
        with err_console.status(f"{mode} search…", spinner="dots") as status:

            def progress(event) -> None:
                if not as_json:
                    status.update(f"{event.phase}: {event.message[:100]}")

            return await _answer(settings, kb, question, mode, progress)

    _print_result(_arun(ctx, action), as_json)


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


# --- graph views ------------------------------------------------------------------------------------

_VIEW_DEFAULT_MAX_NODES = 100


def _valid_community(community: str | None) -> str | None:
    """Refuse a malformed community id before anything connects."""
    from driftrag.store import validate_node_id

    if community is None:
        return None
    try:
        validate_node_id(community)
    except DriftRAGError as exc:
        raise typer.BadParameter(str(exc)) from None
    if not community.startswith("community-"):
        raise typer.BadParameter(f"not a community id: {community!r}")
    return community


@app.command("graph")
def graph_view_command(
    ctx: typer.Context,
    kb: KbOption,
    community: Annotated[
        str | None,
        typer.Option(
            "--community", help="Show only this community's entities (community-…).", callback=_valid_community
        ),
    ] = None,
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print Mermaid `graph TD` to stdout (the default).")
    ] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML page (inline SVG) to this file.")
    ] = None,
    graphml: Annotated[Path | None, typer.Option("--graphml", help="Write GraphML to this file.")] = None,
    max_nodes: Annotated[
        int | None,
        typer.Option(
            "--max-nodes",
            min=0,
            help=f"Keep the N highest-degree entities; 0 = all (default: {_VIEW_DEFAULT_MAX_NODES} for Mermaid "
            "and HTML, all for GraphML and --json).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the view (entities, relationships, weights) as JSON.")
    ] = False,
) -> None:
    """Graph view of a kb or a community: Mermaid (stdout), HTML or GraphML; weight = 0.6 PMI + 0.4 strength, 1-10."""
    from rich.markup import escape as escape_markup

    from driftrag.store import Neo4jStore
    from driftrag.store.views import GraphViewStore

    chosen = [
        name
        for name, on in (("--mermaid", mermaid), ("--html", html), ("--graphml", graphml), ("--json", as_json))
        if on
    ]
    if len(chosen) > 1:
        err_console.print(f"[red]error:[/red] choose one output, not {' and '.join(chosen)}", highlight=False)
        raise typer.Exit(2)
    target = html or graphml
    if target is not None and not target.parent.is_dir():
        missing = escape_markup(repr(str(target.parent)))
        err_console.print(f"[red]error:[/red] no directory {missing} to write the file in", highlight=False)
        raise typer.Exit(2)
    if max_nodes is None:
        max_nodes = 0 if graphml or as_json else _VIEW_DEFAULT_MAX_NODES

    async def action():
        async with Neo4jStore.from_settings(Settings()) as store:
            await store.connect()
            return await GraphViewStore(store).read_view(kb, community_id=community, max_nodes=max_nodes or None)

    view = _arun(ctx, action)
    from driftrag import views

    measures = views.measure(view)
    if as_json:
        report = views.GraphViewReport(view=view, measures=measures)
        typer.echo(report.model_dump_json(indent=2))
        return
    if target is None:
        # typer.echo, not rich: labels hold brackets that rich would read as markup.
        typer.echo(views.render_mermaid(view, measures), nl=False)
        if view.truncated:
            err_console.print(f"note: {view.describe()}; --max-nodes 0 shows all", highlight=False)
        return
    text = views.render_html(view, measures) if html else views.render_graphml(view, measures)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        reason = escape_markup(f"cannot write {str(target)!r}: {exc.strerror or exc}")
        err_console.print(f"[red]error:[/red] {reason}", highlight=False)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {target}: {view.describe()}")


# --- evaluation --------------------------------------------------------------------------------------

eval_app = typer.Typer(help="Research evaluation: run methods on a question set, judge answers, report.")
app.add_typer(eval_app, name="eval")

ResultsOption = Annotated[Path, typer.Option("--results", help="Results folder of `driftrag eval run`.")]
BudgetOption = Annotated[
    int | None,
    typer.Option(
        "--budget", min=1, help="Context tokens every method is cut to (default: DRIFTRAG_LOCAL_CONTEXT_TOKENS)."
    ),
]


def _methods_option(text: str | None) -> str | None:
    from driftrag.eval.methods import parse_methods

    if text is None:
        return None
    try:
        return ",".join(parse_methods(text))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _aa_option(text: str | None) -> str | None:
    if text is not None and text.strip().lower() == "none":
        return "none"
    return _methods_option(text)


def _row_bar(bar, label: str):
    task = bar.add_task(label, total=None)

    def advance(_row, done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return advance


@eval_app.command("run")
def eval_run(
    ctx: typer.Context,
    kb: KbOption,
    questions: Annotated[Path, typer.Option("--questions", help="Question set (JSONL).")],
    out: Annotated[Path, typer.Option("--out", help="Results folder; an existing run there is resumed.")],
    methods: Annotated[
        str, typer.Option("--methods", help="Comma-separated: drift, local, basic, entity.", callback=_methods_option)
    ] = "drift,local,basic,entity",
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Runs of each question and method.")] = 1,
    budget: BudgetOption = None,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors/--keep-errors", help="Run again the rows that recorded an error.")
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Run each method on each question (one JSONL row each, resumable) and write a summary."""
    from rich.progress import Progress as Bar

    from driftrag.eval.methods import parse_methods
    from driftrag.eval.runner import ensure_kb_has_chunks, run_eval, summary_lines
    from driftrag.providers import build_providers
    from driftrag.search.deps import QueryDeps
    from driftrag.store import Neo4jStore

    async def action():
        settings = Settings()
        providers = build_providers(settings)
        async with Neo4jStore.from_settings(settings) as store:
            await store.connect()
            await ensure_kb_has_chunks(store, kb)
            deps = QueryDeps.from_providers(settings, store, providers)
            with Bar(console=err_console, transient=True, disable=as_json) as bar:
                return await run_eval(
                    deps,
                    kb,
                    questions,
                    parse_methods(methods),
                    out,
                    repeats=repeats,
                    mode=providers.mode,
                    mode_description=providers.describe(),
                    budget_tokens=budget,
                    retry_errors=retry_errors,
                    progress=_row_bar(bar, "questions x methods"),
                )

    summary = _arun(ctx, action)
    _emit(summary, as_json, "\n".join(summary_lines(summary, out)))


@eval_app.command("report")
def eval_report(
    ctx: typer.Context, results: ResultsOption, budget: BudgetOption = None, as_json: JsonOption = False
) -> None:
    """Write report.md (tables), metrics.json and plots/ into the results folder (no model needed)."""
    from driftrag.eval.report import build_report

    outcome = _run(ctx, lambda: build_report(results, budget or Settings().local_context_tokens))
    text = f"wrote {outcome.report}, {outcome.metrics} and {len(outcome.plots)} plots"
    _emit(outcome, as_json, text + (f" ({outcome.plots_note})" if outcome.plots_note else ""))


@eval_app.command("judge")
def eval_judge(
    ctx: typer.Context,
    results: ResultsOption,
    methods: Annotated[
        str | None, typer.Option("--methods", help="Methods to compare (default: the run's).", callback=_methods_option)
    ] = None,
    trials: Annotated[int, typer.Option("--trials", min=2, help="Judgments per question and pair (even).")] = 2,
    aa: Annotated[
        str | None,
        typer.Option(
            "--aa",
            help="Methods judged against themselves (A/A check of the judge); 'none' for none (default: the first).",
            callback=_aa_option,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """LLM-as-judge pairwise comparison of the answers, counterbalanced; needs a model (OPENAI_API_KEY)."""
    from rich.progress import Progress as Bar

    from driftrag.eval.judge_run import judge_results
    from driftrag.eval.methods import parse_methods
    from driftrag.providers import build_providers

    if trials % 2:
        err_console.print("[red]error:[/red] --trials must be even: half the trials show each answer first")
        raise typer.Exit(2)
    aa_methods = None if aa is None else [] if aa == "none" else parse_methods(aa)

    async def action():
        settings = Settings()
        providers = build_providers(settings)
        with Bar(console=err_console, transient=True, disable=as_json) as bar:
            return await judge_results(
                providers.model_client,
                results,
                max_tokens=settings.answer_max_tokens,
                concurrency=settings.llm_concurrency,
                methods=parse_methods(methods) if methods else None,
                trials=trials,
                aa_methods=aa_methods,
                progress=_row_bar(bar, "judgments"),
            )

    summary = _arun(ctx, action)
    _emit(
        summary, as_json, f"{summary.judgments} judgments ({summary.failed} failed); `driftrag eval report` shows them"
    )


@eval_app.command("generate")
def eval_generate(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="Question set to write (JSONL).")],
    kb: Annotated[
        str | None, typer.Option("--kb", help="Describe the corpus by this kb's top community reports.")
    ] = None,
    description: Annotated[str | None, typer.Option("--description", help="Describe the corpus yourself.")] = None,
    personas: Annotated[int, typer.Option("--personas", min=1)] = 5,
    tasks: Annotated[int, typer.Option("--tasks", min=1, help="Tasks per persona.")] = 5,
    questions: Annotated[int, typer.Option("--questions", min=1, help="Questions per task.")] = 5,
    question_type: Annotated[str, typer.Option("--type", help="local, multi-hop or global.")] = "global",
    id_prefix: Annotated[str, typer.Option("--id-prefix")] = "gen-",
    as_json: JsonOption = False,
) -> None:
    """Draft questions with a model (personas x tasks x questions); needs a model (OPENAI_API_KEY)."""
    from driftrag.eval.generate import generate_questions, kb_description
    from driftrag.eval.questions import QUESTION_TYPES, dump_questions
    from driftrag.providers import build_providers
    from driftrag.store import Neo4jStore

    if (kb is None) == (description is None):
        err_console.print("[red]error:[/red] give either --kb or --description")
        raise typer.Exit(2)
    if question_type not in QUESTION_TYPES:
        err_console.print(f"[red]error:[/red] --type must be one of {', '.join(QUESTION_TYPES)}")
        raise typer.Exit(2)
    kb = _valid_kb(kb) if kb is not None else None

    async def action():
        settings = Settings()
        providers = build_providers(settings)
        text = description or ""
        if kb is not None:
            async with Neo4jStore.from_settings(settings) as store:
                await store.connect()
                text = await kb_description(store, kb, settings.local_context_tokens)
        return await generate_questions(
            providers.model_client,
            text,
            personas=personas,
            tasks=tasks,
            questions=questions,
            question_type=question_type,  # type: ignore[arg-type]
            id_prefix=id_prefix,
            max_tokens=settings.answer_max_tokens,
            concurrency=settings.llm_concurrency,
        )

    generated = _arun(ctx, action)
    out.write_text(dump_questions(generated.items), encoding="utf-8")
    origins = out.with_suffix(".origins.json")
    origins.write_text(generated.model_dump_json(indent=2, exclude={"items"}) + "\n", encoding="utf-8")
    text = f"wrote {len(generated.items)} draft questions to {out} (personas and tasks in {origins})"
    _emit(generated, as_json, text + (f"; {len(generated.failures)} failed calls" if generated.failures else ""))


# --- data: public-domain corpora by name ---------------------------------------------------------------

data_app = typer.Typer(help="Public-domain corpora by name: download with a pinned checksum, or copy a local file.")
app.add_typer(data_app, name="data")


def _sha256_option(text: str | None) -> str | None:
    import re

    if text is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        raise typer.BadParameter("a SHA-256 is 64 hexadecimal digits")
    return text.lower() if text else None


@data_app.command("list")
def data_list(as_json: JsonOption = False) -> None:
    """Show the registered corpora: name, title, source (URL or shipped folder), pinned SHA-256, license."""
    from driftrag.corpora import CORPORA

    if as_json:
        typer.echo("[" + ",".join(corpus.model_dump_json() for corpus in CORPORA) + "]")
        return
    for corpus in CORPORA:
        lines = [f"{corpus.name:<8}{corpus.title}", f"{'':<8}source: {corpus.describe_source()}"]
        if corpus.sha256:
            lines.append(f"{'':<8}sha256: {corpus.sha256} ({corpus.size:,} bytes; {corpus.edition})")
        lines.append(f"{'':<8}license: {corpus.license}")
        typer.echo("\n".join(lines))


@data_app.command("fetch")
def data_fetch(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A corpus from `driftrag data list` (alice, sample).")],
    dest: Annotated[
        Path | None, typer.Option("--dest", help="Folder to put it in (default: <DRIFTRAG_HOME>/corpora).")
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option("--from", help="Use this local file instead of downloading; its checksum is checked too."),
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", help="Download from this mirror instead; the checksum is still checked.")
    ] = None,
    sha256: Annotated[
        str | None,
        typer.Option(
            "--sha256",
            help="Accept this SHA-256 instead of the pinned one (another edition).",
            callback=_sha256_option,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Download a corpus (checksum verified; not again when present) and print its path on stdout.

    Exit codes: 1 checksum mismatch or bad file, 2 unknown corpus, 3 no network (use --from PATH).
    A shipped corpus (sample) prints its folder; with --dest it is copied there.
    """
    from rich.markup import escape as escape_markup

    from driftrag import corpora
    from driftrag.errors import DownloadUnavailableError, UnknownCorpusError

    try:
        corpus = corpora.get_corpus(name)
    except UnknownCorpusError as exc:
        err_console.print(f"[red]error:[/red] {escape_markup(str(exc))}", highlight=False)
        raise typer.Exit(2) from None

    try:
        if corpus.bundled is not None and dest is not None and (source, url, sha256) == (None, None, None):
            result = corpora.copy_shipped(corpus, dest)
        else:
            target = dest or corpora.default_dest(Settings().home)
            result = corpora.fetch(corpus, dest=target, source=source, url=url, expected_sha256=sha256)
    except DriftRAGError as exc:
        if ctx.obj is not None and ctx.obj.debug:
            raise
        err_console.print(f"[red]error:[/red] {escape_markup(str(exc))}", highlight=False)
        # No network is "backend unavailable" here: exit 3, as Neo4j outages are for the other commands.
        raise typer.Exit(3 if isinstance(exc, DownloadUnavailableError) else 1) from None
    if as_json:
        typer.echo(result.model_dump_json())
        return
    err_console.print(escape_markup(result.describe()), highlight=False)
    typer.echo(str(result.path))


# --- HTTP API ------------------------------------------------------------------------------------------

api_app = typer.Typer(help="The HTTP API's OpenAPI document.")
api_key_app = typer.Typer(help="API keys of the HTTP API; the keys file stores only their SHA-256.")
app.add_typer(api_app, name="api")
app.add_typer(api_key_app, name="api-key")

KeysFileOption = Annotated[Path | None, typer.Option("--file", help="The keys file (default: DRIFTRAG_API_KEYS_FILE).")]


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to bind (default: DRIFTRAG_API_HOST, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=1, max=65535, help="Port to listen on (default: DRIFTRAG_API_PORT, 8000)."),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            help="Accept every request without a key (local experiments); only on 127.0.0.1 or another loopback.",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API with uvicorn (docs at /api/v1/docs); refuses to start without API keys."""
    from driftrag.api.server import serve as run_server

    settings = Settings()
    debug = ctx.obj is not None and ctx.obj.debug
    _run(
        ctx,
        lambda: run_server(
            settings,
            host=host or settings.api_host,
            port=port or settings.api_port,
            insecure_no_auth=insecure_no_auth,
            log_level="debug" if debug else "info",
        ),
    )


@api_app.command("openapi")
def api_openapi() -> None:
    """Print the OpenAPI document of the HTTP API (`driftrag api openapi > docs/openapi.json`)."""
    from driftrag.api.app import render_openapi

    typer.echo(render_openapi(), nl=False)


def _keys_file(file: Path | None) -> Path:
    chosen = file or Settings().api_keys_file
    if chosen is None:
        err_console.print("[red]error:[/red] give --file or set DRIFTRAG_API_KEYS_FILE", highlight=False)
        raise typer.Exit(2)
    return chosen


@api_key_app.command("create")
def api_key_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="Who or what uses the key (unique in the file).")],
    scopes: Annotated[str, typer.Option("--scopes", help="read, manage or read,manage (manage implies read).")],
    kbs: Annotated[str, typer.Option("--kbs", help="Comma-separated kb ids the key may use, or '*' for all.")],
    file: KeysFileOption = None,
) -> None:
    """Create a key, store its SHA-256 in the keys file, and print the key once on stdout."""
    from driftrag.api.auth import create_key, parse_kbs, parse_scopes

    try:
        scope_list, kb_list = parse_scopes(scopes), parse_kbs(kbs)
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    path = _keys_file(file)
    key, entry = _run(ctx, lambda: create_key(path, name=name, scopes=scope_list, kbs=kb_list))
    err_console.print(
        f"created key {entry.name!r} (scopes {', '.join(entry.scopes)}; kbs {', '.join(entry.kbs)}) in {path}; "
        "it is shown only now, keep it somewhere safe",
        highlight=False,
        markup=False,
    )
    typer.echo(key)


@api_key_app.command("list")
def api_key_list(ctx: typer.Context, file: KeysFileOption = None, as_json: JsonOption = False) -> None:
    """Show the keys of the file: name, scopes, kbs (never the hashes)."""
    import json

    from driftrag.api.auth import read_keys_file

    path = _keys_file(file)
    content = _run(ctx, lambda: read_keys_file(path))
    if as_json:
        typer.echo(json.dumps([entry.model_dump(exclude={"key_sha256"}) for entry in content.keys]))
        return
    for entry in content.keys:
        typer.echo(f"{entry.name}\tscopes {','.join(entry.scopes)}\tkbs {','.join(entry.kbs)}")


@api_key_app.command("revoke")
def api_key_revoke(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="The key to remove.")],
    file: KeysFileOption = None,
) -> None:
    """Remove a key from the file; running servers read the file at start-up, so restart them."""
    from driftrag.api.auth import revoke_key

    path = _keys_file(file)
    _run(ctx, lambda: revoke_key(path, name))
    err_console.print(f"revoked key {name!r} in {path}; restart running servers", highlight=False, markup=False)


def main() -> None:
    app()
