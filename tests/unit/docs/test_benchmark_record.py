"""The benchmark table writer: each benchmark's one table in docs/benchmarks.md, replaced when it is re-run."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks import record as rec

MACHINE = rec.Machine(cores=2, ram_gib=23.4, load=(1.25, 0.5, 0.0))
WHEN = datetime(2026, 12, 4, 3, 40, tzinfo=UTC)
PAGE = """# Benchmarks

Intro text a person wrote.

## Warm start

<!-- bench:warm-start:start -->
old table
<!-- bench:warm-start:end -->

Text after the table, kept.

## Graph search

<!-- bench:graph-search:start -->
other table
<!-- bench:graph-search:end -->
"""


def block(rows: list[list[object]], **kwargs: object) -> str:
    return rec.table_block(
        ["figure", "value"],
        rows,
        when=WHEN,
        commit="abc1234",
        command="python benchmarks/x.py",
        machine=MACHINE,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_block_names_date_commit_command_machine_and_load() -> None:
    text = block([["warm start p50", "4.4 s"], ["RSS idle", "434 MiB"]], note="Medians of 3 runs.")
    first = text.splitlines()[0]
    assert "2026-12-04 03:40 UTC" in first and "`abc1234`" in first and "`python benchmarks/x.py`" in first
    assert "2 cores, 23.4 GiB RAM, load average 1.25 / 0.50 / 0.00" in first
    assert "| figure | value |" in text and "| warm start p50 | 4.4 s |" in text
    assert text.rstrip().endswith("Medians of 3 runs.")


def test_cells_cannot_break_the_table() -> None:
    text = block([["a | b", "two\nlines"]])
    assert "| a \\| b | two lines |" in text


def test_rows_must_fit_the_columns_and_a_table_is_not_empty() -> None:
    with pytest.raises(ValueError, match="2 columns"):
        block([["only one"]])
    with pytest.raises(ValueError, match="at least one row"):
        block([])


def test_replacing_a_table_leaves_the_rest_of_the_page_alone() -> None:
    new = rec.replace_table(PAGE, "warm-start", "Warm start", "NEW TABLE\n")
    assert "old table" not in new and "NEW TABLE" in new
    assert new.replace("NEW TABLE", "old table") == PAGE
    # A second run replaces the table it wrote: one current table per benchmark.
    again = rec.replace_table(new, "warm-start", "Warm start", "NEWER\n")
    assert again.count("<!-- bench:warm-start:start -->") == 1 and "NEW TABLE" not in again and "NEWER" in again


def test_a_benchmark_without_a_table_gets_a_section_at_the_end() -> None:
    new = rec.replace_table(PAGE, "stream-latency", "Streamed answers", "T\n")
    assert new.startswith(PAGE.rstrip("\n"))
    assert new.endswith(
        "## Streamed answers\n\n<!-- bench:stream-latency:start -->\nT\n<!-- bench:stream-latency:end -->\n"
    )


@pytest.mark.parametrize(
    "page",
    [
        "<!-- bench:x:end -->\n<!-- bench:x:start -->\n",
        "<!-- bench:x:start -->\nno end\n",
        "<!-- bench:x:start -->\n<!-- bench:x:end -->\n<!-- bench:x:start -->\n<!-- bench:x:end -->\n",
    ],
)
def test_broken_or_repeated_markers_are_refused(page: str) -> None:
    with pytest.raises(ValueError, match="'x'"):
        rec.replace_table(page, "x", "X", "T\n")


@pytest.mark.parametrize("name", ["", "Upper", "a b", "../x", "x-->", "a" * 65])
def test_names_are_checked_before_they_become_markers(name: str) -> None:
    with pytest.raises(ValueError, match="benchmark name"):
        rec.markers(name)


def test_record_rewrites_only_the_given_page(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(PAGE, encoding="utf-8")
    rec.record(
        "graph-search",
        "Graph search",
        ["q", "p50"],
        [["hubs", "76 ms"]],
        page=page,
        argv=[str(rec.REPO / "benchmarks" / "x.py"), "--runs", "3"],
    )
    text = page.read_text(encoding="utf-8")
    assert "other table" not in text and "| hubs | 76 ms |" in text and "old table" in text
    assert "`python benchmarks/x.py --runs 3`" in text
    assert re.search(r"Recorded \d{4}-\d\d-\d\d \d\d:\d\d UTC on commit `[0-9a-f]+( \+ changes)?`", text)
    assert [p.name for p in tmp_path.iterdir()] == ["benchmarks.md"]  # no temporary file left


def test_this_machine_reads_cores_ram_and_load() -> None:
    machine = rec.this_machine()
    assert machine.cores >= 1 and machine.ram_gib > 0.1 and len(machine.load) == 3


def test_the_committed_page_has_well_formed_markers() -> None:
    text = rec.PAGE.read_text(encoding="utf-8")
    names = re.findall(r"<!-- bench:([a-z0-9-]+):start -->", text)
    assert names, "docs/benchmarks.md has no recorded table"
    for name in names:
        rec.replace_table(text, name, name, "T\n")  # raises on a broken or repeated pair


def test_every_recording_script_has_its_table_on_the_page() -> None:
    """A script's `--record` writes into markers the page holds, and every table on the page has a writer."""
    text = rec.PAGE.read_text(encoding="utf-8")
    on_page = set(re.findall(r"<!-- bench:([a-z0-9-]+):start -->", text))
    scripts = {
        path.name: path.read_text(encoding="utf-8")
        for path in (rec.REPO / "benchmarks").glob("*.py")
        if "add_record_option(parser)" in path.read_text(encoding="utf-8")
    }
    assert len(scripts) >= 14, sorted(scripts)
    literals = {name: set(re.findall(r'"([a-z0-9][a-z0-9-]+)"', source)) for name, source in scripts.items()}
    for script, names in literals.items():
        assert names & on_page, f"{script} records no table that docs/benchmarks.md holds"
    written = set().union(*literals.values())
    # The Microsoft GraphRAG anchor was run outside this repository: its table is kept by hand.
    assert on_page - written == {"graphrag-anchor"}
