"""Hostile GraphRAG tables are refused before anything is written, each refusal naming table, row and field:
numbers that are not finite or out of range, repeated ids, community parents that do not form a tree, and
titles larger than the store can index. Through the CLI too: exit 1, one line, no traceback, with `--json`."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from driftrag.interop.graphrag import GraphRAGInputError, read_output_folder
from tests.support.cli import run_cli_fail_fast

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "graphrag_sample" / "output"


def _broken(tmp_path: Path, table: str, change: Callable[[pd.DataFrame], None]) -> Path:
    """The fixture with one table changed, written in its own schema (and NaN kept as NaN: pandas would
    write it as a null)."""
    folder = tmp_path / "output"
    shutil.copytree(FIXTURE, folder)
    path = folder / f"{table}.parquet"
    schema = pq.read_schema(path)
    frame = pd.read_parquet(path)
    change(frame)
    pq.write_table(pa.Table.from_pylist(frame.to_dict("records"), schema=schema), path)
    return folder


def _set(row: int, column: str, value: object) -> Callable[[pd.DataFrame], None]:
    def change(frame: pd.DataFrame) -> None:
        frame.at[row, column] = value

    return change


def _children(row: int, children: list[int]) -> Callable[[pd.DataFrame], None]:
    def change(frame: pd.DataFrame) -> None:
        frame.at[row, "children"] = children

    return change


def _cycle(frame: pd.DataFrame) -> None:
    # Communities 5 and 6 (level 1, parent 1) made each other's parent.
    frame.at[5, "parent"] = 6
    frame.at[6, "parent"] = 5
    frame.at[1, "children"] = []


def _self_parent(frame: pd.DataFrame) -> None:
    frame.at[5, "parent"] = 5
    frame.at[1, "children"] = [6]


def _duplicate_id(frame: pd.DataFrame) -> None:
    frame.at[3, "id"] = frame.at[2, "id"]


HOSTILE = [
    ("relationships", _set(4, "weight", float("nan")), r"relationships\.parquet row 4: weight: .*finite"),
    ("relationships", _set(4, "weight", float("inf")), r"relationships\.parquet row 4: weight: .*finite"),
    ("relationships", _set(4, "weight", -3.0), r"relationships\.parquet row 4: weight: .*greater than or equal"),
    ("community_reports", _set(2, "rank", float("nan")), r"community_reports\.parquet row 2: rank: .*finite"),
    ("community_reports", _set(2, "rank", 1e300), r"community_reports\.parquet row 2: rank: .*less than or equal"),
    ("communities", _set(5, "level", 2**62), r"communities\.parquet row 5: level: .*less than or equal to 64"),
    ("communities", _cycle, r"communities\.parquet row 5: parent: a cycle of parents"),
    ("communities", _self_parent, r"communities\.parquet row 5: parent: the community is its own parent"),
    ("communities", _set(5, "parent", 42), r"communities\.parquet row 5: parent: 42 is no community"),
    ("communities", _set(5, "level", 2), r"communities\.parquet row 5: level: 2, but its parent 1 is at level 0"),
    ("communities", _set(0, "level", 1), r"communities\.parquet row 0: level: 1 without a parent"),
    ("communities", _children(0, [5]), r"communities\.parquet row 0: children: 5 names another parent"),
    ("communities", _set(3, "community", 2), r"communities\.parquet row 3: community: 2 repeats row 2's"),
    ("entities", _duplicate_id, r"entities\.parquet row 3: id: the id repeats row 2's"),
    ("entities", _set(0, "title", "T" * 10_000_000), r"entities\.parquet row 0: title: 10000000 bytes, above"),
    ("community_reports", _set(0, "level", 0), r"community_reports\.parquet row 0: level: 0, but community 5"),
]
IDS = [
    "nan-weight",
    "infinite-weight",
    "negative-weight",
    "nan-rank",
    "huge-rank",
    "level-2^62",
    "parent-cycle",
    "self-parent",
    "unknown-parent",
    "level-skips",
    "root-not-level-0",
    "foreign-child",
    "duplicate-community",
    "duplicate-entity-id",
    "10-MB-title",
    "report-level",
]


@pytest.mark.parametrize(("table", "change", "message"), HOSTILE, ids=IDS)
def test_a_hostile_table_is_refused_naming_table_row_and_field(
    tmp_path: Path, table: str, change: Callable[[pd.DataFrame], None], message: str
) -> None:
    folder = _broken(tmp_path, table, change)
    with pytest.raises(GraphRAGInputError, match=message):
        read_output_folder(folder)


def test_a_non_finite_vector_is_refused(tmp_path: Path) -> None:
    def change(frame: pd.DataFrame) -> None:
        vector = list(frame.at[0, "embedding"])
        vector[3] = float("nan")
        frame.at[0, "embedding"] = vector

    folder = _broken(tmp_path, "embeddings.text_unit_text", change)
    with pytest.raises(GraphRAGInputError, match=r"embeddings\.text_unit_text\.parquet row 0: embedding\.3: .*finite"):
        read_output_folder(folder)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(
    ("table", "change", "message"),
    [HOSTILE[0], HOSTILE[1], HOSTILE[6], HOSTILE[14]],
    ids=["nan-weight", "infinite-weight", "parent-cycle", "10-MB-title"],
)
def test_the_cli_refuses_with_exit_1_and_no_traceback(
    tmp_path: Path, table: str, change: Callable[[pd.DataFrame], None], message: str, as_json: bool
) -> None:
    folder = _broken(tmp_path, table, change)
    # Checked before Neo4j is reached: an address nothing listens on shows it never was.
    args = ["import", "graphrag", str(folder), "--kb", "hostile", *(["--json"] if as_json else [])]
    result = run_cli_fail_fast(*args, uri="bolt://127.0.0.1:9", home=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith("error:") and "nothing was written" in result.stderr
    assert re.search(message, " ".join(result.stderr.split())), result.stderr
