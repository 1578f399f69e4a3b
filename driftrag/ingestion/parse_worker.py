"""The worker process of `driftrag.ingestion.parsing`: reads files one at a time, as its parent asks.

Run as `python -m driftrag.ingestion.parse_worker`; its parent writes requests to its stdin and reads
answers from its stdout, each a frame (an 8-byte big-endian length, then a pickle). A request is
`("file", path, kb, max_bytes, options)` or `("bytes", name, data, kb, max_bytes, options, shown)`; the
answer is `("ok", SourceDocument)` or `("error", exception)`. Pickles come only from the parent that
started this process. The worker ends when its stdin closes (the parent is gone or done with it).
"""

from __future__ import annotations

import pickle
import struct
import sys
from typing import Any, BinaryIO

HEADER = struct.Struct(">Q")


def read_frame(stream: BinaryIO) -> Any | None:
    """The next frame's object, or None at the end of the stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    return pickle.loads(payload)  # written by the parent that started this process


def frame(value: Any) -> bytes:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def answer(request: tuple[Any, ...]) -> tuple[str, Any]:
    from driftrag.errors import DriftRAGError
    from driftrag.ingestion.loading import load_bytes, load_document

    try:
        if request[0] == "file":
            _, path, kb, max_bytes, options = request
            return "ok", load_document(path, kb, max_bytes=max_bytes, options=options)
        _, name, data, kb, max_bytes, options, shown = request
        return "ok", load_bytes(name, data, kb, max_bytes=max_bytes, options=options, shown=shown)
    except DriftRAGError as exc:
        return "error", exc
    except MemoryError:
        return "error", "reading it ran out of memory"
    except Exception as exc:  # a reader's bug: this file fails, the worker stays usable
        return "error", f"reading it failed ({type(exc).__name__}: {exc})"


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to the answers' stream: a library printing would break the framing.
    sys.stdout = sys.stderr
    while (request := read_frame(stdin)) is not None:
        stdout.write(frame(answer(request)))
        stdout.flush()


if __name__ == "__main__":
    main()
