"""Write a benchmark's figures as its one current table in docs/benchmarks.md.

A benchmark script run with `--record` calls `record(...)` with its figures: the table between that
benchmark's markers (`<!-- bench:<name>:start -->` … `<!-- bench:<name>:end -->`) is replaced by a new
one, headed by when, on which commit, with which command, on which machine (cores, RAM) and at which
load average it was measured. A benchmark without markers yet gets a section of its own at the end of
the page. Without `--record` a script only prints. The history of a table is the page's git history.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "benchmarks.md"
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


@dataclass(frozen=True)
class Machine:
    """Where and when a table was measured."""

    cores: int
    ram_gib: float
    load: tuple[float, float, float]

    def describe(self) -> str:
        load = " / ".join(f"{value:.2f}" for value in self.load)
        return f"{self.cores} cores, {self.ram_gib:.1f} GiB RAM, load average {load} (1 / 5 / 15 min)"


def this_machine() -> Machine:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return Machine(cores=cores, ram_gib=_ram_bytes() / 2**30, load=os.getloadavg())


def _ram_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def current_commit(repo: Path = REPO) -> str:
    """The short commit of `repo`, `+ changes` when tracked files differ from it; `unknown` outside git."""
    try:
        commit = _git(repo, "rev-parse", "--short", "HEAD")
        dirty = _git(repo, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit} + changes" if dirty else commit


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.strip()


def current_command(argv: Sequence[str] | None = None) -> str:
    """The command line that ran this benchmark, the script as a path inside the repository."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0])
    if script.is_absolute() and script.is_relative_to(REPO):
        script = script.relative_to(REPO)
    return shlex.join(["python", str(script), *argv[1:]])


def markers(name: str) -> tuple[str, str]:
    if not NAME.match(name):
        raise ValueError(f"benchmark name {name!r}: use 1-64 of a-z 0-9 -")
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table_block(
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    when: datetime,
    commit: str,
    command: str,
    machine: Machine,
    note: str = "",
) -> str:
    """The Markdown of one recorded table: its provenance line, the table, an optional note."""
    if not columns or not rows:
        raise ValueError("a recorded table needs columns and at least one row")
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"row {list(row)!r} has {len(row)} cells for {len(columns)} columns")
    lines = [
        f"Recorded {when.astimezone(UTC):%Y-%m-%d %H:%M} UTC on commit `{commit}` with `{command}`; "
        f"{machine.describe()}.",
        "",
        "| " + " | ".join(_cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows),
    ]
    if note:
        lines += ["", note.strip()]
    return "\n".join(lines) + "\n"


def replace_table(text: str, name: str, title: str, block: str) -> str:
    """`text` with benchmark `name`'s block replaced by `block`, or a new `## title` section appended."""
    start, end = markers(name)
    if text.count(start) > 1 or text.count(end) > 1:
        raise ValueError(f"{PAGE.name} holds the markers of {name!r} more than once")
    begin, finish = text.find(start), text.find(end)
    if begin < 0 and finish < 0:
        return text.rstrip("\n") + f"\n\n## {title}\n\n{start}\n{block.rstrip()}\n{end}\n"
    if begin < 0 or finish < begin:
        raise ValueError(f"the markers of {name!r} in {PAGE.name} are broken: {start} must come before {end}")
    return text[: begin + len(start)] + "\n" + block.rstrip("\n") + "\n" + text[finish:]


def record(
    name: str,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    note: str = "",
    page: Path = PAGE,
    argv: Sequence[str] | None = None,
) -> Path:
    """Replace benchmark `name`'s table in `page` with these figures, measured now on this machine."""
    block = table_block(
        columns,
        rows,
        when=datetime.now(UTC),
        commit=current_commit(),
        command=current_command(argv),
        machine=this_machine(),
        note=note,
    )
    text = page.read_text(encoding="utf-8") if page.exists() else "# Benchmarks\n"
    updated = replace_table(text, name, title, block)
    # Written whole, then renamed: a benchmark killed here leaves the page as it was.
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=page.parent, delete=False, suffix=".tmp") as out:
        out.write(updated)
    Path(out.name).replace(page)
    print(f"recorded the {title!r} table in {page}")
    return page


def add_record_option(parser: argparse.ArgumentParser) -> None:
    """The `--record` flag every benchmark script takes."""
    parser.add_argument(
        "--record",
        action="store_true",
        help=f"Replace this benchmark's table in {PAGE.relative_to(REPO)} with the figures of this run.",
    )
