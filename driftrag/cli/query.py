"""`driftrag query` and `demo`: answers with their sources."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from driftrag.cli.common import (
    JsonOption,
    KbOption,
    _arun,
    _valid_kb,
    app,
    console,
    err_console,
    load_settings,
)
from driftrag.search.modes import MODE_NAMES

if TYPE_CHECKING:
    from driftrag.settings import Settings

# --- query ----------------------------------------------------------------------------------------


def _valid_mode(mode: str) -> str:
    if mode not in MODE_NAMES:
        raise typer.BadParameter(f"choose one of {', '.join(MODE_NAMES)}")
    return mode


async def _answer(settings: Settings, kb: str, question: str, mode: str, on_progress=None, level: int | None = None):
    from driftrag.facade import DriftRAG

    async with DriftRAG(settings) as rag:
        return await rag.query(kb, question, mode=mode, on_progress=on_progress, community_level=level)


async def _stream_answer(settings: Settings, kb: str, question: str, mode: str, status, level: int | None) -> object:
    """Print the final answer's text as it is written (stdout), progress on the status line (stderr)."""
    import sys

    from driftrag.facade import DriftRAG
    from driftrag.search.streaming import AnswerDelta, AnswerReset, ProgressEvent, QueryFinished

    result = None
    async with DriftRAG(settings) as rag:
        async for event in rag.stream(kb, question, mode=mode, community_level=level):
            if isinstance(event, ProgressEvent):
                status.update(f"{event.phase}: {event.message[:100]}")
            elif isinstance(event, AnswerDelta):
                status.stop()
                sys.stdout.write(event.text)
                sys.stdout.flush()
            elif isinstance(event, AnswerReset):
                # What was printed cannot be taken back: say so, and the answer starts again below.
                sys.stdout.write(f"\n\n[{event.reason}: the answer starts again]\n\n")
            elif isinstance(event, QueryFinished):
                result = event.result
    sys.stdout.write("\n")
    return result


def _print_tail(result) -> None:
    """Everything of the result but its answer, already printed while streamed."""
    from rich.markdown import Markdown

    console.print(Markdown(result.markdown(with_answer=False)))


def _print_result(result, as_json: bool) -> None:
    if as_json:
        # Plain JSON: the answer, intermediate answers (DRIFT) and every source with its id and text.
        typer.echo(result.model_dump_json(indent=2))
        return
    from rich.markdown import Markdown

    console.print(Markdown(result.markdown()))


@app.command(
    "query",
    examples=[
        'driftrag query "Who made the light fail?" --kb sample',
        'driftrag query "What are the main themes?" --kb alice --mode global --json',
    ],
)
def query_command(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    kb: KbOption,
    mode: Annotated[str, typer.Option("--mode", help=" | ".join(MODE_NAMES) + ".", callback=_valid_mode)] = "drift",
    level: Annotated[
        int | None,
        typer.Option(
            "--level",
            min=0,
            help="Global search: the community level to map over (0 = coarsest; default: "
            "DRIFTRAG_GLOBAL_COMMUNITY_LEVEL, else the finest level that fits the query budget).",
        ),
    ] = None,
    as_json: JsonOption = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream/--no-stream",
            help="Print the answer as it is written (text output only; --json always prints the whole result).",
        ),
    ] = True,
) -> None:
    """Answer a question from a knowledge base; prints the answer with its sources (and DRIFT's follow-up tree).

    The answer is printed as the model writes it (offline: statement by statement), then its sources."""
    settings = load_settings()
    streamed = stream and not as_json

    async def action():
        from driftrag.search.modes import get_mode
        from driftrag.search.options import QueryOptions
        from driftrag.search.question import check_question

        check_question(question, settings)  # before anything connects
        get_mode(mode).check_options(QueryOptions.of(community_level=level))
        with err_console.status(f"{mode} search…", spinner="dots") as status:
            if streamed:
                return await _stream_answer(settings, kb, question, mode, status, level)

            def progress(event) -> None:
                if not as_json:
                    status.update(f"{event.phase}: {event.message[:100]}")

            return await _answer(settings, kb, question, mode, progress, level)

    result = _arun(ctx, action)
    if streamed:
        _print_tail(result)
    else:
        _print_result(result, as_json)


DEMO_KB = "sample"
DEMO_QUESTION = (
    "Who made the light at Cinder Point Lighthouse fail, and why did Lady Maud Ferrers want the Lantern Charter "
    "to disappear?"
)


@app.command("demo", examples=["driftrag demo"])
def demo(
    ctx: typer.Context,
    question: Annotated[str, typer.Option("--question", help="The DRIFT question to ask.")] = DEMO_QUESTION,
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base to build.", callback=_valid_kb)] = DEMO_KB,
    as_json: JsonOption = False,
) -> None:
    """The main job: local Neo4j, ingest the bundled sample corpus, then a DRIFT answer with its sources."""
    from driftrag.corpora import DATA_DIR
    from driftrag.facade import DriftRAG

    settings = load_settings()

    async def action():
        async with DriftRAG(settings) as rag:
            err_console.print(f"{rag.providers.describe()}", highlight=False, soft_wrap=True)
            with err_console.status("ingesting the sample corpus…", spinner="dots") as status:
                ingested = await rag.ingest(
                    kb,
                    paths=[DATA_DIR / "sample"],
                    on_progress=lambda p: status.update(f"ingest {p.stage}: {p.done}/{p.total}"),
                )
            counts = ingested.counts
            err_console.print(
                f"kb {kb}: {counts.describe()}",
                highlight=False,
                soft_wrap=True,
            )
            with err_console.status("DRIFT search…", spinner="dots") as status:
                return await rag.drift(
                    kb, question, on_progress=lambda e: status.update(f"{e.phase}: {e.message[:100]}")
                )

    _print_result(_arun(ctx, action), as_json)
