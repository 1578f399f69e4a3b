"""`driftrag ingest`, `delete` and `stats`: building and maintaining a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from driftrag.cli.common import (
    JsonOption,
    KbOption,
    _arun,
    _emit,
    _run,
    app,
    console,
    err_console,
    load_settings,
    read_extract_config,
)
from driftrag.wording import plural


def _say_waiting(message: str) -> None:
    """Another process writes the kb: say so once, then this command waits its turn."""
    err_console.print(f"[yellow]waiting:[/yellow] {message}", highlight=False, soft_wrap=True)


def _say_estimate(estimate) -> None:
    """What the extraction will cost, on stderr beside the bars (stdout keeps the summary or the JSON)."""
    err_console.print(estimate.describe(), highlight=False, soft_wrap=True)
    warning = estimate.warning()
    if warning is not None:
        err_console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)


@app.command(
    "ingest", examples=["driftrag ingest ~/papers --kb papers", "driftrag ingest book.pdf notes.md --kb alice --json"]
)
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
    extract_config: Annotated[
        Path | None,
        typer.Option(
            "--extract-config",
            help="A JSON extraction config, stored as the kb's (as `driftrag kb config set`) before its chunks "
            "are extracted; an invalid file stops the command before anything is written.",
            metavar="FILE.json",
        ),
    ] = None,
) -> None:
    """Ingest files or folders into a knowledge base: chunks, entities, relationships, communities, reports, vectors.

    Text, markdown, PDF, DOCX, HTML and EPUB files; folders are read recursively for all of them. A PDF's
    chunks keep the page(s) their text came from, an EPUB's its chapters, a DOCX's its headings, and query
    sources show them. A PDF page without a text layer (a scanned image) is read by OCR when the `ocr`
    extra and Tesseract are installed, else skipped and named in the summary with what to install. A file
    that cannot be read (corrupt, empty, binary, not UTF-8, a zip over the caps) stops the run with one
    error naming it, before anything is written. See docs/ingestion.md.

    Before extraction starts, a line on stderr gives the chunks to extract and the model calls it makes
    (an estimate, with its basis; the time left once a rate is measured; a warning for a large run). Several
    `ingest` processes may run at once on different documents of one kb: the per-document half runs side by
    side, the kb-wide half (entities, communities, reports) one at a time; one that waits says for whom and
    until when."""
    from rich.progress import Progress as Bar

    from driftrag.facade import DriftRAG
    from driftrag.ingestion.loading import collect_paths

    config = _run(ctx, lambda: read_extract_config(extract_config)) if extract_config is not None else None

    async def action():
        settings = load_settings()
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
                    extract_config=config,
                )

    _report_ingestion(_arun(ctx, action), as_json)


@app.command("communities", examples=["driftrag communities --kb papers"])
def communities(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Build the kb-wide layers once after `ingest --skip-communities` workers: entities and relationships
    merged from every chunk, communities, reports and their vectors (nothing to do if the kb is up to date)."""
    from rich.progress import Progress as Bar

    from driftrag.facade import DriftRAG

    async def action():
        async with DriftRAG(load_settings()) as rag:
            with Bar(console=err_console, transient=True, disable=as_json) as bar:
                return await rag.build_graph(kb, on_progress=_bar_updater(bar), on_lock_wait=_say_waiting)

    _report_ingestion(_arun(ctx, action), as_json)


