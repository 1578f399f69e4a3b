"""What every `driftrag` command shares: the app, consoles, options, error handling.

Exit codes: 0 success, 1 a driftrag error (message printed, no traceback unless --debug),
2 bad usage, 3 backend unavailable (Neo4j unreachable), 5 the local Neo4j lacks a prerequisite
(java, mvn, or the Maven repository unreachable while the jars are not cached yet).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from driftrag.errors import BackendUnavailableError, DriftRAGError, MissingPrerequisiteError

if TYPE_CHECKING:
    from driftrag.models.extract_config import ExtractConfig

T = TypeVar("T")

app = typer.Typer(help="driftrag: GraphRAG on Neo4j with LlamaIndex Workflows.", no_args_is_help=True)

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
PortOption = Annotated[int | None, typer.Option(help="Bolt port (default: DRIFTRAG_NEO4J_PORT).")]


class _State:
    debug: bool = False


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    ctx.obj = _State()
    ctx.obj.debug = debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING)
    if not debug:
        # A lost Neo4j is reported once, as the command's error (exit 3); the driver's own multi-line
        # warnings about each defunct connection and retried transaction would repeat it many times.
        logging.getLogger("neo4j").setLevel(logging.CRITICAL)
        logging.getLogger("driftrag.store.health").setLevel(logging.ERROR)  # for servers; here the error says it


def _run(ctx: typer.Context, action: Callable[[], T]) -> T:
    """Run an action, turning driftrag errors into a message and a meaningful exit code."""
    try:
        return action()
    except DriftRAGError as exc:
        if ctx.obj is not None and ctx.obj.debug:
            raise
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(_exit_code(exc)) from None


def _exit_code(exc: DriftRAGError) -> int:
    if isinstance(exc, BackendUnavailableError):
        return 3
    if isinstance(exc, MissingPrerequisiteError):
        return 5
    return 1


def _arun(ctx: typer.Context, coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return _run(ctx, lambda: asyncio.run(coroutine()))


def _emit(model: BaseModel, as_json: bool, text: str) -> None:
    if as_json:
        console.print_json(model.model_dump_json())
    else:
        console.print(text, highlight=False)


def _valid_kb(kb: str) -> str:
    """Refuse a bad kb id before anything connects."""
    from driftrag.store import validate_kb_id

    try:
        return validate_kb_id(kb)
    except DriftRAGError as exc:
        raise typer.BadParameter(str(exc)) from None


def read_extract_config(path: Path) -> ExtractConfig:
    """A JSON extract-config file, or `InvalidExtractConfigError` in one line (read before anything connects)."""
    from driftrag.errors import InvalidExtractConfigError
    from driftrag.models.extract_config import MAX_FILE_BYTES, parse_extract_config

    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InvalidExtractConfigError(f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB")
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidExtractConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return parse_extract_config(data, str(path))


KbOption = Annotated[str, typer.Option("--kb", help="Knowledge base id (1-64 of A-Z a-z 0-9 _ -).", callback=_valid_kb)]
