"""Microsoft GraphRAG in and out, on the real Neo4j in offline mode: the committed GraphRAG 3.3.0 index of
the sample corpus (tests/fixtures/graphrag_sample) imported into a kb that every mode answers on, exported
again with GraphRAG's column names, and bad folders refused without touching any kb."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from driftrag.errors import DriftRAGError, InvalidIdentifierError, KnowledgeBaseNotFoundError
from driftrag.facade import DriftRAG
from driftrag.ingestion.merge import normalise_name
from driftrag.interop import graphrag as interop
from driftrag.interop.graphrag import GraphRAGExportError, GraphRAGInputError, export_graphrag, import_graphrag
from driftrag.models.vector_spaces import space_for
from driftrag.settings import Settings
from driftrag.views import render_mermaid
from tests.support.cli import run_cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "graphrag_sample" / "output"
FIXTURE_2X = FIXTURE.parents[1] / "graphrag_sample_2x" / "output"
TABLES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports")
# A Python with Microsoft GraphRAG installed (its own venv: `pip install graphrag==3.3.0`), for the test
# that reads an export with GraphRAG's own query-time readers; skipped without it.
GRAPHRAG_PYTHON = os.environ.get("DRIFTRAG_TEST_GRAPHRAG_PYTHON")
READ_WITH_GRAPHRAG = """
import sys, pandas as pd
from graphrag.query.indexer_adapters import (
    read_indexer_communities, read_indexer_entities, read_indexer_relationships, read_indexer_reports,
    read_indexer_text_units)
t = {n: pd.read_parquet(f"{sys.argv[1]}/{n}.parquet")
     for n in ("entities", "relationships", "communities", "community_reports", "text_units")}
print(len(read_indexer_entities(t["entities"], t["communities"], community_level=None)),
      len(read_indexer_relationships(t["relationships"])),
      len(read_indexer_communities(t["communities"], t["community_reports"])),
      len(read_indexer_reports(t["community_reports"], t["communities"], community_level=None)),
      len(read_indexer_text_units(t["text_units"])))
