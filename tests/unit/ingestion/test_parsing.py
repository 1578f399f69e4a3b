"""Document parsing in worker processes of its own: the same documents as in-process reading, a bounded
number of workers, a wall-time limit per file, a reading stopped (its worker killed) when its caller is
cancelled, and the threads queries use left free while hostile files are read."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from driftrag.ingestion.loading import InputError, load_bytes, load_document
from driftrag.ingestion.parsing import ParseWorkers
from tests.support.hostile_files import many_pages_pdf, repeated_page_pdf

SLOW_PAGES = 4000  # a legitimate PDF that takes pypdf seconds: within every cap, slow only


async def test_a_worker_reads_what_the_process_would() -> None:
    workers = ParseWorkers(2, 60)
    try:
        data = many_pages_pdf(3)
        document = await workers.load_bytes("three.pdf", data, "kb")
        assert document == load_bytes("three.pdf", data, "kb")
        again = await workers.load_bytes("three.pdf", data, "kb")
        assert again == document and len(workers._idle) == 1  # the worker is kept for the next file
        with pytest.raises(InputError, match=r"^files\[0\]: its page tree lists object 3 0 R more than once"):
            await workers.load_bytes("pages.pdf", repeated_page_pdf(20_000), "kb", shown="files[0]")
        assert len(workers._idle) == 1  # a refused file does not cost its worker
    finally:
        await workers.close()


async def test_files_on_disk_and_text_files(tmp_path: Path) -> None:
    workers = ParseWorkers(1, 60)
    try:
        pdf = tmp_path / "three.pdf"
        pdf.write_bytes(many_pages_pdf(3))
        assert await workers.load_document(pdf, "kb") == load_document(pdf, "kb")
        text = tmp_path / "notes.txt"
        text.write_text("Plain text, decoded in a thread.", encoding="utf-8")
        assert (await workers.load_document(text, "kb")).text == "Plain text, decoded in a thread."
        with pytest.raises(InputError, match="no such file"):
            await workers.load_document(tmp_path / "missing.pdf", "kb")
    finally:
        await workers.close()


async def test_a_file_over_the_wall_time_limit_is_refused_and_its_worker_killed() -> None:
    workers = ParseWorkers(1, 60)
    try:
        await workers.load_bytes("warm.pdf", many_pages_pdf(1), "kb")  # the worker's start is not timed
        workers.timeout_s = 0.5  # only the slow file is held to it: a busy machine starts a worker slowly
        worker = workers._idle[0]
        slow = many_pages_pdf(SLOW_PAGES)  # made before the clock starts: on busy cores it takes seconds
        started = time.monotonic()
        with pytest.raises(InputError, match=r"slow\.pdf: reading it took longer than 0\.5 s.*PARSE_TIMEOUT_S"):
            await workers.load_bytes("slow.pdf", slow, "kb")
        assert time.monotonic() - started < 5
        assert worker.process.returncode is not None and not workers._idle
    finally:
        await workers.close()


async def test_a_cancelled_reading_stops_its_worker_at_once() -> None:
    workers = ParseWorkers(1, 600)
    try:
        await workers.load_bytes("warm.pdf", many_pages_pdf(1), "kb")
        worker = workers._idle[0]
        task = asyncio.ensure_future(workers.load_bytes("slow.pdf", many_pages_pdf(SLOW_PAGES), "kb"))
        await asyncio.sleep(0.5)
        cancelled = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - cancelled < 5
        assert worker.process.returncode is not None  # killed, not left parsing
        # The next file gets a fresh worker.
        assert (await workers.load_bytes("one.pdf", many_pages_pdf(1), "kb")).text.startswith("Page 1")
    finally:
        await workers.close()


async def test_workers_are_bounded_and_query_threads_stay_free() -> None:
    workers = ParseWorkers(2, 600)
    try:
        slow = many_pages_pdf(SLOW_PAGES)
        readings = [asyncio.ensure_future(workers.load_bytes(f"{i}.pdf", slow, "kb")) for i in range(6)]
        await asyncio.sleep(1.0)
        assert len(workers._busy) <= 2
        # What query embedding waits for: a thread of the default pool. Six hostile uploads used to hold them all.
        latencies = []
        for _ in range(5):
            started = time.monotonic()
            await asyncio.to_thread(sum, range(1000))
            latencies.append(time.monotonic() - started)
            await asyncio.sleep(0.1)
        assert sorted(latencies)[2] < 0.5, latencies
        for reading in readings:
            reading.cancel()
        await asyncio.gather(*readings, return_exceptions=True)
        assert not workers._busy
    finally:
        await workers.close()
