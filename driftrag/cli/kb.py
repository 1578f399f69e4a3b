"""`driftrag kb list`: the knowledge bases of the server, with counts, mode, embedder and dimension; and
`driftrag kb config show|set|clear|preview`: a kb's extraction config."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel

from driftrag.cli.common import JsonOption, KbOption, _arun, _emit, _run, app, read_extract_config
from driftrag.models.graph import KbSummary
from driftrag.settings import Settings

if TYPE_CHECKING:
    from driftrag.ingestion.preview import ExtractionPreview
    from driftrag.models.extract_config import ExtractConfigStatus

kb_app = typer.Typer(help="The knowledge bases of the configured Neo4j.")
app.add_typer(kb_app, name="kb")


class KbListing(BaseModel):
    knowledge_bases: list[KbSummary]


_COLUMNS = ("kb", "mode", "embedder", "dim", "docs", "chunks", "entities", "rels", "communities", "reports", "graph")


def render_listing(listing: KbListing) -> str:
    """An aligned table, one row per kb; `-` where an older ingestion did not record the value."""
    rows = [_COLUMNS]
    for summary in listing.knowledge_bases:
        counts = summary.counts
        graph = ("enabled" if summary.graph_enabled else "disabled") + (", stale" if summary.stale else "")
        rows.append(
            (
                summary.kb,
                summary.mode or "-",
                summary.embedder or "-",
                str(summary.embedding_dimension or "-"),
                *(
                    str(value)
                    for value in (
                        counts.documents,
                        counts.chunks,
                        counts.entities,
                        counts.relationships,
                        counts.communities,
                        counts.reports,
                    )
                ),
                graph,
            )
        )
    if len(rows) == 1:
        return "no knowledge bases yet: `driftrag ingest PATH --kb NAME` creates one"
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


@kb_app.command("list")
def kb_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Every knowledge base: counts, the model mode and embedder (name, dimension) of its last ingestion."""
    from driftrag.facade import DriftRAG

    async def action() -> KbListing:
        async with DriftRAG(Settings()) as rag:
            return KbListing(knowledge_bases=await rag.knowledge_bases())

    listing = _arun(ctx, action)
    if as_json:
        _emit(listing, as_json, "")
    else:
        typer.echo(render_listing(listing))  # not rich: a wide table must not be wrapped at the terminal width


# --- the extraction config ----------------------------------------------------------------------------

config_app = typer.Typer(
    help="The extraction config of a knowledge base: few-shot text, relation labels, example nodes and "
    "relations, custom instructions, and its extraction switch (docs/extraction-config.md)."
)
kb_app.add_typer(config_app, name="config")

ConfigFileArgument = Annotated[Path, typer.Argument(help="A JSON extract config.", metavar="FILE.json")]


def _switches(status: ExtractConfigStatus) -> str:
    state = "on" if status.extraction_enabled else "off"
    return (
        f"extraction {state}: global switch (graph_extraction) {'on' if status.globally_enabled else 'off'}, "
        f"kb switch (enabled) {'on' if status.config.enabled else 'off'}"
    )


def render_status(status: ExtractConfigStatus) -> str:
    config = status.config
    origin = "its own extract config" if status.stored else "no extract config of its own: the defaults apply"
    return (
        f"kb {status.kb}: {origin} ({len(config.tags)} relation labels, {len(config.nodes)} example nodes, "
        f"{len(config.relations)} example relations)\n{_switches(status)}\n{config.model_dump_json(indent=2)}"
    )


@config_app.command("show")
def config_show(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """The kb's extraction config (the defaults when it has none) and both extraction switches; exit 1 for an
    unknown kb."""
    from driftrag.facade import DriftRAG

    async def action() -> ExtractConfigStatus:
        async with DriftRAG(Settings()) as rag:
            return await rag.extract_config(kb)

    status = _arun(ctx, action)
    if as_json:
        _emit(status, as_json, "")
    else:
        typer.echo(render_status(status))


@config_app.command("set")
def config_set(ctx: typer.Context, file: ConfigFileArgument, kb: KbOption, as_json: JsonOption = False) -> None:
    """Store FILE.json as the kb's extraction config (the kb is created if new). It guides the chunks
    extracted from now on; an invalid file is one error line (exit 1) and nothing is changed."""
    from driftrag.facade import DriftRAG

    config = _run(ctx, lambda: read_extract_config(file))

    async def action() -> ExtractConfigStatus:
        async with DriftRAG(Settings()) as rag:
            return await rag.set_extract_config(kb, config)

    status = _arun(ctx, action)
    _emit(status, as_json, f"kb {kb}: extract config stored\n{_switches(status)}")


@config_app.command("clear")
def config_clear(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Remove the kb's extraction config: the defaults apply again; exit 1 for an unknown kb."""
    from driftrag.facade import DriftRAG

    async def action() -> ExtractConfigStatus:
        async with DriftRAG(Settings()) as rag:
            return await rag.clear_extract_config(kb)

    status = _arun(ctx, action)
    _emit(status, as_json, f"kb {kb}: extract config removed, the defaults apply\n{_switches(status)}")


def _read_text(path: Path) -> str:
    from driftrag.ingestion.loading import InputError

    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def render_preview(preview: ExtractionPreview) -> str:
    lines = [
        f"{preview.mode} extraction of {preview.chunks} chunk(s): {len(preview.entities)} entities, "
        f"{len(preview.relationships)} relationships (nothing stored)"
    ]
    lines += [f"  entity {e.name} [{e.type}]" for e in preview.entities]
    lines += [f"  {r.source} -[{r.type}]-> {r.target} (weight {r.weight:g})" for r in preview.relationships]
    lines += [f"warning: {w}" for w in preview.warnings] + [f"note: {n}" for n in preview.notes]
    return "\n".join(lines)


@config_app.command("preview")
def config_preview(
    ctx: typer.Context,
    text_file: Annotated[Path, typer.Argument(help="A UTF-8 text of at most 5,000 characters.", metavar="FILE.txt")],
    kb: KbOption,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="Try this JSON extract config instead of the kb's.", metavar="FILE.json"),
    ] = None,
    tags: Annotated[
        list[str] | None, typer.Option("--tag", help="An allowed relation label, replacing the config's (repeat).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The entities and relationships extraction would write for FILE.txt in this engine's mode (offline, or
    with its model), with the kb's config or --config; nothing is stored. Exit 1 for an unknown kb."""
    from driftrag.facade import DriftRAG

    config = _run(ctx, lambda: read_extract_config(config_file)) if config_file is not None else None
    text = _run(ctx, lambda: _read_text(text_file))

    async def action() -> ExtractionPreview:
        async with DriftRAG(Settings()) as rag:
            return await rag.preview_extraction(kb, text, config=config, tags=tags or None)

    preview = _arun(ctx, action)
    if as_json:
        _emit(preview, as_json, "")
    else:
        typer.echo(render_preview(preview))
