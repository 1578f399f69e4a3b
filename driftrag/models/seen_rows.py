"""The detail rows of vector-search candidates one search (or one query's searches) has read, by id:
`SeenRows`, which a query mode makes once per query and hands to every search it runs.

A vector search keeps only the candidates its details statement returns a row for (enabled chunks,
valid entities…). Searches that share a `CheckedRows` read each candidate's row once, also when they
run at the same time: an id another search is reading is awaited, not read again. A DRIFT round runs
its follow-ups' local searches together, and they keep finding the same chunks and entities.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

Row = dict[str, Any]


class CheckedRows:
    """Rows by id (None: the details statement returned no row for it), and the reads under way."""

    def __init__(self) -> None:
        self._rows: dict[str, Row | None] = {}
        self._reading: dict[str, asyncio.Future[None]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    async def rows(self, ids: Sequence[str], read: Callable[[list[str]], Awaitable[list[Row]]]) -> list[Row | None]:
        """The row of each id, in order: `read` (the details statement, returning rows with an `id`) is
        called for the ids nobody has read or is reading; the others are awaited."""
        while True:
            unread = [i for i in dict.fromkeys(ids) if i not in self._rows and i not in self._reading]
            others = {self._reading[i] for i in ids if i in self._reading}
            if unread:
                await self._read(unread, read)
            if others:
                # wait(), not gather(): this search being cancelled must not cancel another's read.
                await asyncio.wait(others)
            if all(i in self._rows for i in ids):
                return [self._rows[i] for i in ids]
            # Another search's read failed or was cancelled: what it left unread is read here.

    async def _read(self, unread: list[str], read: Callable[[list[str]], Awaitable[list[Row]]]) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reading.update(dict.fromkeys(unread, done))
        try:
            found = {row["id"]: row for row in await read(unread)}
            self._rows.update({i: found.get(i) for i in unread})
        finally:
            for i in unread:
                self._reading.pop(i, None)
            done.set_result(None)


class SeenRows:
    """The rows of vector-search candidates read so far by one query, per statement and parameters.

    A DRIFT query runs a dozen vector searches over the same kb, and they keep finding the same few
    chunks and entities: each one's details (text, title, validity) are read once per query, not once
    per search, also by searches that run at the same time (`CheckedRows`). A query
    takes seconds; what it reads then is its view of the kb.
    """

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, tuple[tuple[str, Any], ...]], CheckedRows] = {}

    def of(self, kb: str, statement: str, params: dict[str, Any]) -> CheckedRows:
        key = (kb, statement, tuple(sorted(params.items())))
        if key not in self._rows:
            self._rows[key] = CheckedRows()
        return self._rows[key]
