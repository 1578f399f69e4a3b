"""A kb as other Neo4j tools see it: entity types as labels, entity names in a full-text index, relationship
ids checked unique per kb; and a delete that leaves nothing of the kb behind."""

from __future__ import annotations

import pytest
from neo4j.exceptions import ConstraintError

from driftrag.facade import DriftRAG
from driftrag.providers import Providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from tests.fakes.harbor_corpus import CORPUS, DescriptiveChatModel

EVERYTHING_OF_KB = "MATCH (n) WHERE n.kb = $kb RETURN labels(n)[0] AS label, count(*) AS n ORDER BY label"


async def test_entity_types_are_labels_and_a_delete_leaves_nothing(
    ingest_settings: Settings, providers: Providers, store: Neo4jStore, kb: str
) -> None:
    async with DriftRAG(ingest_settings, providers=providers, chat=DescriptiveChatModel()) as rag:
        await rag.ingest(kb, texts=dict(CORPUS))
        entities = await rag.entities(kb)
        assert entities
        rows = await store.read(
            "MATCH (e:__Entity__ {kb: $kb}) RETURN e.type AS type, [l IN labels(e) WHERE l <> '__Entity__'] AS labels",
            kb=kb,
        )
        assert all(row["labels"] == [row["type"]] for row in rows), rows
        name = entities[0]["name"].split()[0]
        hits = await store.read(
            "CALL db.index.fulltext.queryNodes('driftrag_entity_name', $words) YIELD node "
            "WHERE node.kb = $kb RETURN node.name AS name",
            words=f'name:"{name}"',
            kb=kb,
        )
        assert any(name in hit["name"] for hit in hits)
        with pytest.raises(ConstraintError):  # a second relationship with the same id in the kb
            await store.write(
                "MATCH (a:__Entity__ {kb: $kb}), (b:__Entity__ {kb: $kb}) WITH a, b LIMIT 1 "
                "MATCH ()-[r:RELATED {kb: $kb}]->() WITH a, b, r LIMIT 1 "
                "CREATE (a)-[:RELATED {kb: $kb, id: r.id}]->(b)",
                kb=kb,
            )

        labels = {row["label"] for row in await store.read(EVERYTHING_OF_KB, kb=kb)}
        assert {"__Chunk__", "__Entity__", "__KbLock__"} <= labels
        await rag.delete_kb(kb)
    assert await store.read(EVERYTHING_OF_KB, kb=kb) == []
