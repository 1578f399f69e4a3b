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

from driftrag.ingestion import indexing
from driftrag.ingestion.incremental import can_update_incrementally
from driftrag.ingestion.requests import no_progress
from driftrag.store.graph import GraphStore
from tests.fakes.harbor_corpus import CORPUS, DescriptiveChatModel
from tests.integration.ingestion.conftest import Ingestor, texts_of

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
    }


@pytest.mark.parametrize("deleted", ["aliases.txt", "salt.txt", "monastery.txt"])
async def test_incremental_delete_equals_a_full_rebuild(ingestor: Ingestor, kb: str, deleted: str) -> None:
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

        await indexing.delete_document(deps, kb, documents[deleted], no_progress)
        await ingestor.graph.delete_document(full_kb, documents[deleted])
        await indexing.refresh_derived_layers(deps, full_kb, no_progress)

        incremental, full = await _derived(ingestor.graph, kb), await _derived(ingestor.graph, full_kb)
        assert incremental["entities"] != before["entities"]
        if deleted != "monastery.txt":  # these deletes change which names fold together
            assert {e["id"]: e["aliases"] for e in incremental["entities"] if e["aliases"]} != {
                e["id"]: e["aliases"] for e in before["entities"] if e["aliases"]
            }
        for part in ("entities", "relationships", "mentions", "communities", "counts"):
            assert incremental[part] == full[part], part
        assert not await ingestor.graph.is_stale(kb)
    finally:
        await ingestor.graph.delete_kb(full_kb)
        await ingestor.graph.delete_kb(kb)
