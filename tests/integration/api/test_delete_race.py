"""A kb deleted while it is read, on the real uvicorn server over the test Neo4j: every read (local and DRIFT
queries, graph search, stats) answers either what it answered before the delete, whole, or 404
`kb_not_found`; never a 200 with an empty or partial answer. And the kb's lock nodes go with it."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from driftrag.api.server import BackgroundServer
from driftrag.errors import KnowledgeBaseDeletingError
from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import InputError
from driftrag.settings import Settings
from tests.support.api import CORPUS, Keys

# Copies of the corpus under other titles: the delete takes long enough for reads to land inside it.
COPIES = 12
QUESTION = "Who kept the Glass Lighthouse?"
READS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "local": ("query", {"question": QUESTION, "mode": "local"}),
    "drift": ("query", {"question": QUESTION, "mode": "drift"}),
    "graph search": ("graph-search", {"query": "Captain"}),
    "stats": ("stats", None),
}


def _essence(name: str, body: dict[str, Any]) -> Any:
    """What must equal the answer before the delete: the whole answer, less what varies between runs."""
    if READS[name][0] == "query":
        return body["answer"], sorted(s["id"] for s in body["sources"]), body["cited_source_ids"]
    return body


def _read(client: httpx.Client, kb: str, name: str) -> httpx.Response:
    route, body = READS[name]
    if body is None:
        return client.get(f"/knowledge-bases/{kb}/{route}")
    return client.post(f"/knowledge-bases/{kb}/{route}", json=body)


async def _lock_nodes(rag: DriftRAG, kb: str) -> int:
    rows = await rag.stores.database.read(
        "MATCH (n) WHERE (n:__KbLock__ OR n:__KbLease__ OR n:__KbWaiter__) AND n.kb = $kb RETURN count(n) AS n",
        kb=kb,
    )
    return rows[0]["n"]


def _race(
    server: BackgroundServer, keys: Keys, make_client: Callable[..., httpx.Client], kb: str, expected: dict[str, Any]
) -> tuple[httpx.Response, float, Counter[tuple[str, int, bool]], list[tuple[str, int, str]], Counter[str]]:
    """Two readers per kind of read in a loop, a delete among them; each reader stops after two reads
    started once the delete had answered. Returns the delete's response and time, the reads' outcomes
    (read, status, started after the delete), the answers that were wrong and, per read, the 404s that
    said the kb is being deleted."""
    deleted = threading.Event()
    outcomes: Counter[tuple[str, int, bool]] = Counter()
    wrong: list[tuple[str, int, str]] = []
    marked: Counter[str] = Counter()  # 404s that came from the mark (before the kb node went)

    def hammer(name: str) -> None:
        client = make_client(server, keys.manage_all)
        after_delete = 0
        while after_delete < 2:  # until two reads that started after the delete answered
            started_after = deleted.is_set()
            response = _read(client, kb, name)
            outcomes[(name, response.status_code, started_after)] += 1
            if response.status_code == 200:
                if _essence(name, response.json()) != expected[name]:
                    wrong.append((name, 200, response.text[:300]))
            elif response.status_code != 404 or response.json()["code"] != "kb_not_found":
                wrong.append((name, response.status_code, response.text[:300]))
            elif "being deleted" in response.json()["detail"]:
                marked[name] += 1
            after_delete += started_after

    with ThreadPoolExecutor(max_workers=2 * len(READS)) as pool:
        readers = [pool.submit(hammer, name) for name in READS for _ in range(2)]
        time.sleep(0.5)  # the readers are under way
        started = time.monotonic()
        response = make_client(server, keys.manage_all).delete(f"/knowledge-bases/{kb}")
        seconds = time.monotonic() - started
        deleted.set()
        for reader in readers:
            reader.result()
    return response, seconds, outcomes, wrong, marked


async def test_reads_racing_a_delete_answer_whole_or_kb_not_found(
    api_settings: Settings, server: BackgroundServer, keys: Keys, make_client: Callable[..., httpx.Client]
) -> None:
    kb = f"test-delete-race-{uuid.uuid4().hex[:8]}"
    texts = {f"{title} {copy}": text for copy in range(COPIES) for title, text in CORPUS.items()}
    async with DriftRAG(api_settings) as rag:
        await rag.ingest(kb, texts=texts)
        assert await _lock_nodes(rag, kb) > 0  # the ingestion's lock node, released but kept while the kb lives
    admin = make_client(server, keys.manage_all)
    expected = {}
    for name in READS:
        response = _read(admin, kb, name)
        assert response.status_code == 200, response.text
        expected[name] = _essence(name, response.json())
    assert expected["local"][1] and expected["drift"][1], "the queries answer from sources"
    assert expected["graph search"]["entities"], "graph search finds the seeds"

    response, seconds, outcomes, wrong, marked = await asyncio.to_thread(_race, server, keys, make_client, kb, expected)
    assert response.status_code == 200, response.text
    assert wrong == [], wrong
    during = sum(count for (_, status, after), count in outcomes.items() if status == 404 and not after)
    assert during > 0, f"some read landed inside the {seconds:.1f} s delete and was refused: {outcomes}"
    assert all(status == 404 for (_, status, after) in outcomes if after), outcomes
    assert sum(marked.values()) > 0, f"some read was refused by the delete's mark: {outcomes}"
    async with DriftRAG(api_settings) as rag:
        assert await _lock_nodes(rag, kb) == 0, "the kb's lock and leases went with it"
        assert kb not in {summary.kb for summary in await rag.knowledge_bases()}


async def test_an_interrupted_delete_is_listed_refused_to_readers_and_finished_by_the_next(
    api_settings: Settings, server: BackgroundServer, keys: Keys, make_client: Callable[..., httpx.Client]
) -> None:
    kb = f"test-delete-crash-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(api_settings) as rag:
        await rag.ingest(kb, texts=CORPUS)
        # A delete killed after its first write: the mark is set, nothing is deleted yet.
        assert await rag.stores.kbs.mark_deleting(kb)
        listed = {summary.kb: summary for summary in await rag.knowledge_bases()}
        assert listed[kb].deleting
    admin = make_client(server, keys.manage_all)
    for name in READS:
        response = _read(admin, kb, name)
        assert (response.status_code, response.json()["code"]) == (404, "kb_not_found"), response.text
        assert "interrupted" in response.json()["detail"]
    async with DriftRAG(api_settings) as rag:
        with pytest.raises(KnowledgeBaseDeletingError, match="half-deleted"):  # not written into
            await rag.ingest(kb, texts=CORPUS)
    assert admin.delete(f"/knowledge-bases/{kb}").status_code == 200
    assert admin.get(f"/knowledge-bases/{kb}/stats").status_code == 404
    async with DriftRAG(api_settings) as rag:
        assert kb not in {summary.kb for summary in await rag.knowledge_bases()}
        assert await _lock_nodes(rag, kb) == 0


async def test_a_refused_ingestion_leaves_no_lock_nodes(api_settings: Settings, tmp_path: Path) -> None:
    kb = f"test-refused-{uuid.uuid4().hex[:8]}"
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    async with DriftRAG(api_settings) as rag:
        with pytest.raises(InputError):  # nothing is written
            await rag.ingest(kb, paths=[binary])
        assert kb not in {summary.kb for summary in await rag.knowledge_bases()}
        assert await _lock_nodes(rag, kb) == 0
