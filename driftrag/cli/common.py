"""What every `driftrag` command shares: the app, consoles, options, error handling.

Exit codes: 0 success, 1 a driftrag error (message printed, no traceback unless --debug),
2 bad usage, 3 backend unavailable (Neo4j unreachable), 4 `repair` left parts incomplete, 5 the local
Neo4j lacks a prerequisite (java, mvn, or the Maven repository unreachable while the jars are not cached yet).
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from driftrag.errors import BackendUnavailableError, DriftRAGError, MissingPrerequisiteError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from driftrag.models.extract_config import ExtractConfig
    from driftrag.settings import Settings

T = TypeVar("T")


class _DriftHelp:
    """How every driftrag command's `--help` reads.

    typer shows each parameter's Python type beside it (`<str>`, `<bool>`, `<list[Path]>`); the help of
    each parameter says what it takes, so the tags only cost width. And typer keeps the line breaks of
    a docstring's paragraphs, which break lines in the middle in an 80-column terminal: a paragraph is
    reflowed here unless it is indented (an example block)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _reflow(self.help)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        for param in self.get_params(ctx):
            param.display_type_rich = _no_type_tag
        super().format_help(ctx, formatter)


def _no_type_tag(ctx: Any = None) -> None:
    return None


def _reflow(text: str | None) -> str | None:
    if not text:
        return text
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(text))
    return "\n\n".join(
        paragraph if re.search(r"^\s", paragraph, re.MULTILINE) else " ".join(paragraph.split())
        for paragraph in paragraphs
    )


class Command(_DriftHelp, TyperCommand):
    pass


class Group(_DriftHelp, TyperGroup):
    pass


class DriftTyper(typer.Typer):
    """A typer app whose commands render their help as `_DriftHelp` says, each with its examples."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=Group, **kwargs)

    def command(self, name: str | None = None, *, examples: Sequence[str] = (), **kwargs: Any) -> Any:
        """`typer.Typer.command`, with `examples`: command lines shown at the end of the command's help."""
        epilog = None
        if examples:
            epilog = ("Examples:" if len(examples) > 1 else "Example:") + "".join(
                f"\n  $ {escape(example)}" for example in examples
            )
        return super().command(name, cls=Command, epilog=epilog, **kwargs)


app = DriftTyper(help="driftrag: GraphRAG on Neo4j with LlamaIndex Workflows.", no_args_is_help=True)

console = Console()
err_console = Console(stderr=True)


def load_settings() -> Settings:
    """The settings of this run (environment, `.env`), read when a command runs: `--help` never loads them."""
    from driftrag.settings import Settings

    return Settings()


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
PortOption = Annotated[int | None, typer.Option(help="Bolt port (default: DRIFTRAG_NEO4J_PORT).")]


class _State:
    debug: bool = False


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    from driftrag.cli import lean_imports

    lean_imports.install()
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
    import asyncio

    return _run(ctx, lambda: asyncio.run(coroutine()))


def _emit(model: BaseModel, as_json: bool, text: str) -> None:
    if as_json:
        console.print_json(model.model_dump_json())
    else:
        console.print(text, highlight=False, soft_wrap=True)


def _valid_kb(kb: str) -> str:
    """Refuse a bad kb id before anything connects."""
    from driftrag.models.identifiers import validate_kb_id

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
