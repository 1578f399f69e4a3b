"""Deleting a document updates the entity layer incrementally, with the result of a full rebuild.

Two kbs get the same documents; one document is deleted from each, through `delete_document` (the
incremental update of what the deleted chunks touched) and through a delete followed by the full
rebuild from every checkpoint. Everything derived must be equal: entities, relationships, their
source chunks, weights, PMIs, descriptions, summaries, aliases, communities and reports. The corpus
has a one-word name that folds into a multi-word one ("Lantern") and one made ambiguous by a
document ("Reef" with "Grey Reef" and "Salt Reef"), so deletes change alias groups.
"""

from __future__ import annotations

import pytest

import driftrag.store.graph as graph_module
from driftrag.ingestion import indexing
from driftrag.ingestion.community_refresh import refresh_communities
from driftrag.ingestion.incremental import LayerChange, can_update_incrementally
from driftrag.ingestion.requests import no_progress
from driftrag.store.graph import GraphStore
from tests.fakes.harbor_corpus import CORPUS, DescriptiveChatModel
from tests.support.ingestion import Ingestor, texts_of
from tests.support.markers import assert_markers_true

# The scripted extraction takes capitalised spans of two or more words, so "The Lantern" gives the
# one-word key "lantern" (a leading article is dropped), which folds into "Amber Lantern"; "The Reef"
# stays apart while both "Grey Reef" and "Salt Reef" exist, and folds into "Grey Reef" without salt.txt.
EXTRA = {
    "aliases.txt": (
        "The Lantern left Harbor Town at dawn. The Reef was quiet beside the Grey Reef. "
        "Widow Brannoch said The Lantern needed paint."
    ),
    "salt.txt": "The Salt Reef lies north of Harbor Town. Jonas Pell charted The Reef and the Salt Reef twice.",
}


async def _derived(graph: GraphStore, kb: str) -> dict:
    layer = await graph.entity_layer(kb)
    communities = await graph.communities(kb)
    return {
        "entities": [e.model_dump() for e in layer.entities],
        "relationships": [r.model_dump() for r in layer.relationships],
        "mentions": sorted((row["id"], tuple(sorted(row["source_chunk_ids"]))) for row in await graph.entities(kb)),
        "communities": sorted(
            (c["id"], c["level"], c["parent_id"], tuple(c["entity_ids"]), c["title"], c["summary"]) for c in communities
        ),
        "counts": (await graph.counts(kb)).model_dump(),
        # Reports as stored (the JSON), the context hashes they were reused by, and the vectors' hashes.
        "community_state": sorted(
            (i, s.input_hash, s.output, s.embedding_hash, s.embedded)
            for i, s in (await graph.community_state(kb)).items()
        ),
        "entity_vectors": sorted((i, s.embedding_hash, s.embedded) for i, s in (await graph.entity_state(kb)).items()),
        "structures": sorted((await graph.community_structures(kb)).items()),
    }


_PARTS = (
    "entities",
    "relationships",
    "mentions",
    "communities",
    "counts",
    "community_state",
    "entity_vectors",
    "structures",
)


def _no_kb_wide_marker_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    async def walk(*args, **kwargs):
        raise AssertionError("the delete walked every entity and relationship of the kb for its markers")

    monkeypatch.setattr(graph_module, "refresh_search_markers", walk)


def _markers_checked_before_the_refresh(monkeypatch: pytest.MonkeyPatch, ingestor: Ingestor, checked: list) -> None:
    """Right after the chunks are deleted (before the derived layers are refreshed), every marker
    must already be true: graph search returns nothing sourced only from the deleted chunks."""
    refresh = indexing.refresh_derived_layers

    async def checking(deps, kb, progress, deleted=None):
        await assert_markers_true(ingestor.store, kb)
        checked.append(kb)
        await refresh(deps, kb, progress, deleted)

    monkeypatch.setattr(indexing, "refresh_derived_layers", checking)


