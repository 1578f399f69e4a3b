"""Small GGUF files written by the tests: a header with chosen metadata and tensor shapes, no weights."""

from __future__ import annotations

import struct
from pathlib import Path

_UINT32, _STRING, _ARRAY = 4, 8, 9


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(
    path: Path,
    *,
    metadata: dict[str, str | int] | None = None,
    tensors: dict[str, tuple[int, ...]] | None = None,
    tokens: int = 3,
    version: int = 3,
) -> Path:
    """A GGUF header: string and uint32 `metadata`, a `tokenizer.ggml.tokens` array of `tokens` strings
    (the kind of long array a reader must skip), and `tensors` by name and shape."""
    entries = dict(metadata or {})
    body = b""
    for key, value in entries.items():
        if isinstance(value, str):
            body += _string(key) + struct.pack("<I", _STRING) + _string(value)
        else:
            body += _string(key) + struct.pack("<I", _UINT32) + struct.pack("<I", value)
    body += _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", _ARRAY, _STRING, tokens)
    body += b"".join(_string(f"tok{i}") for i in range(tokens))
    for name, shape in (tensors or {}).items():
        body += _string(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        body += struct.pack("<IQ", 0, 0)
    header = b"GGUF" + struct.pack("<IQQ", version, len(tensors or {}), len(entries) + 1)
    path.write_bytes(header + body)
    return path
