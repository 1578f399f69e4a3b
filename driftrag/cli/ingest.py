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


def _say_waiting(message: str) -> None:
    """Another process writes the kb: say so once, then this command waits its turn."""
    err_console.print(f"[yellow]waiting:[/yellow] {message}", highlight=False, soft_wrap=True)


@app.command("ingest")
def ingest(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files or folders of them: text or markdown (.txt, .md; UTF-8, or UTF-16 with a BOM), PDF (page "
            "numbers kept; a page without a text layer is OCR'd with the ocr extra and Tesseract, else skipped), "
            "DOCX, HTML (.html, .htm) and EPUB."
        ),
    ],
    kb: KbOption,
    as_json: JsonOption = False,
    skip_communities: Annotated[
        bool,
        typer.Option(
            "--skip-communities",
            help="Only the per-document half (chunks, extraction, chunk vectors), beside other workers of "
            "the kb; run `driftrag communities --kb K` once when all are done.",
        ),
    ] = False,
) -> None:
    """Ingest files or folders into a knowledge base: chunks, entities, relationships, communities, reports, vectors.

    Text, markdown, PDF, DOCX, HTML and EPUB files; folders are read recursively for all of them. A PDF's
    chunks keep the page(s) their text came from, an EPUB's its chapters, a DOCX's its headings, and query
    sources show them. A PDF page without a text layer (a scanned image) is read by OCR when the `ocr`
    extra and Tesseract are installed, else skipped and named in the summary with what to install. A file
    that cannot be read (corrupt, empty, binary, not UTF-8, a zip over the caps) stops the run with one
    error naming it, before anything is written. See docs/ingestion.md.

    Several `ingest` processes may run at once on different documents of one kb: the per-document half
    runs side by side, the kb-wide half (entities, communities, reports) one at a time."""
    from rich.progress import Progress as Bar

    from driftrag.facade import DriftRAG
    from driftrag.ingestion.loading import collect_paths

    async def action():
        settings = Settings()
        files = collect_paths(paths)
        rag = DriftRAG(settings)
        async with rag:
            with Bar(console=err_console, transient=True, disable=as_json) as bar:
                return await rag.ingest(
                    kb,
                    paths=files,
                    on_progress=_bar_updater(bar),
                    on_lock_wait=_say_waiting,
                    skip_communities=skip_communities,
                )

    _report_ingestion(_arun(ctx, action), as_json)


@app.command("communities")
def communities(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Build the kb-wide layers once after `ingest --skip-communities` workers: entities and relationships
    merged from every chunk, communities, reports and their vectors (nothing to do if the kb is up to date)."""
    from rich.progress import Progress as Bar

    from driftrag.facade import DriftRAG

    async def action():
        async with DriftRAG(Settings()) as rag:
            with Bar(console=err_console, transient=True, disable=as_json) as bar:
                return await rag.build_graph(kb, on_progress=_bar_updater(bar), on_lock_wait=_say_waiting)

    _report_ingestion(_arun(ctx, action), as_json)


def _bar_updater(bar):
    """A progress callback drawing one bar per stage."""
    tasks: dict[str, int] = {}

    def show(progress) -> None:
        if progress.stage not in tasks:
            tasks[progress.stage] = bar.add_task(progress.stage, total=progress.total)
        bar.update(tasks[progress.stage], completed=progress.done, total=progress.total)

    return show


def _report_ingestion(result, as_json: bool) -> None:
    counts = result.counts
    text = (
        f"kb {result.kb}: {counts.documents} documents, {counts.chunks} chunks, {counts.entities} entities, "
        f"{counts.relationships} relationships, {counts.communities} communities, {counts.reports} reports\n"
        f"model calls {result.usage.chat_calls} (cache hits {result.usage.cache_hits}), "
        f"tokens {result.usage.prompt_tokens} in / {result.usage.completion_tokens} out; "
        f"failed chunks {len(result.failed_chunks)}"
        + ("" if result.graph_rebuilt else "; graph not rebuilt" + (" (kb stale)" if result.stale else ""))
    )
    if counts.offline_extracted_chunks:
        # A weak model's unusable extractions were filled by the offline extractor (issue 34).
        text += f"\nchunks extracted offline (the model's answer was unusable): {counts.offline_extracted_chunks}"
    skipped = [warning for document in result.documents for warning in document.warnings]
    if skipped:
        text += "\nskipped while loading:\n" + "\n".join(f"  {warning}" for warning in skipped)
    if result.unknown_report_citations:
        text += f"\nreport citations of handles not in their context (dropped): {result.unknown_report_citations}"
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
    from driftrag.facade import DriftRAG

    if not yes:
        err_console.print("refusing without --yes")
        raise typer.Exit(2)

    async def action() -> None:
        async with DriftRAG(Settings()) as rag:
            if document is None:
                await rag.delete_kb(kb, on_lock_wait=_say_waiting)
            else:
                await rag.delete_document(kb, document, on_lock_wait=_say_waiting)

    _arun(ctx, action)
    console.print(f"deleted {'document ' + document if document else 'knowledge base'} in kb {kb}")


@app.command("stats")
def stats(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Counts of a knowledge base (with the chunks a weak model's unusable extraction left to the offline
    extractor), and the chunks whose extraction failed; exit 1 for an unknown kb."""
    from driftrag.facade import DriftRAG
    from driftrag.models.graph import FailedChunk, KbCounts

    class Stats(BaseModel):
        kb: str
        counts: KbCounts
        failed_chunks: list[FailedChunk]

    async def action() -> Stats:
        async with DriftRAG(Settings()) as rag:
            await rag.graph_enabled(kb)  # an unknown kb is an error (exit 1), as HTTP's 404
            return Stats(kb=kb, counts=await rag.stats(kb), failed_chunks=await rag.failed_chunks(kb))

    result = _arun(ctx, action)
    lines = [f"kb {kb}: " + ", ".join(f"{value} {name}" for name, value in result.counts.model_dump().items())]
    lines += [f"  failed {c.id} (document {c.document_id}, #{c.index}): {c.error}" for c in result.failed_chunks]
    _emit(result, as_json, "\n".join(lines))