@pytest.mark.parametrize("deleted", ["aliases.txt", "salt.txt", "monastery.txt"])
async def test_incremental_delete_equals_a_full_rebuild(
    ingestor: Ingestor, kb: str, deleted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = DescriptiveChatModel()
    deps = ingestor.deps(chat)
    assert can_update_incrementally(deps)
    full_kb = f"{kb}-full"
    texts = texts_of({**CORPUS, **EXTRA})
    try:
        for target in (kb, full_kb):
            await ingestor.run(target, chat, texts=texts)
        documents = {row["title"]: row["id"] for row in await ingestor.graph.documents(kb)}
        before = await _derived(ingestor.graph, kb)
        assert any(e["aliases"] for e in before["entities"])  # the corpus does fold aliases

        with monkeypatch.context() as patch:
            checked: list[str] = []
            _no_kb_wide_marker_walk(patch)
            _markers_checked_before_the_refresh(patch, ingestor, checked)
            await indexing.delete_document(deps, kb, documents[deleted], no_progress)
            assert checked == [kb]
        await ingestor.graph.delete_document(full_kb, documents[deleted])
        await indexing.refresh_derived_layers(deps, full_kb, no_progress)

        incremental, full = await _derived(ingestor.graph, kb), await _derived(ingestor.graph, full_kb)
        assert incremental["entities"] != before["entities"]
        if deleted != "monastery.txt":  # these deletes change which names fold together
            assert {e["id"]: e["aliases"] for e in incremental["entities"] if e["aliases"]} != {
                e["id"]: e["aliases"] for e in before["entities"] if e["aliases"]
            }
        for part in _PARTS:
            assert incremental[part] == full[part], part
        assert all(hash_ for _, hash_ in incremental["structures"])  # the next delete can keep them
        assert not await ingestor.graph.is_stale(kb)
        await assert_markers_true(ingestor.store, kb)
    finally:
        await ingestor.graph.delete_kb(full_kb)
        await ingestor.graph.delete_kb(kb)


async def test_a_delete_after_a_stop_past_the_entity_layer_is_still_incremental(
    ingestor: Ingestor, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped after the incremental entity layer was written (communities still stale) leaves
    the kb stale but its entity layer current: the next delete updates it incrementally again (no
    full rebuild) and reports every community again, and still equals a full rebuild."""
    chat = DescriptiveChatModel()
    deps = ingestor.deps(chat)
    full_kb = f"{kb}-full"
    texts = texts_of({**CORPUS, **EXTRA})
    try:
        for target in (kb, full_kb):
            await ingestor.run(target, chat, texts=texts)
        documents = {row["title"]: row["id"] for row in await ingestor.graph.documents(kb)}
        await ingestor.graph.mark_stale(kb, True)
        assert await ingestor.graph.is_entity_layer_stale(kb)
        await ingestor.graph.mark_entity_layer_current(kb)
        assert await ingestor.graph.is_stale(kb) and not await ingestor.graph.is_entity_layer_stale(kb)

        async def no_full_rebuild(*args, **kwargs):
            raise AssertionError("a full rebuild of the entity layer")

        with monkeypatch.context() as patch:
            patch.setattr(indexing, "derive_entity_layer", no_full_rebuild)
            await indexing.delete_document(deps, kb, documents["salt.txt"], no_progress)
        await ingestor.graph.delete_document(full_kb, documents["salt.txt"])
        await indexing.refresh_derived_layers(deps, full_kb, no_progress)

        incremental, full = await _derived(ingestor.graph, kb), await _derived(ingestor.graph, full_kb)
        for part in _PARTS:
            assert incremental[part] == full[part], part
        assert not await ingestor.graph.is_stale(kb) and not await ingestor.graph.is_entity_layer_stale(kb)
    finally:
        await ingestor.graph.delete_kb(full_kb)
        await ingestor.graph.delete_kb(kb)


async def test_a_kb_whose_entity_layer_is_stale_is_rebuilt_in_full(
    ingestor: Ingestor, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = DescriptiveChatModel()
    deps = ingestor.deps(chat)
    try:
        await ingestor.run(kb, chat, texts=texts_of({**CORPUS, **EXTRA}))
        documents = {row["title"]: row["id"] for row in await ingestor.graph.documents(kb)}
        await ingestor.graph.mark_stale(kb, True)  # e.g. a run killed after its chunks changed
        rebuilt = []
        derive = indexing.derive_entity_layer

        async def counting(*args, **kwargs):
            rebuilt.append(True)
            return await derive(*args, **kwargs)

        monkeypatch.setattr(indexing, "derive_entity_layer", counting)
        await indexing.delete_document(deps, kb, documents["salt.txt"], no_progress)
        assert rebuilt == [True]
        assert not await ingestor.graph.is_stale(kb)
        await assert_markers_true(ingestor.store, kb)
    finally:
        await ingestor.graph.delete_kb(kb)


async def test_the_community_refresh_reports_again_only_what_a_change_touches(ingestor: Ingestor, kb: str) -> None:
    """With the kb's communities current, nothing changed reports nothing again; a change of one
    entity reports the communities listing it and their ancestors; `keep_unchanged=False` all. The
    stored communities and reports stay those of the ingestion throughout."""
    chat = DescriptiveChatModel()
    settings = ingestor.settings.model_copy(update={"max_cluster_size": 3})  # a hierarchy of levels
    deps = ingestor.deps(chat, settings)
    try:
        await ingestor.run(kb, chat, texts=texts_of({**CORPUS, **EXTRA}), settings=settings)
        before = await _derived(ingestor.graph, kb)
        communities = await ingestor.graph.communities(kb)
        assert len(communities) > 3 and any(c["parent_id"] for c in communities)

        nothing = LayerChange(
            entities=[], relationship_ids=set(), removed_entity_ids=set(), removed_relationship_ids=set()
        )
        kept = await refresh_communities(deps, kb, nothing, no_progress)
        assert (kept.communities, kept.reported, kept.generated) == (len(communities), 0, 0)

        finest = max(communities, key=lambda c: (c["level"], c["id"]))
        member = finest["entity_ids"][0]
        listing = {c["id"] for c in communities if member in c["entity_ids"]}
        by_id = {c["id"]: c for c in communities}
        assert all(by_id[c]["parent_id"] is None or by_id[c]["parent_id"] in listing for c in listing)
        one = LayerChange(
            entities=[], relationship_ids=set(), removed_entity_ids={member}, removed_relationship_ids=set()
        )
        touched = await refresh_communities(deps, kb, one, no_progress, batch_members=3)
        # Reported again, each context is unchanged (nothing was written): every report is reused.
        assert (touched.reported, touched.generated) == (len(listing), 0)

        everything = await refresh_communities(deps, kb, nothing, no_progress, keep_unchanged=False, batch_members=3)
        assert (everything.reported, everything.generated) == (len(communities), 0)
        assert await _derived(ingestor.graph, kb) == before
    finally:
        await ingestor.graph.delete_kb(kb)
