"""Files posted to `POST …/documents/files` (multipart/form-data, one `files` part per file).

Each file goes through the loaders a file on disk goes through (`load_bytes`: the reader its suffix
names, the `max_file_mb` limit, OCR, the zip caps and the caps on what a document becomes) before the
job is accepted, so a bad file is one 422 and nothing is queued. Errors name a file by its place
(`files[2]`), never by the name the client sent. A file is titled by its base name: a path in it is
dropped. PDF, DOCX, EPUB and HTML files are read in the engine's parse workers (`ParseWorkers`), and the
reading stops when the client goes away (`until_disconnected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Sequence
from pathlib import PurePosixPath
from typing import TypeVar

from fastapi import Request, UploadFile

from driftrag.ingestion.loading import SUPPORTED_SUFFIXES, InputError, reader_options
from driftrag.ingestion.parsing import ParseWorkers
from driftrag.ingestion.requests import TextInput
from driftrag.settings import Settings

log = logging.getLogger("driftrag.api")
T = TypeVar("T")


class ClientGone(Exception):
    """The client closed its connection while its request was being worked on."""


MAX_FILES = 100
MAX_NAME_CHARS = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def upload_title(filename: str | None, place: str) -> str:
    """The base name of an uploaded file, checked: not empty, no control characters, a supported suffix."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name.strip()
    if not name or len(name) > MAX_NAME_CHARS or _CONTROL.search(name):
        raise InputError(
            f"{place}: the file needs a name of 1 to {MAX_NAME_CHARS} characters without control characters"
        )
    if PurePosixPath(name).suffix.lower() not in SUPPORTED_SUFFIXES:
        suffixes = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise InputError(f"{place}: not a supported file type; the name must end in one of {suffixes}")
    return name


async def until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """`work`'s result, or `ClientGone` as soon as the client disconnects, `work` cancelled then (a
    parse worker reading for it is stopped). The request's body must have been read already: the next
    `receive` only ends when the client goes away."""

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    task, watcher = asyncio.ensure_future(work), asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watcher
    if task.cancelled():
        raise ClientGone("the client went away; its work was stopped")
    return task.result()


async def read_uploads(
    files: Sequence[UploadFile], kb: str, settings: Settings, parsers: ParseWorkers
) -> dict[str, TextInput]:
    """Every uploaded file read as a document, keyed by its title; `InputError` for the first that cannot be."""
    if len(files) > MAX_FILES:
        raise InputError(f"{len(files)} files in one request, above the limit of {MAX_FILES}; send fewer at a time")
    max_bytes = int(settings.max_file_mb * 1024 * 1024)
    options = reader_options(settings)
    texts: dict[str, TextInput] = {}
    for index, upload in enumerate(files):
        place = f"files[{index}]"
        title = upload_title(upload.filename, place)
        if title in texts:
            raise InputError(f"{place}: two files of one request have the same name; names must be distinct")
        if upload.size is not None and upload.size > max_bytes:
            # Refused before it is read into memory; load_bytes checks again what was read.
            raise InputError(
                f"{place}: file is {upload.size} bytes, above the limit of {max_bytes} bytes (setting `max_file_mb`)"
            )
        data = await upload.read()
        document = await parsers.load_bytes(title, data, kb, max_bytes=max_bytes, options=options, shown=place)
        texts[title] = TextInput.from_document(document)
    return texts
