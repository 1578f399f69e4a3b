"""Statement parameters reach the driver without their lists formatted for its debug log, unless it is on."""

from __future__ import annotations

import logging

import pytest

from driftrag.store.neo4j_store import _unformatted

ROWS = [{"id": f"entity-{i}", "embedding": [0.125] * 384} for i in range(1000)]


def test_lists_keep_their_items_and_format_as_their_length() -> None:
    params = _unformatted({"kb": "research", "rows": ROWS, "vector": [0.5] * 384, "k": 10})
    assert params["rows"] == ROWS and isinstance(params["rows"], list)
    assert params["vector"] == [0.5] * 384
    assert (params["kb"], params["k"]) == ("research", 10)
    # What the driver formats for every statement: short, whatever the rows hold.
    assert len(repr(params)) < 120, repr(params)


def test_with_the_drivers_debug_log_on_lists_are_shown_whole(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="neo4j"):
        params = _unformatted({"vector": [0.5] * 3})
    assert repr(params) == "{'vector': [0.5, 0.5, 0.5]}"
