"""`driftrag kb list`: the knowledge bases of the server, with counts, mode, embedder and dimension; and
`driftrag kb config show|set|clear|preview`: a kb's extraction config."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    KbOption,
    _arun,
    _emit,
    _run,
    app,
    load_settings,
    read_extract_config,
)
from driftrag.wording import plural

if TYPE_CHECKING:
    from driftrag.ingestion.preview import ExtractionPreview
    from driftrag.models.extract_config import ExtractConfigStatus

kb_app = DriftTyper(help="The knowledge bases of the configured Neo4j.")
app.add_typer(kb_app, name="kb")


@kb_app.command("list", examples=["driftrag kb list"])
def kb_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Every knowledge base: counts, the model mode and embedder (name, dimension) of its last ingestion, and
    its state: stale (half-built), incomplete (the model failed on some parts: `driftrag repair`), or
    deleting (a delete started and did not finish: `driftrag delete --kb K --yes` finishes it)."""
    from driftrag.cli.kb_listing import KbListing, render_listing
    from driftrag.facade import DriftRAG

    async def action() -> KbListing:
        async with DriftRAG(load_settings()) as rag:
            return KbListing(knowledge_bases=await rag.knowledge_bases())

    listing = _arun(ctx, action)
    if as_json:
        _emit(listing, as_json, "")
    else:
        typer.echo(render_listing(listing))  # not rich: a wide table must not be wrapped at the terminal width


# --- the extraction config ----------------------------------------------------------------------------

config_app = DriftTyper(
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
        f"kb {status.kb}: {origin} ({plural(len(config.tags), 'relation label')}, "
        f"{plural(len(config.nodes), 'example node')}, {plural(len(config.relations), 'example relation')})\n"
        f"{_switches(status)}\n{config.model_dump_json(indent=2)}"
    )


@config_app.command("show", examples=["driftrag kb config show --kb notes"])
def config_show(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """The kb's extraction config (the defaults when it has none) and both extraction switches; exit 1 for an
    unknown kb."""
    from driftrag.facade import DriftRAG

    async def action() -> ExtractConfigStatus:
        async with DriftRAG(load_settings()) as rag:
            return await rag.extract_config(kb)

    status = _arun(ctx, action)
    if as_json:
        _emit(status, as_json, "")
    else:
        typer.echo(render_status(status))


@config_app.command("set", examples=["driftrag kb config set --kb notes docs/examples/extract-config.fr.json"])
def config_set(ctx: typer.Context, file: ConfigFileArgument, kb: KbOption, as_json: JsonOption = False) -> None:
    """Store FILE.json as the kb's extraction config (the kb is created if new). It guides the chunks
    extracted from now on; an invalid file is one error line (exit 1) and nothing is changed."""
    from driftrag.facade import DriftRAG

    config = _run(ctx, lambda: read_extract_config(file))

    async def action() -> ExtractConfigStatus:
        async with DriftRAG(load_settings()) as rag:
            return await rag.set_extract_config(kb, config)

    status = _arun(ctx, action)
    _emit(status, as_json, f"kb {kb}: extract config stored\n{_switches(status)}")


@config_app.command("clear", examples=["driftrag kb config clear --kb notes"])
def config_clear(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Remove the kb's extraction config: the defaults apply again; exit 1 for an unknown kb."""
    from driftrag.facade import DriftRAG

    async def action() -> ExtractConfigStatus:
        async with DriftRAG(load_settings()) as rag:
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
        f"{preview.mode} extraction of {plural(preview.chunks, 'chunk')}: {plural(len(preview.entities), 'entity')}, "
        f"{plural(len(preview.relationships), 'relationship')} (nothing stored)"
    ]
    lines += [f"  entity {e.name} [{e.type}]" for e in preview.entities]
    lines += [f"  {r.source} -[{r.type}]-> {r.target} (weight {r.weight:g})" for r in preview.relationships]
    lines += [f"warning: {w}" for w in preview.warnings] + [f"note: {n}" for n in preview.notes]
    return "\n".join(lines)


@config_app.command(
    "preview",
    examples=[
        "driftrag kb config preview --kb notes page.txt",
        "driftrag kb config preview --kb notes page.txt --config draft.json --tag FOUNDED",
    ],
)
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
        async with DriftRAG(load_settings()) as rag:
            return await rag.preview_extraction(kb, text, config=config, tags=tags or None)

    preview = _arun(ctx, action)
    if as_json:
        _emit(preview, as_json, "")
    else:
        typer.echo(render_preview(preview))