@app.command("repair", examples=["driftrag repair --kb notes", "driftrag repair --kb notes --json"])
def repair(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Ask again for everything the model failed on in the kb (chunks whose extraction failed, placeholder
    summaries and reports), once each with the usual retries, rebuild what that changes, and print what
    was retried and what remains; exit 4 while something is still incomplete, 1 for an unknown kb."""
    from rich.progress import Progress as Bar

    from driftrag.facade import DriftRAG

    async def action():
        async with DriftRAG(load_settings()) as rag:
            with Bar(console=err_console, transient=True, disable=as_json) as bar:
                return await rag.repair(kb, on_progress=_bar_updater(bar), on_lock_wait=_say_waiting)

    result = _arun(ctx, action)
    _emit(result, as_json, render_repair(result))
    if not result.complete:
        raise typer.Exit(4)


def render_repair(result) -> str:
    """What a repair retried and what is left, one line each."""
    before, after = result.before, result.after

    def parts(counts, stale: bool) -> str:
        text = (
            f"{plural(counts.failed_chunks, 'failed chunk')}, "
            f"{plural(counts.placeholder_summaries, 'placeholder summary')}, "
            f"{plural(counts.placeholder_reports, 'placeholder report')}"
        )
        return text + (", stale" if stale else "")

    lines = [
        f"kb {result.kb}: retried {parts(before, result.stale_before)}",
        f"model calls {result.run.usage.chat_calls} ({result.run.usage.failed_calls} failed after retries); "
        f"chunks extracted again {result.run.retried_chunks}, summaries {result.run.summaries_generated}, "
        f"reports {result.run.reports_generated}",
        ("complete: nothing remains" if result.complete else f"remaining: {parts(after, result.stale_after)}"),
    ]
    lines += [f"  failed {c.id} (document {c.document_id}, #{c.index}): {c.error}" for c in result.failed_chunks]
    return "\n".join(lines)


def _bar_updater(bar):
    """A progress callback drawing one bar per stage; an extraction's estimate is printed as a line."""
    tasks: dict[str, int] = {}

    def show(progress) -> None:
        if progress.estimate is not None:
            _say_estimate(progress.estimate)
        if progress.stage not in tasks:
            tasks[progress.stage] = bar.add_task(progress.stage, total=progress.total)
        bar.update(tasks[progress.stage], completed=progress.done, total=progress.total)

    return show


def _report_ingestion(result, as_json: bool) -> None:
    counts = result.counts
    text = (
        f"kb {result.kb}: {counts.describe()}\n"
        f"model calls {result.usage.chat_calls} (cache hits {result.usage.cache_hits}), "
        f"tokens {result.usage.prompt_tokens} in / {result.usage.completion_tokens} out; "
        f"failed chunks {len(result.failed_chunks)}"
        + (f" ({result.retried_chunks} retried)" if result.retried_chunks else "")
        + ("" if result.graph_rebuilt else "; graph not rebuilt" + (" (kb stale)" if result.stale else ""))
    )
    if counts.placeholder_summaries or counts.placeholder_reports:
        text += (
            f"\nplaceholders the model failed on (asked again next run, or `driftrag repair --kb {result.kb}`): "
            f"{counts.placeholder_summaries} summaries, {counts.placeholder_reports} reports"
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
    for warning in result.warnings:
        # On stderr whatever the output format: a mostly offline or empty graph must not pass unseen.
        err_console.print(f"warning: {warning}", highlight=False, soft_wrap=True)
    if result.failed_chunks:
        raise typer.Exit(4)


@app.command(
    "delete", examples=["driftrag delete --kb alice --document document-5e1b --yes", "driftrag delete --kb alice --yes"]
)
def delete(
    ctx: typer.Context,
    kb: KbOption,
    document: Annotated[str | None, typer.Option(help="Delete only this document id.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm the deletion.")] = False,
) -> None:
    """Delete a document (its chunks, and entities left without sources) or a whole knowledge base."""
    from driftrag.facade import DriftRAG

    if not yes:
        err_console.print("refusing without --yes", soft_wrap=True)
        raise typer.Exit(2)

    async def action() -> None:
        async with DriftRAG(load_settings()) as rag:
            if document is None:
                await rag.delete_kb(kb, on_lock_wait=_say_waiting)
            else:
                await rag.delete_document(kb, document, on_lock_wait=_say_waiting)

    _arun(ctx, action)
    console.print(
        f"deleted document {document} of kb {kb}" if document else f"deleted knowledge base {kb}",
        highlight=False,
        soft_wrap=True,
    )


@app.command("stats", examples=["driftrag stats --kb alice"])
def stats(ctx: typer.Context, kb: KbOption, as_json: JsonOption = False) -> None:
    """Counts of a knowledge base (with the chunks a weak model's unusable extraction left to the offline
    extractor), what the model failed on (failed chunks, placeholder summaries and reports: the kb is
    incomplete until `driftrag repair` or the next ingestion gets them), whether it is stale (half-built),
    and the chunks whose extraction failed; exit 1 for an unknown kb or one being deleted."""
    from pydantic import BaseModel

    from driftrag.facade import DriftRAG
    from driftrag.models.graph import FailedChunk, KbCounts

    class Stats(BaseModel):
        kb: str
        stale: bool
        incomplete: bool
        counts: KbCounts
        failed_chunks: list[FailedChunk]
        warnings: list[str]

    async def action() -> Stats:
        async with DriftRAG(load_settings()) as rag:
            status = await rag.status(kb)  # an unknown kb is an error (exit 1), as HTTP's 404
            counts, failed = await rag.stats(kb), await rag.failed_chunks(kb)
            return Stats(
                kb=kb,
                stale=status.stale,
                incomplete=counts.incomplete,
                counts=counts,
                failed_chunks=failed,
                warnings=counts.warnings(),
            )

    result = _arun(ctx, action)
    lines = [f"kb {kb}: {result.counts.describe(every=True)}"]
    if result.stale:
        lines.append("  stale: half-built (chunks changed since the last complete rebuild); `driftrag communities`")
    if result.incomplete:
        lines.append(f"  incomplete: the model failed on some parts; `driftrag repair --kb {kb}` asks for them again")
    lines += [f"  warning: {warning}" for warning in result.warnings]
    lines += [f"  failed {c.id} (document {c.document_id}, #{c.index}): {c.error}" for c in result.failed_chunks]
    _emit(result, as_json, "\n".join(lines))
