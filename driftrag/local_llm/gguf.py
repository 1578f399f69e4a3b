"""What a GGUF model file is, read from its header alone: `read_gguf_info(path)`.

The header is small and its layout fixed (llama.cpp's `gguf/README`: magic, version, tensor and key counts,
typed key/values, then each tensor's name, shape and type), so it is read here in ~100 lines rather than
with the `gguf` package, which maps the whole file and brings its own dependencies. Only what `driftrag
info` and the server's context need is kept; the tokenizer's long arrays are skipped.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from driftrag.errors import LocalModelError

GGUF_MAGIC = b"GGUF"
# Far more than any real model has; a larger count is a damaged header, not a reason to read gigabytes.
_MAX_ITEMS = 1 << 24
# Scalar value types of the format: struct code by type id (8 = string and 9 = array are read apart).
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
# `general.file_type` (llama.cpp's `llama_ftype`): the quantisation most of the weights have.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}  # fmt: skip


class GgufInfo(BaseModel):
    """A GGUF model file as its header describes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    file_bytes: int
    name: str | None = Field(description="`general.name`, when the file has one.")
    architecture: str | None = Field(description="`general.architecture` (llama, qwen2, gemma3…).")
    quantisation: str | None = Field(description="`general.file_type` by name (Q4_K_M…).")
    parameters: int = Field(description="Weights in all tensors together.")
    trained_context: int | None = Field(description="`<architecture>.context_length`: the longest context trained.")
    chat_template: bool = Field(description="Whether the file carries a chat template (a base model has none).")

    def describe(self) -> str:
        name = self.name or self.path.stem
        parts = [f"{name} ({self.path})", f"{self.file_bytes / 2**20:,.0f} MiB", f"{_short_count(self.parameters)}"]
        if self.quantisation:
            parts.append(self.quantisation)
        if self.trained_context:
            parts.append(f"trained context {self.trained_context:,}")
        if not self.chat_template:
            parts.append("no chat template (a base model, not a chat model?)")
        return ", ".join(parts)


def read_gguf_info(path: Path) -> GgufInfo:
    """The header of the GGUF file at `path`; LocalModelError naming it when it is missing, unreadable,
    not GGUF, or cut short."""
    if not path.is_file():
        raise LocalModelError(f"local model {path} does not exist (DRIFTRAG_LOCAL_MODEL names a .gguf file)")
    try:
        with path.open("rb") as file:
            magic = file.read(4)
            if magic != GGUF_MAGIC:
                raise LocalModelError(
                    f"local model {path} is not a GGUF file (it starts with {magic!r}, not b'GGUF'); "
                    "llama.cpp serves GGUF models only"
                )
            return _read_header(file, path)
    except struct.error:
        raise LocalModelError(f"local model {path} is not a whole GGUF file: its header is cut short") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LocalModelError(f"local model {path} has an unreadable GGUF header: {exc}") from None


def _read_header(file: BinaryIO, path: Path) -> GgufInfo:
    reader = _Reader(file)
    version = reader.scalar("I")
    if version < 2:
        raise LocalModelError(f"local model {path} is GGUF version {version}; llama.cpp reads version 2 and later")
    tensors, keys = reader.count(), reader.count()
    metadata: dict[str, Any] = {}
    for _ in range(keys):
        key = reader.string()
        metadata[key] = reader.value(reader.scalar("I"))
    parameters = 0
    for _ in range(tensors):
        reader.string()  # the tensor's name
        dims = [reader.scalar("Q") for _ in range(reader.scalar("I"))]
        reader.scalar("I")  # its type
        reader.scalar("Q")  # its offset
        count = 1
        for dim in dims:
            count *= dim
        parameters += count
    architecture = metadata.get("general.architecture")
    context = metadata.get(f"{architecture}.context_length") if architecture else None
    file_type = metadata.get("general.file_type")
    return GgufInfo(
        path=path,
        file_bytes=path.stat().st_size,
        name=metadata.get("general.name"),
        architecture=architecture,
        quantisation=FILE_TYPES.get(file_type, f"type {file_type}") if isinstance(file_type, int) else None,
        parameters=parameters,
        trained_context=context if isinstance(context, int) else None,
        chat_template=bool(metadata.get("tokenizer.chat_template")),
    )


class _Reader:
    """Little-endian reads of the header's typed values; `struct.error` at the end of the file."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    def scalar(self, code: str) -> Any:
        size = struct.calcsize(code)
        return struct.unpack("<" + code, self._exact(size))[0]

    def count(self) -> int:
        value = self.scalar("Q")
        if value > _MAX_ITEMS:
            raise ValueError(f"a count of {value:,} items")
        return value

    def string(self) -> str:
        return self._exact(self.count()).decode("utf-8")

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind, length = self.scalar("I"), self.count()
            if item_kind in _SCALARS:  # a fixed size: skipped at once
                self._exact(struct.calcsize(_SCALARS[item_kind]) * length)
            else:
                for _ in range(length):
                    self.value(item_kind)
            return None  # arrays (the tokenizer's) are not needed
        if kind not in _SCALARS:
            raise ValueError(f"unknown value type {kind}")
        return self.scalar(_SCALARS[kind])

    def _exact(self, size: int) -> bytes:
        data = self._file.read(size)
        if len(data) != size:
            raise struct.error("end of file")
        return data


def _short_count(parameters: int) -> str:
    """`135M parameters`, `494M parameters`, `1.5B parameters`."""
    if parameters >= 10**9:
        return f"{parameters / 10**9:.1f}B parameters"
    return f"{parameters / 10**6:.0f}M parameters"
