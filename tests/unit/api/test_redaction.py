"""A key sent in a URL never reaches the access log, however the client spelt the parameter."""

from __future__ import annotations

import logging

from driftrag.api.limits import accepts_query_key, query_keys
from driftrag.api.redaction import RedactQueryKeys, redact_url


def test_every_spelling_of_the_parameter_is_redacted() -> None:
    assert redact_url("/s?question=q&api_key=drk_a&mode=x") == "/s?question=q&api_key=[redacted]&mode=x"
    assert redact_url("/s?API_KEY=drk_a") == "/s?API_KEY=[redacted]"
    assert redact_url("/s?api%5Fkey=drk_a&api_key=drk_b") == "/s?api%5Fkey=[redacted]&api_key=[redacted]"
    assert redact_url("/s?my_api_key=keep&question=api_key=x") == "/s?my_api_key=keep&question=api_key=x"


def test_the_filter_rewrites_uvicorns_access_record() -> None:
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/api/v1/knowledge-bases/k/query/stream?api_key=drk_secret", "1.1", 200), None,
    )  # fmt: skip
    assert RedactQueryKeys().filter(record) is True
    assert "drk_secret" not in record.getMessage() and "api_key=[redacted]" in record.getMessage()


def test_the_server_reads_the_key_from_the_get_stream_only() -> None:
    assert query_keys(b"question=q&api_key=drk_a&api_key=drk_a") == {"drk_a"}
    assert query_keys(b"api%5Fkey=drk_a") == {"drk_a"}
    assert query_keys(b"api_key=&question=q") == set()
    assert accepts_query_key("GET", "/api/v1/knowledge-bases/alice/query/stream")
    assert not accepts_query_key("POST", "/api/v1/knowledge-bases/alice/query/stream")
    assert not accepts_query_key("GET", "/api/v1/knowledge-bases/alice/stats")
    assert not accepts_query_key("GET", "/api/v1/knowledge-bases/alice/query/stream/extra")