"""


def table(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(folder / f"{name}.parquet")


@pytest.fixture(scope="module")
async def rag(neo4j_settings: Settings) -> AsyncIterator[DriftRAG]:
    async with DriftRAG(neo4j_settings) as engine:
        yield engine


@pytest.fixture(scope="module")
async def imported(rag: DriftRAG) -> AsyncIterator[tuple[str, interop.GraphRAGImportResult]]:
    kb = f"test-grimport-{uuid.uuid4().hex[:8]}"
    result = await import_graphrag(rag, kb, FIXTURE)
    yield kb, result
    await rag.delete_kb(kb)


async def test_the_import_holds_every_table_row(rag: DriftRAG, imported) -> None:
    kb, result = imported
    assert result.tables == {name: len(table(FIXTURE, name)) for name in TABLES}
    entities, relationships = table(FIXTURE, "entities"), table(FIXTURE, "relationships")
    # GraphRAG keeps A→B and B→A as two rows of one undirected edge; driftrag's RELATED_TO has no direction.
    ends = zip(relationships.source, relationships.target, strict=True)
    pairs = {frozenset((normalise_name(source), normalise_name(target))) for source, target in ends}
    counts = await rag.stats(kb)
    assert (counts.documents, counts.chunks) == (4, len(table(FIXTURE, "text_units")))
    assert counts.entities == len({normalise_name(title) for title in entities.title}) == 33
    assert counts.relationships == len(pairs)
    assert counts.communities == len(table(FIXTURE, "communities")) == 7
    assert counts.reports == len(table(FIXTURE, "community_reports")) == 7
    assert result.counts == counts
    summary = next(s for s in await rag.knowledge_bases() if s.kb == kb)
    assert summary.mode == "graphrag" and not summary.stale
    assert summary.embedder == rag.ingestion_deps().profile.embedder
    # Its vectors are in its embedder's vector space, claimed as ingestion claims it.
    profile = rag.ingestion_deps().profile
    assert await rag.stores.database.vector_space(kb) == space_for(profile.embedder, profile.embedding_dimension)


async def test_sources_memberships_reports_and_vectors_are_the_ingested_kind(rag: DriftRAG, imported) -> None:
    kb, result = imported
    chunks = await rag.chunks(kb)
    assert all(c["embedded"] and c["extraction_status"] == "ok" for c in chunks)
    assert all(c["id"].startswith("chunk-") for c in chunks)
    # Every entity lists the chunks of GraphRAG's text units (names shown as the text spells them).
    fixture = table(FIXTURE, "entities")
    units = {normalise_name(t): len(ids) for t, ids in zip(fixture.title, fixture.text_unit_ids, strict=True)}
    stored = await rag.entities(kb)
    assert {normalise_name(e["name"]): len(e["source_chunk_ids"]) for e in stored} == units
    assert all(e["embedded"] and e["id"].startswith("entity-") for e in stored)
    names = {e["name"] for e in stored}
    assert {"Pip Rackham", "Silas Gorridge", "Captain Wren Halloway"} <= names
    assert {e["type"] for e in stored} <= {"PERSON", "GEO", "ORGANIZATION", "EVENT"}
    # The hierarchy: GraphRAG's parents, sizes and reports, level 0 the coarsest as in driftrag.
    communities = await rag.communities(kb)
    fixture_communities = table(FIXTURE, "communities")
    assert sorted(len(c["entity_ids"]) for c in communities) == sorted(fixture_communities["size"])
    assert sorted(c["level"] for c in communities) == sorted(fixture_communities.level)
    children = [c for c in communities if c["parent_id"]]
    assert len(children) == int((fixture_communities.parent >= 0).sum()) == 2
    assert all(c["linked_parent_id"] == c["parent_id"] for c in communities)
    reports = table(FIXTURE, "community_reports")
    assert sorted(c["title"] for c in communities) == sorted(reports.title)
    assert sorted(round(c["rating"], 3) for c in communities) == sorted(round(r, 3) for r in reports["rank"])
    assert all(c["findings"] and c["embedded"] for c in communities)
    assert result.vectors["chunk"].computed == 20 and result.vectors["chunk"].kept == 0
    # The fixture's vectors have 32 dimensions, the offline embedder 384: computed, and said so.
    assert any("32 dimensions" in warning for warning in result.warnings)


@pytest.mark.parametrize("mode", ["drift", "local", "basic", "entity", "global"])
async def test_every_mode_answers_on_the_imported_kb(rag: DriftRAG, imported, mode: str) -> None:
    kb, _ = imported
    result = await rag.query(kb, "Who is Silas Gorridge and what did he take?", mode=mode)
    sources = result.retrieved_sources()
    assert result.answer and sources and result.source_ids, mode
    assert any("Silas Gorridge" in source.text for source in sources), mode


async def test_graph_search_and_the_graph_views_read_the_imported_kb(rag: DriftRAG, imported) -> None:
    kb, _ = imported
    found = await rag.graph_search(kb, "Pip Rackham")
    assert [e.name for e in found.entities if e.is_seed] == ["Pip Rackham"]
    assert any("Pip Rackham" in (r.source_name, r.target_name) for r in found.relationships)
    view = await rag.graph_view(kb)
    assert len(view.entities) == 33 and view.relationships
    mermaid = render_mermaid(view)
    assert '["Pip Rackham"]' in mermaid
    community = next(c for c in await rag.communities(kb) if c["level"] == 1)
    assert (await rag.graph_view(kb, community_id=community["id"])).entities


async def test_an_export_has_graphrags_columns_and_imports_again(rag: DriftRAG, imported, tmp_path: Path) -> None:
    kb, _ = imported
    out = tmp_path / "export"
    written = await export_graphrag(rag, kb, out)
    counts = await rag.stats(kb)
    for name in TABLES:
        exported, original = table(out, name), table(FIXTURE, name)
        assert list(exported.columns) == list(original.columns), name
        # The arrow types GraphRAG's own tables have (large strings, lists, int64 numbers).
        ours, theirs = pq.read_schema(out / f"{name}.parquet"), pq.read_schema(FIXTURE / f"{name}.parquet")
        for field in theirs:
            if not pa.types.is_null(field.type) and not pa.types.is_list(field.type):
                assert ours.field(field.name).type == field.type, (name, field.name)
    assert written.tables["documents"] == len(table(out, "documents")) == counts.documents
    assert len(table(out, "text_units")) == counts.chunks
    assert len(table(out, "entities")) == counts.entities
    assert len(table(out, "relationships")) == counts.relationships
    assert len(table(out, "communities")) == counts.communities
    assert len(table(out, "community_reports")) == counts.reports
    for name in ("embeddings.text_unit_text", "embeddings.entity_description", "embeddings.community_full_content"):
        vectors = table(out, name)
        assert list(vectors.columns) == ["id", "embedding"] and len(vectors.embedding[0]) == 384
    # Documents are whole again (chunk overlaps kept once): the sample chapters as they were written.
    documents = table(out, "documents")
    originals = {p.name: p.read_text() for p in (FIXTURE.parents[3] / "data" / "sample").glob("*.md")}
    for title, text in zip(documents.title, documents.text, strict=True):
        assert text == originals[title.removesuffix(".txt") + ".md"], title
    # Relationships name entities by title, as GraphRAG's readers join them.
    entities = table(out, "entities")
    relationships = table(out, "relationships")
    assert set(relationships.source) | set(relationships.target) <= set(entities.title)
    # The export imports again, the same kb (vectors kept: the same embedder made them).
    again = f"test-grreimport-{uuid.uuid4().hex[:8]}"
    try:
        result = await import_graphrag(rag, again, out, embeddings="keep")
        assert await rag.stats(again) == counts
        assert result.vectors["chunk"].kept == counts.chunks and result.vectors["chunk"].computed == 0
        assert sorted(e["id"] for e in await rag.entities(again)) == sorted(e["id"] for e in await rag.entities(kb))
    finally:
        await rag.delete_kb(again)


@pytest.mark.skipif(GRAPHRAG_PYTHON is None, reason="DRIFTRAG_TEST_GRAPHRAG_PYTHON names no Python with graphrag")
async def test_graphrags_own_readers_load_an_export(rag: DriftRAG, imported, tmp_path: Path) -> None:
    kb, _ = imported
    await export_graphrag(rag, kb, tmp_path, vectors=False)
    command = [str(GRAPHRAG_PYTHON), "-c", READ_WITH_GRAPHRAG, str(tmp_path)]
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = await rag.stats(kb)
    expected = [counts.entities, counts.relationships, counts.communities, counts.reports, counts.chunks]
    assert [int(n) for n in done.stdout.split()] == expected


async def test_an_ingested_kb_exports_too(rag: DriftRAG, tmp_path: Path) -> None:
    kb = f"test-grexport-{uuid.uuid4().hex[:8]}"
    sample = FIXTURE.parents[3] / "data" / "sample"
    try:
        await rag.ingest(kb, paths=[sample])
        counts = await rag.stats(kb)
        written = await export_graphrag(rag, kb, tmp_path, vectors=False)
        assert written.tables == {
            "documents": counts.documents,
            "text_units": counts.chunks,
            "entities": counts.entities,
            "relationships": counts.relationships,
            "communities": counts.communities,
            "community_reports": counts.reports,
        }
        for name in TABLES:
            assert list(table(tmp_path, name).columns) == list(table(FIXTURE, name).columns), name
        assert not [name for name in written.tables if name.startswith("embeddings.")]
        reports = table(tmp_path, "community_reports")
        assert reports.full_content.str.len().min() > 0 and reports["rank"].between(0, 10).all()
        with pytest.raises(GraphRAGExportError, match="--overwrite"):
            await export_graphrag(rag, kb, tmp_path)
        assert (await export_graphrag(rag, kb, tmp_path, overwrite=True)).tables["text_units"] == counts.chunks
    finally:
        await rag.delete_kb(kb)


async def test_kept_vectors_are_graphrags_own(rag: DriftRAG, tmp_path: Path) -> None:
    # A copy of the fixture whose vector snapshots have the embedder's dimension (made by it, as a
    # GraphRAG index built with the same model would hold them).
    folder = tmp_path / "output"
    shutil.copytree(FIXTURE, folder)
    embedder = rag.providers.embedder
    for name, source, column in (
        ("embeddings.text_unit_text", "text_units", "text"),
        ("embeddings.entity_description", "entities", "description"),
        ("embeddings.community_full_content", "community_reports", "full_content"),
    ):
        rows = table(FIXTURE, source)
        vectors = await embedder.aget_text_embedding_batch(list(rows[column]))
        pd.DataFrame({"id": rows.id, "embedding": vectors}).to_parquet(folder / f"{name}.parquet")
    kb = f"test-grkeep-{uuid.uuid4().hex[:8]}"
    try:
        result = await import_graphrag(rag, kb, tmp_path)  # the project root: its output/ is found
        assert {kind: (v.kept, v.computed) for kind, v in result.vectors.items()} == {
            "chunk": (20, 0),
            "entity": (33, 0),
            "community": (7, 0),
        }
        answer = await rag.query(kb, "Who is Silas Gorridge?", mode="local")
        assert any("Silas Gorridge" in source.text for source in answer.retrieved_sources())
    finally:
        await rag.delete_kb(kb)


async def test_a_graphrag_2x_folder_imports_too(rag: DriftRAG) -> None:
    kb = f"test-gr2x-{uuid.uuid4().hex[:8]}"
    try:
        result = await import_graphrag(rag, kb, FIXTURE_2X)
        counts = await rag.stats(kb)
        entities = table(FIXTURE_2X, "entities")
        assert (counts.documents, counts.chunks) == (4, len(table(FIXTURE_2X, "text_units")))
        assert counts.entities == len({normalise_name(title) for title in entities.title})
        assert counts.communities == counts.reports == len(table(FIXTURE_2X, "community_reports")) == 8
        # Its 1536-dimensional vectors do not fit the 384-dimensional offline embedder: computed.
        assert all(v.kept == 0 and v.computed for v in result.vectors.values())
        for mode in ("drift", "local"):
            answer = await rag.query(kb, "Who is Silas Gorridge?", mode=mode)
            assert any("Silas Gorridge" in source.text for source in answer.retrieved_sources()), mode
    finally:
        await rag.delete_kb(kb)


async def test_an_imported_kb_takes_more_documents_and_deletes_like_an_ingested_one(rag: DriftRAG) -> None:
    # The extraction checkpoints of the imported chunks are what a rebuild merges with new chunks.
    kb = f"test-grgrow-{uuid.uuid4().hex[:8]}"
    try:
        await import_graphrag(rag, kb, FIXTURE)
        pip = next(e for e in await rag.entities(kb) if e["name"] == "Pip Rackham")
        await rag.ingest(kb, texts={"Postscript": "Years later Pip Rackham kept the Cinder Point Lighthouse lit."})
        counts = await rag.stats(kb)
        assert counts.documents == 5 and counts.chunks == 21 and counts.reports > 0
        grown = next(e for e in await rag.entities(kb) if e["id"] == pip["id"])
        assert len(grown["source_chunk_ids"]) == len(pip["source_chunk_ids"]) + 1
        assert not next(s for s in await rag.knowledge_bases() if s.kb == kb).stale
        first = next(d for d in await rag.documents(kb) if d["title"] == "01-the-dark-lamp.txt")
        after = await rag.delete_document(kb, first["id"])
        assert after.documents == 4 and after.chunks == 21 - first["n_chunks"]
        answer = await rag.query(kb, "Who kept the lighthouse lit?", mode="local")
        assert any("Years later" in source.text for source in answer.retrieved_sources())
    finally:
        await rag.delete_kb(kb)


async def test_bad_folders_are_refused_and_leave_every_kb_as_it_was(rag: DriftRAG, imported, tmp_path: Path) -> None:
    kb, _ = imported
    before = await rag.stats(kb)
    new = f"test-grbad-{uuid.uuid4().hex[:8]}"
    with pytest.raises(GraphRAGInputError, match="no such folder"):
        await import_graphrag(rag, new, tmp_path / "missing")
    partial = tmp_path / "partial"
    shutil.copytree(FIXTURE, partial)
    (partial / "relationships.parquet").unlink()
    with pytest.raises(GraphRAGInputError, match=r"missing relationships\.parquet"):
        await import_graphrag(rag, new, partial)
    (partial / "relationships.parquet").write_text("source,target\nA,B\n")
    with pytest.raises(GraphRAGInputError, match=r"relationships\.parquet is not a readable parquet table"):
        await import_graphrag(rag, new, partial)
    pd.DataFrame({"id": ["r1"], "source": ["A"]}).to_parquet(partial / "relationships.parquet")
    with pytest.raises(GraphRAGInputError, match=r"relationships\.parquet lacks the column\(s\) target"):
        await import_graphrag(rag, new, partial)
    with pytest.raises(InvalidIdentifierError):
        await import_graphrag(rag, "x'}) DETACH DELETE n //", FIXTURE)
    with pytest.raises(GraphRAGInputError, match="exists"):
        await import_graphrag(rag, kb, FIXTURE)
    with pytest.raises(GraphRAGInputError, match="32 dimensions"):
        await import_graphrag(rag, new, FIXTURE, embeddings="keep")
    with pytest.raises(KnowledgeBaseNotFoundError):
        await export_graphrag(rag, new, tmp_path / "nothing")
    assert new not in {s.kb for s in await rag.knowledge_bases()}
    assert await rag.stats(kb) == before


async def test_a_failure_while_writing_removes_the_new_kb(rag: DriftRAG, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args, **kwargs):
        raise DriftRAGError("the embedder fell over")

    monkeypatch.setattr(interop, "embed_changed", broken)
    kb = f"test-grfail-{uuid.uuid4().hex[:8]}"
    with pytest.raises(DriftRAGError, match="fell over"):
        await import_graphrag(rag, kb, FIXTURE)
    assert kb not in {s.kb for s in await rag.knowledge_bases()}
    assert (await rag.stats(kb)).chunks == 0
    assert kb not in await rag.stores.database.kb_vector_spaces()


def test_the_cli_imports_and_exports(neo4j_uri: str, tmp_path: Path) -> None:
    kb = f"test-grcli-{uuid.uuid4().hex[:8]}"
    done = run_cli("import", "graphrag", str(FIXTURE), "--kb", kb, "--json", uri=neo4j_uri, home=tmp_path, timeout=600)
    try:
        assert done.returncode == 0, done.stderr[-3000:]
        result = interop.GraphRAGImportResult.model_validate_json(done.stdout)
        assert result.counts.entities == 33 and result.counts.reports == 7
        out = tmp_path / "export"
        done = run_cli("export", "graphrag", str(out), "--kb", kb, uri=neo4j_uri, home=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "exported" in done.stdout and len(table(out, "entities")) == 33
        again = run_cli("import", "graphrag", str(FIXTURE), "--kb", kb, uri=neo4j_uri, home=tmp_path, timeout=600)
        assert again.returncode == 1 and "exists" in again.stderr
        missing = run_cli("import", "graphrag", str(tmp_path / "nope"), "--kb", "x", uri=neo4j_uri, home=tmp_path)
        assert missing.returncode == 1 and "no such folder" in missing.stderr
        hostile = run_cli("import", "graphrag", str(FIXTURE), "--kb", "a b;", uri=neo4j_uri, home=tmp_path)
        assert hostile.returncode == 2 and "invalid knowledge base id" in hostile.stderr
    finally:
        run_cli("delete", "--kb", kb, "--yes", uri=neo4j_uri, home=tmp_path, timeout=300)
