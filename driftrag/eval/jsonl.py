"""Append-only JSONL logs that survive a kill: each row is one write, flushed and fsynced.

A process killed mid-write leaves at most one partial last line (a row is a single `os.write` of one
line ending in a newline, so a complete line is a complete row). Reading tolerates that partial line,
and opening the log for appending cuts it off first, so the next row starts on a line of its own.
Any other unreadable line is refused: it is not a kill artefact, and silently skipping it would
hide lost results.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from driftrag.errors import DriftRAGError

log = logging.getLogger(__name__)
Row = TypeVar("Row", bound=BaseModel)


class ResultsFileError(DriftRAGError):
    """A results file is corrupt (other than a partial last line) or belongs to another run."""


def read_rows(path: Path, model: type[Row]) -> list[Row]:
    """Every complete row of the log (none if it does not exist); a partial last line is ignored."""
    rows, _, _ = _parse(path, model)
    return rows


def _parse(path: Path, model: type[Row]) -> tuple[list[Row], int, bool]:
    """The rows, the byte length of the log up to the end of its last valid row, and whether that row
    lacks its newline."""
    if not path.exists():
        return [], 0, False
    data = path.read_bytes()
    rows: list[Row] = []
    good_end = 0
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        last = number == len(lines)
        if not line.strip():
            if not last:
                good_end += len(line) + 1
            continue
        try:
            rows.append(model.model_validate_json(line))
        except ValidationError as exc:
            # Only the final line may be cut short: a row without its newline was being written.
            if last:
                log.warning("%s: ignoring a partial last line (%d bytes) left by an interrupted run", path, len(line))
                break
            raise ResultsFileError(f"{path}:{number}: unreadable row: {_first_error(exc)}") from None
        if last:
            # A valid row without its newline cannot come from `append`; keep it, but mend the line end.
            return rows, good_end + len(line), True
        good_end += len(line) + 1
    return rows, good_end, False


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    return errors[0]["msg"] if errors else str(exc)


class JsonlLog(Generic[Row]):
    """An append-only log of `model` rows. `open()` reads what is there and mends a partial tail."""

    def __init__(self, path: Path, model: type[Row]) -> None:
        self.path = path
        self.model = model
        self._fd: int | None = None
        # Appends run in worker threads; close waits for one in flight, so a row is never cut by our close.
        self._lock = threading.Lock()

    def open(self) -> list[Row]:
        """Read the existing rows, cut off a partial last line, and get ready to append."""
        rows, good_end, unterminated = _parse(self.path, self.model)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size > good_end:
            os.ftruncate(self._fd, good_end)
        if unterminated:
            self._write(b"\n")
        return rows

    def append(self, row: Row) -> None:
        """One row as one line, on disk before this returns (blocking: call it in a worker thread)."""
        line = json.dumps(row.model_dump(mode="json"), ensure_ascii=False) + "\n"
        with self._lock:
            self._write(line.encode("utf-8"))

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise ResultsFileError(f"{self.path} is not open for appending")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> JsonlLog[Row]:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
