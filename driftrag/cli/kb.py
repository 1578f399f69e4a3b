"""`driftrag kb list`: the knowledge bases of the server, with counts, mode, embedder and dimension."""

from __future__ import annotations

import typer
from pydantic import BaseModel

from driftrag.cli.common import JsonOption, _arun, _emit, app
from driftrag.models.graph import KbSummary
from driftrag.settings import Settings

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
        graph = ("enabled" if summary.graph_enabled else "disabled") + "".join(
            f", {flag}"
            for flag, on in (
                ("stale", summary.stale),
                ("incomplete", summary.incomplete),
                ("deleting (interrupted? delete it again)", summary.deleting),
            )
            if on
        )
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
    """Every knowledge base: counts, the model mode and embedder (name, dimension) of its last ingestion, and
    its state: stale (half-built), incomplete (the model failed on some parts: `driftrag repair`), or
    deleting (a delete started and did not finish: `driftrag delete --kb K --yes` finishes it)."""
    from driftrag.facade import DriftRAG

    async def action() -> KbListing:
        async with DriftRAG(Settings()) as rag:
            return KbListing(knowledge_bases=await rag.knowledge_bases())

    listing = _arun(ctx, action)
    if as_json:
        _emit(listing, as_json, "")
    else:
        typer.echo(render_listing(listing))  # not rich: a wide table must not be wrapped at the terminal width
