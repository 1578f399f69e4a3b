"""Reading Microsoft GraphRAG's tables and mapping them to driftrag's models, without Neo4j: the committed
GraphRAG 3.3.0 index of the sample corpus, and folders broken on purpose."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from driftrag.ingestion.merge import entity_id, normalise_name
from driftrag.interop.graphrag import (
    GraphRAGInputError,
    _display_name,
    _entity_type,
    join_chunks,
    plan_import,
    read_output_folder,
)
from driftrag.models.graph import TYPE_PATTERN

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "graphrag_sample" / "output"
FIXTURE_2X = FIXTURE.parents[1] / "graphrag_sample_2x" / "output"
SAMPLE = Path(__file__).resolve().parents[3] / "data" / "sample"


def test_every_table_of_the_fixture_is_read() -> None:
    index = read_output_folder(FIXTURE)
    counts = {name: len(getattr(index, name)) for name in ("documents", "text_units", "entities", "relationships")}
    assert counts == {"documents": 4, "text_units": 20, "entities": 33, "relationships": 57}
    assert (len(index.communities), len(index.community_reports)) == (7, 7)
    assert {kind: len(rows) for kind, rows in index.vectors.items()} == {"chunk": 20, "entity": 33, "community": 7}
    assert {len(row.embedding) for row in index.vectors["chunk"]} == {32}
    # The project root works too: its output/ holds the tables.
    assert read_output_folder(FIXTURE.parent).folder == str(FIXTURE)


def test_the_plan_has_driftrags_ids_and_graphrags_structure() -> None:
    index = read_output_folder(FIXTURE)
    plan = plan_import(index, "sample")
    chunks = [chunk for _, chunks in plan.documents for chunk in chunks]
    assert len(chunks) == 20 and all(c.id.startswith("chunk-") for c in chunks)
    assert [c.index for _, doc_chunks in plan.documents for c in doc_chunks][:2] == [0, 1]
    assert {d.title for d, _ in plan.documents} == {p.stem + ".txt" for p in SAMPLE.glob("*.md")}
    # One checkpoint per chunk; the merge of them is the entity layer.
    assert [o.chunk_id for o in plan.outcomes] == [c.id for c in chunks]
    assert plan.merged.total_chunks == 20
    names = {e.name for e in plan.merged.entities}
    assert "Pip Rackham" in names and "PIP RACKHAM" not in names
    assert all(e.id == entity_id(e.normalised_name) for e in plan.merged.entities)
    # Weights are GraphRAG's, summed over the rows of one undirected pair.
    rels = pd.read_parquet(FIXTURE / "relationships.parquet")
    assert sum(r.weight for r in plan.merged.relationships) == pytest.approx(rels.weight.sum())
    assert any("merged into it" in warning for warning in plan.warnings)
    # Communities: GraphRAG's levels and parents, members as driftrag's entity ids.
    by_id = {c.id: c for c in plan.communities}
    children = [c for c in plan.communities if c.parent_id]
    assert len(children) == 2 and all(by_id[c.parent_id].level == c.level - 1 for c in children)
    assert all(set(c.entity_ids) <= set(by_id[c.parent_id].entity_ids) for c in children)
    assert all(set(c.child_ids) == {k.id for k in children if k.parent_id == c.id} for c in plan.communities)
    known = {e.id for e in plan.merged.entities}
    assert all(set(c.entity_ids) <= known and c.chunk_ids and c.relationship_ids for c in plan.communities)
    assert set(plan.reports) == set(by_id) and all(0 <= r.rating <= 10 and r.findings for r in plan.reports.values())
    assert {kind: len(v) for kind, v in plan.vectors.items()} == {"chunk": 20, "entity": 33, "community": 7}


def test_names_types_and_document_texts() -> None:
    assert _display_name("PIP RACKHAM", ["Then Pip Rackham ran.", "PIP RACKHAM!", "pip rackham"]) in {
        "Pip Rackham",
        "pip rackham",
    }
    assert _display_name("PIP RACKHAM", ["Pip Rackham", "Pip Rackham", "pip rackham"]) == "Pip Rackham"
    assert _display_name("Mixed Case", ["mixed case"]) == "Mixed Case"  # not upper-cased: kept
    assert _display_name("NOWHERE", ["no match here"]) == "NOWHERE"
    assert _entity_type("geo") == "GEO" and _entity_type("event type!") == "EVENT_TYPE"
    assert _entity_type(None) == _entity_type("") == _entity_type("123") == "UNKNOWN"
    assert all(pd.Series([_entity_type(t) for t in ("PERSON", "a-b")]).str.fullmatch(TYPE_PATTERN))
    text = " ".join(f"lamp{i}" for i in range(60))  # not periodic: one overlap fits
    assert join_chunks([text[:200], text[150:300], text[280:]]) == text
    assert join_chunks(["one", "two"]) == "one\ntwo"  # no overlap: a line between
    assert join_chunks([]) == ""


def test_broken_folders_are_refused_with_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(GraphRAGInputError, match="no such folder"):
        read_output_folder(tmp_path / "missing")
    (tmp_path / "file.parquet").write_text("x")
    with pytest.raises(GraphRAGInputError, match="not a folder"):
        read_output_folder(tmp_path / "file.parquet")
    folder = tmp_path / "output"
    shutil.copytree(FIXTURE, folder)
    (folder / "communities.parquet").unlink()
    (folder / "entities.parquet").unlink()
    with pytest.raises(GraphRAGInputError, match=r"missing entities\.parquet, communities\.parquet"):
        read_output_folder(folder)
    shutil.copy(FIXTURE / "communities.parquet", folder)
    (folder / "entities.parquet").write_bytes(b"PAR1 but not really")
    with pytest.raises(GraphRAGInputError, match=r"entities\.parquet is not a readable parquet table"):
        read_output_folder(folder)
    pd.DataFrame({"id": ["e1"], "title": [""]}).to_parquet(folder / "entities.parquet")
    with pytest.raises(GraphRAGInputError, match=r"entities\.parquet row 0: title"):
        read_output_folder(folder)
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(FIXTURE / "documents.parquet", old / "create_final_documents.parquet")
    with pytest.raises(GraphRAGInputError, match=r"1\.x or older"):
        read_output_folder(old)


def test_a_hostile_kb_id_is_refused_before_anything_else() -> None:
    from driftrag.errors import InvalidIdentifierError

    with pytest.raises(InvalidIdentifierError):
        plan_import(read_output_folder(FIXTURE), "kb'}) DETACH DELETE n //")
    assert normalise_name("Pip Rackham") == normalise_name("PIP RACKHAM")


def test_without_pyarrow_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from driftrag.errors import DriftRAGError

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what `import pyarrow` sees when it is not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DriftRAGError, match=r"driftrag\[graphrag\]"):
        read_output_folder(FIXTURE)


def test_a_graphrag_2x_folder_reads_the_same_way() -> None:
    # 2.x: `text_units.document_ids` (a list), `embeddings.<table>.<column>` snapshots of 1536 dimensions.
    index = read_output_folder(FIXTURE_2X)
    plan = plan_import(index, "sample2")
    assert len(plan.documents) == 4 and sum(len(chunks) for _, chunks in plan.documents) == 20
    assert not [w for w in plan.warnings if "left out" in w]
    assert {kind: len(v) for kind, v in plan.vectors.items()} == {"chunk": 20, "entity": 32, "community": 8}
    assert {len(v) for v in plan.vectors["chunk"].values()} == {1536}
    assert len(plan.communities) == len(plan.reports) == 8
