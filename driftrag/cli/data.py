"""`driftrag data …`: public-domain corpora by name."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from driftrag.cli.common import (
    DriftTyper,
    JsonOption,
    app,
    err_console,
    load_settings,
)
from driftrag.errors import DriftRAGError

# --- data: public-domain corpora by name ---------------------------------------------------------------

data_app = DriftTyper(help="Public-domain corpora by name: download with a pinned checksum, or copy a local file.")
app.add_typer(data_app, name="data")


def _sha256_option(text: str | None) -> str | None:
    import re

    if text is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        raise typer.BadParameter("a SHA-256 is 64 hexadecimal digits")
    return text.lower() if text else None


@data_app.command("list", examples=["driftrag data list"])
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
        if corpus.text_sha256:
            kept = f"{corpus.text_size:,} bytes, the publisher's header and licence stripped"
            lines.append(f"{'':<8}story:  {corpus.text_sha256} ({kept})")
        lines.append(f"{'':<8}license: {corpus.license}")
        typer.echo("\n".join(lines))


@data_app.command(
    "fetch", examples=["driftrag data fetch alice", "driftrag data fetch alice --from ~/Downloads/pg11.txt"]
)
def data_fetch(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A corpus from `driftrag data list` (alice, verne, sample).")],
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
    """Download a corpus (checksum verified; not again when present), keep its story, print its path.

    Only the story is kept: the publisher's header and licence (Project Gutenberg's `*** START OF` and
    `*** END OF` lines) are stripped. A corpus that ships its stripped text is copied without network.

    Exit codes: 1 checksum mismatch or bad file, 2 unknown corpus, 3 no network (use --from PATH).
    A shipped corpus (sample) prints its folder; with --dest it is copied there.
    """
    from rich.markup import escape as escape_markup

    from driftrag import corpora
    from driftrag.errors import DownloadUnavailableError, UnknownCorpusError

    try:
        corpus = corpora.get_corpus(name)
    except UnknownCorpusError as exc:
        err_console.print(f"[red]error:[/red] {escape_markup(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None

    try:
        if corpus.bundled is not None and dest is not None and (source, url, sha256) == (None, None, None):
            result = corpora.copy_shipped(corpus, dest)
        else:
            target = dest or corpora.default_dest(load_settings().home)
            result = corpora.fetch(corpus, dest=target, source=source, url=url, expected_sha256=sha256)
    except DriftRAGError as exc:
        if ctx.obj is not None and ctx.obj.debug:
            raise
        err_console.print(f"[red]error:[/red] {escape_markup(str(exc))}", highlight=False, soft_wrap=True)
        # No network is "backend unavailable" here: exit 3, as Neo4j outages are for the other commands.
        raise typer.Exit(3 if isinstance(exc, DownloadUnavailableError) else 1) from None
    if as_json:
        typer.echo(result.model_dump_json())
        return
    err_console.print(escape_markup(result.describe()), highlight=False, soft_wrap=True)
    typer.echo(str(result.path))
