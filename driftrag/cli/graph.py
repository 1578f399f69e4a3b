"""`driftrag graph-search`, `chunk …`, `graph-enable/-disable` and `graph`: the graph itself."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    KbOption,
    _arun,
    _emit,
    app,
    console,
    err_console,
    load_settings,
)
from driftrag.errors import DriftRAGError
from driftrag.wording import plural

# --- graph search and its switches ------------------------------------------------------------------

chunk_app = DriftTyper(help="Enable or disable chunks as sources of every search mode.")
app.add_typer(chunk_app, name="chunk")

ChunkIdsArgument = Annotated[list[str], typer.Argument(help="Chunk ids (chunk-…).")]


@app.command("graph-search", examples=['driftrag graph-search "Rabbit" --kb alice --max-rows 50'])
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
    from driftrag.facade import DriftRAG
    from driftrag.search.graph_search import parse_request

    try:  # a bad request is bad usage (exit 2), refused before anything connects
        parse_request(kb, query, max_seeds=max_seeds, max_rows=max_rows)
    except DriftRAGError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None

    async def action():
        async with DriftRAG(load_settings()) as rag:
            return await rag.graph_search(kb, query, max_seeds=max_seeds, max_rows=max_rows)

    # Plain JSON, not rich: the response can be large and must stay parseable byte for byte.
    typer.echo(_arun(ctx, action).model_dump_json(indent=2))


def _switch_chunks(ctx: typer.Context, kb: str, chunk_ids: list[str], enabled: bool, as_json: bool) -> None:
    from pydantic import BaseModel

    from driftrag.facade import DriftRAG

    class ChunkSwitchReport(BaseModel):
        kb: str
        enabled: bool
        requested: int
        matched: int

    async def action() -> ChunkSwitchReport:
        async with DriftRAG(load_settings()) as rag:
            matched = await rag.set_chunks_enabled(kb, chunk_ids, enabled)
        return ChunkSwitchReport(kb=kb, enabled=enabled, requested=len(set(chunk_ids)), matched=matched)

    report = _arun(ctx, action)
    verb = "enabled" if enabled else "disabled"
    missing = report.requested - report.matched
    text = f"{verb} {plural(report.matched, 'chunk')} in kb {kb}" + (f"; {missing} not found" if missing else "")
    _emit(report, as_json, text)


@chunk_app.command("disable", examples=["driftrag chunk disable chunk-3f2a9c --kb alice"])
def chunk_disable(ctx: typer.Context, chunk_ids: ChunkIdsArgument, kb: KbOption, as_json: JsonOption = False) -> None:
    """Disable chunks: no search uses them as sources any more (entities and relationships left without any vanish)."""
    _switch_chunks(ctx, kb, chunk_ids, False, as_json)


@chunk_app.command("enable", examples=["driftrag chunk enable chunk-3f2a9c --kb alice"])
def chunk_enable(ctx: typer.Context, chunk_ids: ChunkIdsArgument, kb: KbOption, as_json: JsonOption = False) -> None:
    """Enable chunks again as sources of every search."""
    _switch_chunks(ctx, kb, chunk_ids, True, as_json)


def _switch_graph(ctx: typer.Context, kb: str, enabled: bool) -> None:
    from driftrag.facade import DriftRAG

    async def action() -> None:
        async with DriftRAG(load_settings()) as rag:
            await rag.set_graph_enabled(kb, enabled)

    _arun(ctx, action)
    console.print(f"graph search {'enabled' if enabled else 'disabled'} for kb {kb}", highlight=False, soft_wrap=True)


@app.command("graph-enable", examples=["driftrag graph-enable --kb alice"])
def graph_enable(ctx: typer.Context, kb: KbOption) -> None:
    """Allow graph search on a knowledge base."""
    _switch_graph(ctx, kb, True)


@app.command("graph-disable", examples=["driftrag graph-disable --kb alice"])
def graph_disable(ctx: typer.Context, kb: KbOption) -> None:
    """Refuse graph search on a knowledge base (it answers 'backend unavailable', exit code 3)."""
    _switch_graph(ctx, kb, False)


# --- graph views ------------------------------------------------------------------------------------

_VIEW_DEFAULT_MAX_NODES = 100


def _valid_community(community: str | None) -> str | None:
    """Refuse a malformed community id before anything connects."""
    from driftrag.models.identifiers import validate_node_id

    if community is None:
        return None
    try:
        validate_node_id(community)
    except DriftRAGError as exc:
        raise typer.BadParameter(str(exc)) from None
    if not community.startswith("community-"):
        raise typer.BadParameter(f"not a community id: {community!r}")
    return community


@app.command("graph", examples=["driftrag graph --kb alice > alice.mmd", "driftrag graph --kb alice --html alice.html"])
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

    from driftrag.facade import DriftRAG

    chosen = [
        name
        for name, on in (("--mermaid", mermaid), ("--html", html), ("--graphml", graphml), ("--json", as_json))
        if on
    ]
    if len(chosen) > 1:
        err_console.print(
            f"[red]error:[/red] choose one output, not {' and '.join(chosen)}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(2)
    target = html or graphml
    if target is not None and not target.parent.is_dir():
        missing = escape_markup(repr(str(target.parent)))
        err_console.print(
            f"[red]error:[/red] no directory {missing} to write the file in", highlight=False, soft_wrap=True
        )
        raise typer.Exit(2)
    if max_nodes is None:
        max_nodes = 0 if graphml or as_json else _VIEW_DEFAULT_MAX_NODES

    async def action():
        async with DriftRAG(load_settings()) as rag:
            return await rag.graph_view(kb, community_id=community, max_nodes=max_nodes or None)

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
            err_console.print(f"note: {view.describe()}; --max-nodes 0 shows all", highlight=False, soft_wrap=True)
        return
    text = views.render_html(view, measures) if html else views.render_graphml(view, measures)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        reason = escape_markup(f"cannot write {str(target)!r}: {exc.strerror or exc}")
        err_console.print(f"[red]error:[/red] {reason}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {target}: {view.describe()}")
