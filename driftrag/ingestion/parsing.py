"""Document parsing apart from serving: PDF, DOCX, EPUB and HTML files are read in worker processes.

Parsing a document is CPU work in pure Python (pypdf, BeautifulSoup, python-docx) that holds the GIL for
seconds on a large or hostile file. In the event loop's default thread pool it took the threads query
embedding needs (six abandoned uploads made a `basic` query take 40 s instead of 0.1), and a thread cannot
be stopped. So `ParseWorkers` reads such files in worker processes of its own:

- at most `parse_workers` at once (`DRIFTRAG_PARSE_WORKERS`); more files wait for a free worker;
- a worker is started when first needed (`python -m driftrag.ingestion.parse_worker`) and kept for the
  next file; its process reads the file (or the uploaded bytes) with the loaders of
  `driftrag.ingestion.loading` and sends the `SourceDocument` back;
- a file whose reading passes `parse_timeout_s` (`DRIFTRAG_PARSE_TIMEOUT_S`) is refused with an
  `InputError` naming it and the limit, and its worker is killed; so is the worker of a reading whose
  caller is cancelled (an HTTP client that went away): the work stops at once, not at the end of the file;
- text and Markdown files are decoded in a thread, as before: no parser runs for them.

The memory a hostile file makes a parser allocate is the worker's, returned to the system when it is
killed, not the server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path
from typing import Any

from driftrag.errors import DriftRAGError
from driftrag.ingestion.formats import DOCUMENT_SUFFIXES, ReaderOptions
from driftrag.ingestion.loading import DEFAULT_MAX_BYTES, InputError, load_bytes, load_document
from driftrag.ingestion.parse_worker import HEADER, frame
from driftrag.models.graph import SourceDocument

log = logging.getLogger(__name__)
WORKER_MODULE = "driftrag.ingestion.parse_worker"


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def ask(self, request: tuple[Any, ...]) -> tuple[str, Any]:
        import pickle

        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(frame(request))
        await self.process.stdin.drain()
        header = await self.process.stdout.readexactly(HEADER.size)
        (size,) = HEADER.unpack(header)
        return pickle.loads(await self.process.stdout.readexactly(size))  # our own child wrote it

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()


class ParseWorkers:
    """A bounded pool of document-reading processes. No I/O until the first file; `close` stops them."""

    def __init__(self, workers: int = 2, timeout_s: float = 120.0) -> None:
        if workers < 1:
            raise ValueError("at least one parse worker")
        self.workers = workers
        self.timeout_s = timeout_s
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> ParseWorkers:
        return cls(settings.parse_workers, settings.parse_timeout_s)

    def _bind(self) -> asyncio.Semaphore:
        """The slots of this event loop; workers started under another loop (a finished `asyncio.run`) are
        stopped: their pipes belong to it."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._slots is None:
            for worker in [*self._idle, *self._busy]:
                worker.kill()
            self._idle.clear()
            self._busy.clear()
            self._loop, self._slots = loop, asyncio.Semaphore(self.workers)
        return self._slots

    async def load_document(
        self, path: str | Path, kb: str, *, max_bytes: int = DEFAULT_MAX_BYTES, options: ReaderOptions | None = None
    ) -> SourceDocument:
        """`loading.load_document`, a PDF, DOCX, EPUB or HTML file read in a worker process."""
        if Path(path).suffix.lower() not in DOCUMENT_SUFFIXES:
            return await asyncio.to_thread(load_document, path, kb, max_bytes=max_bytes, options=options)
        return await self._run(("file", str(path), kb, max_bytes, options), str(path))

    async def load_bytes(
        self,
        name: str,
        data: bytes,
        kb: str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        options: ReaderOptions | None = None,
        shown: str | None = None,
    ) -> SourceDocument:
        """`loading.load_bytes`, a PDF, DOCX, EPUB or HTML upload read in a worker process."""
        if Path(name).suffix.lower() not in DOCUMENT_SUFFIXES:
            return await asyncio.to_thread(
                load_bytes, name, data, kb, max_bytes=max_bytes, options=options, shown=shown
            )
        return await self._run(("bytes", name, data, kb, max_bytes, options, shown), shown or name)

    async def _run(self, request: tuple[Any, ...], shown: str) -> SourceDocument:
        async with self._bind():
            worker = self._idle.pop() if self._idle else await self._start()
            self._busy.add(worker)
            keep = False
            try:
                async with asyncio.timeout(self.timeout_s):
                    status, value = await worker.ask(request)
                keep = True
            except TimeoutError:
                raise InputError(
                    f"{shown}: reading it took longer than {self.timeout_s:g} s, the limit on one file "
                    "(setting `parse_timeout_s`, DRIFTRAG_PARSE_TIMEOUT_S); its reader was stopped"
                ) from None
            except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionResetError):
                code = await _exit_code(worker)
                raise InputError(
                    f"{shown}: its reader's process stopped while reading it (exit code {code}; out of memory?)"
                ) from None
            finally:
                self._busy.discard(worker)
                if keep:
                    self._idle.append(worker)
                else:  # timed out, cancelled (the caller went away), or dead: its work stops now
                    worker.kill()
                    await asyncio.shield(_reap(worker))
        if status == "ok":
            return value
        if isinstance(value, DriftRAGError):
            raise value
        raise InputError(f"{shown}: {value}")

    async def _start(self) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER_MODULE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        log.debug("started parse worker %d", process.pid)
        return _Worker(process)

    async def close(self) -> None:
        """Stop every worker (idle ones end at once; a reading under way is cut)."""
        workers = [*self._idle, *self._busy]
        self._idle.clear()
        self._busy.clear()
        same_loop = self._loop is not None and self._loop is _running_loop()
        for worker in workers:
            worker.kill()
            if same_loop:
                await _reap(worker)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _reap(worker: _Worker) -> None:
    with contextlib.suppress(Exception):
        if worker.process.stdin is not None:
            worker.process.stdin.close()
        await asyncio.wait_for(worker.process.wait(), 10)


async def _exit_code(worker: _Worker) -> int | None:
    with contextlib.suppress(Exception):
        return await asyncio.wait_for(worker.process.wait(), 5)
    return None
