import os

import pytest
from pydantic import ValidationError

from driftrag.providers.tokens import get_encoding, tokenizer
from driftrag.providers.usage import Usage, UsageTracker


def test_tracker_counts_and_reports_a_delta() -> None:
    tracker = UsageTracker()
    tracker.record_chat(prompt_tokens=10, completion_tokens=3)
    before = tracker.snapshot()
    tracker.record_chat(prompt_tokens=5, completion_tokens=2)
    tracker.record_cache_hit()
    tracker.record_failure()
    tracker.record_embedding(texts=4, tokens=9)

    delta = tracker.since(before)

    assert delta == Usage(
        chat_calls=1,
        prompt_tokens=5,
        completion_tokens=2,
        cache_hits=1,
        failed_calls=1,
        embedding_requests=1,
        embedded_texts=4,
        embedding_tokens=9,
    )
    assert tracker.snapshot().total_tokens == 20
    assert before + delta == tracker.snapshot()


def test_snapshot_is_frozen_and_independent() -> None:
    tracker = UsageTracker()
    snap = tracker.snapshot()
    tracker.record_cache_hit()
    assert snap.cache_hits == 0
    with pytest.raises(ValidationError):
        snap.cache_hits = 3  # type: ignore[misc]


def test_tokenizer_works_offline_and_leaves_the_environment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    get_encoding.cache_clear()
    encode = tokenizer()
    assert encode("hello world") == [15339, 1917]
    assert "TIKTOKEN_CACHE_DIR" not in os.environ
