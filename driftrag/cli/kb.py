"""`driftrag kb list`: the knowledge bases of the server, with counts, mode, embedder and dimension."""

from __future__ import annotations

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    _arun,
    _emit,
    app,
    load_settings,
)

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
