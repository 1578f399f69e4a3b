"""`POST …/query/stream` over real uvicorn: Server-Sent Events of progress, the answer's deltas and the
final result, which equals what `POST …/query` answers; errors before the stream keep their statuses."""

from __future__ import annotations

import httpx
import pytest

from driftrag.api.models import QueryResponse
from driftrag.search.modes import MODE_NAMES
from tests.support.sse import read_events

QUESTION = "Who repaired the lamp of the Glass Lighthouse?"


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_the_stream_sends_progress_then_the_answer_then_the_result(
    reader: httpx.Client, corpus_kb: str, mode: str
) -> None:
    response, events = read_events(reader, corpus_kb, {"question": QUESTION, "mode": mode})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _, _ in events]
    assert names[0] == "progress" and names[-1] == "result" and names.count("result") == 1
    assert "error" not in names and "delta" in names
    assert names.index("progress") < names.index("delta")
    # Offline, the extractive answer arrives statement by statement: several deltas.
    deltas = [data["text"] for name, data, _ in events if name == "delta"]
    assert len(deltas) >= 2
    streamed = QueryResponse.model_validate(events[-1][1])
    assert "".join(deltas) == streamed.answer and streamed.extractive
    plain = QueryResponse.model_validate(
        reader.post(f"/knowledge-bases/{corpus_kb}/query", json={"question": QUESTION, "mode": mode}).json()
    )
    assert (streamed.answer, streamed.cited_source_ids) == (plain.answer, plain.cited_source_ids)
    assert {s.id for s in streamed.sources} == {s.id for s in plain.sources}


def test_errors_before_the_stream_keep_their_statuses(reader: httpx.Client, make_client, server, keys) -> None:
    response, _ = read_events(reader, "no-such-kb", {"question": QUESTION, "mode": "basic"})
    assert response.status_code == 403  # the reader key is limited to the corpus kb
    admin = make_client(server, keys.manage_all)
    for mode in ("basic", "drift"):
        response, _ = read_events(admin, "no-such-kb", {"question": QUESTION, "mode": mode})
        assert response.status_code == 404 and response.json()["code"] == "kb_not_found"
    response, _ = read_events(admin, "no-such-kb", {"question": " ", "mode": "basic"})
    assert response.status_code == 422
    anonymous = make_client(server)
    response, _ = read_events(anonymous, "no-such-kb", {"question": QUESTION})
    assert response.status_code == 401
