"""The table of `driftrag kb list` (its own module: the kb models load only when the command runs)."""

from __future__ import annotations

from pydantic import BaseModel

from driftrag.models.graph import KbSummary


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
