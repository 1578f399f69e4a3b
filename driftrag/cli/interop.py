"""`driftrag import graphrag` and `driftrag export graphrag`: Microsoft GraphRAG output folders in and out."""

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
    err_console,
    load_settings,
)

import_app = DriftTyper(help="Bring an index built by another tool into a new knowledge base.", no_args_is_help=True)
export_app = DriftTyper(help="Write a knowledge base in another tool's format.", no_args_is_help=True)
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")

_EMBEDDINGS = ("auto", "keep", "compute")


def _embedding_choice(value: str) -> str:
    if value not in _EMBEDDINGS:
        raise typer.BadParameter(f"use one of {', '.join(_EMBEDDINGS)}")
    return value


def _say_waiting(message: str) -> None:
    err_console.print(f"[yellow]waiting:[/yellow] {message}", highlight=False, soft_wrap=True)


@import_app.command("graphrag", examples=["driftrag import graphrag ./ragtest/output --kb imported"])
def import_graphrag(
    ctx: typer.Context,
    folder: Annotated[
        Path, typer.Argument(help="A Microsoft GraphRAG 2.x/3.x output folder (or the project root holding output/).")
    ],
    kb: KbOption,
    embeddings: Annotated[
        str,
        typer.Option(
            help="auto: GraphRAG's vectors (its embeddings.*.parquet snapshots) where their dimension is the "
            "embedder's, the rest computed with the kb's embedder; keep: GraphRAG's vectors or an error; "
            "compute: every vector made with the kb's embedder. Kept vectors must come from the model the kb's "
            "embedder runs, since questions are embedded with it.",
            callback=_embedding_choice,
        ),
    ] = "auto",
    as_json: JsonOption = False,
) -> None:
    """Import GraphRAG's parquet tables (documents, text_units, entities, relationships, communities,
    community_reports) into a new knowledge base that every query mode and graph view reads.

    The kb must not exist yet. Every table is read and checked before anything is written, and a
    failure while writing removes the new kb again. Needs the `graphrag` extra (pyarrow)."""
    from driftrag.facade import DriftRAG
    from driftrag.interop.graphrag import import_graphrag as run_import

    async def action():
        # Not `async with`: the folder is read and checked before Neo4j is reached (or started).
        rag = DriftRAG(load_settings())
        try:
            return await run_import(rag, kb, folder, embeddings=embeddings, on_lock_wait=_say_waiting)  # type: ignore[arg-type]
        finally:
            await rag.close()

    result = _arun(ctx, action)
    _emit(result, as_json, result.render())


@export_app.command("graphrag", examples=["driftrag export graphrag ./exported --kb alice"])
def export_graphrag(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="The folder to write the parquet tables to (created if missing).")],
    kb: KbOption,
    vectors: Annotated[
        bool,
        typer.Option(
            "--vectors/--no-vectors", help="Also write the embeddings.* tables (chunk, entity, report vectors)."
        ),
    ] = True,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the parquet tables the folder already holds.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Write a knowledge base as Microsoft GraphRAG's output tables (3.x column names): documents,
    text_units, entities, relationships, communities, community_reports, and its vectors.

    Ids are the kb's; communities are numbered by level, then id. Needs the `graphrag` extra (pyarrow)."""
    from driftrag.facade import DriftRAG
    from driftrag.interop.graphrag import export_graphrag as run_export

    async def action():
        rag = DriftRAG(load_settings())  # the folder is checked before Neo4j is reached
        try:
            return await run_export(rag, kb, folder, vectors=vectors, overwrite=overwrite)
        finally:
            await rag.close()

    result = _arun(ctx, action)
    _emit(result, as_json, result.render())
