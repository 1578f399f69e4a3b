"""`CheckedRows`: searches that share it read each candidate's row once, also when they run at once."""

from __future__ import annotations

import asyncio

import pytest

from driftrag.models.seen_rows import CheckedRows

VALID = {"a", "b", "c", "d"}  # ids the details statement returns a row for


class Details:
    """A details statement's reads: rows for the valid ids, each call recorded; `gate` holds them open."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = asyncio.Event()
        self.fail_next = False

    async def __call__(self, ids: list[str]) -> list[dict]:
        self.calls.append(list(ids))
        await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("the read failed")
        return [{"id": i, "text": i.upper()} for i in ids if i in VALID]


async def test_rows_come_in_the_order_asked_with_none_for_ids_without_a_row() -> None:
    details, checked = Details(), CheckedRows()
    details.gate.set()
    assert await checked.rows(["c", "x", "a"], details) == [{"id": "c", "text": "C"}, None, {"id": "a", "text": "A"}]
    # Read once: asking again reads nothing, the missing id included.
    assert await checked.rows(["x", "a"], details) == [None, {"id": "a", "text": "A"}]
    assert details.calls == [["c", "x", "a"]]


async def test_concurrent_searches_read_each_id_once() -> None:
    details, checked = Details(), CheckedRows()
    first = asyncio.create_task(checked.rows(["a", "b", "c"], details))
    await asyncio.sleep(0)
    second = asyncio.create_task(checked.rows(["b", "c", "d", "x"], details))
    await asyncio.sleep(0)
    details.gate.set()
    assert [row["id"] for row in await first] == ["a", "b", "c"]
    assert [row and row["id"] for row in await second] == ["b", "c", "d", None]
    assert details.calls == [["a", "b", "c"], ["d", "x"]]


async def test_a_cancelled_search_leaves_its_ids_to_the_one_waiting_for_them() -> None:
    details, checked = Details(), CheckedRows()
    first = asyncio.create_task(checked.rows(["a", "b"], details))
    await asyncio.sleep(0)
    second = asyncio.create_task(checked.rows(["b", "c"], details))
    await asyncio.sleep(0)
    first.cancel()
    details.gate.set()
    assert [row["id"] for row in await second] == ["b", "c"]
    with pytest.raises(asyncio.CancelledError):
        await first
    assert details.calls == [["a", "b"], ["c"], ["b"]]
    assert len(checked) == 2  # b and c: nothing of the cancelled read was kept


async def test_a_failed_read_fails_its_search_and_the_waiting_one_reads_again() -> None:
    details, checked = Details(), CheckedRows()
    details.fail_next = True
    first = asyncio.create_task(checked.rows(["a"], details))
    await asyncio.sleep(0)
    second = asyncio.create_task(checked.rows(["a"], details))
    await asyncio.sleep(0)
    details.gate.set()
    with pytest.raises(ConnectionError):
        await first
    assert await second == [{"id": "a", "text": "A"}]
    assert details.calls == [["a"], ["a"]]


async def test_a_cancelled_waiter_does_not_cancel_the_read_it_waited_for() -> None:
    details, checked = Details(), CheckedRows()
    first = asyncio.create_task(checked.rows(["a"], details))
    await asyncio.sleep(0)
    second = asyncio.create_task(checked.rows(["a"], details))
    await asyncio.sleep(0)
    second.cancel()
    await asyncio.sleep(0)
    details.gate.set()
    assert await first == [{"id": "a", "text": "A"}]
    assert details.calls == [["a"]]
