"""Managing a knowledge base over HTTP: ingest, stats, chunk and graph switches, deletes."""

from __future__ import annotations

import uuid

import httpx

from tests.support.api import TEXTS
from tests.support.jobs import wait_for


def test_a_knowledge_base_lifecycle(admin: httpx.Client) -> None:
    kb = f"test-api-manage-{uuid.uuid4().hex[:8]}"
    texts = TEXTS

    ingested = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": texts})
    try:
        assert ingested.status_code == 202, ingested.text
        job = wait_for(admin, kb, ingested.json()["id"])
        assert job["kb"] == kb and job["state"] == "succeeded"
        body = job["result"]
        assert body["failed_chunks"] == []
        assert body["counts"]["documents"] == 2 and body["counts"]["entities"] > 0
        assert {doc["status"] for doc in body["documents"]} == {"new"}

        again = admin.post(f"/knowledge-bases/{kb}/documents", json={"texts": texts[:1]})
        assert again.status_code == 202
        assert wait_for(admin, kb, again.json()["id"])["result"]["documents"][0]["status"] == "unchanged"

        stats = admin.get(f"/knowledge-bases/{kb}/stats").json()
        assert stats["graph_enabled"] is True and stats["counts"] == body["counts"]

        # Disabling every chunk leaves the entities without a valid source: graph search omits them.
        search = admin.post(f"/knowledge-bases/{kb}/graph-search", json={"query": "Captain Mara Vell"}).json()
        chunk_ids = sorted({cid for entity in search["entities"] for cid in entity["source_chunk_ids"]})
        assert chunk_ids
        disabled = admin.post(f"/knowledge-bases/{kb}/chunks/disable", json={"chunk_ids": [*chunk_ids, "chunk-nope"]})
        assert disabled.json() == {
            "kb": kb,
            "enabled": False,
            "requested": len(chunk_ids) + 1,
            "matched": len(chunk_ids),
        }
        hidden = admin.post(f"/knowledge-bases/{kb}/graph-search", json={"query": "Captain Mara Vell"}).json()
        assert "Captain Mara Vell" not in {entity["name"] for entity in hidden["entities"]}
        enabled = admin.post(f"/knowledge-bases/{kb}/chunks/enable", json={"chunk_ids": chunk_ids})
        assert enabled.json()["matched"] == len(chunk_ids)
        back = admin.post(f"/knowledge-bases/{kb}/graph-search", json={"query": "Captain Mara Vell"}).json()
        assert back["entities"][0]["name"] == "Captain Mara Vell"

        document_id = body["documents"][1]["document_id"]
        missing = admin.delete(f"/knowledge-bases/{kb}/documents/document-0000")
        assert missing.status_code == 404 and missing.json()["code"] == "document_not_found"
        deleted = admin.delete(f"/knowledge-bases/{kb}/documents/{document_id}")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["counts"]["documents"] == 1
    finally:
        removed = admin.delete(f"/knowledge-bases/{kb}")
    assert removed.status_code == 200 and removed.json() == {"kb": kb, "deleted": True}
    assert admin.get(f"/knowledge-bases/{kb}/stats").status_code == 404
