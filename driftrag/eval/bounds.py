"""What a number can be read against: a floor and a ceiling per question set, from the kb's own chunks.

- floor: the kb's chunks in a random order (seeded per question, so a report is reproducible), cut to
  the same budget as the methods: what retrieval that knows nothing of the question scores;
- ceiling: every chunk of the kb, uncut: the whole corpus as context. Exact evidence recall stays
  below 100 % only for evidence that spans two chunks; answer-token recall below 100 % says how many
  of the reference answers' words the book never uses (paraphrase, inflection).

`driftrag eval run` keeps the chunks in `corpus.jsonl` of the results folder when it starts, so a report
needs neither Neo4j nor the corpus file.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from driftrag.models.search import Source
from driftrag.models.storage import GraphListing

FLOOR = "floor"
CEILING = "ceiling"
BOUNDS = (FLOOR, CEILING)
FLOOR_SEED = 54
# The ceiling is not cut: a budget no corpus reaches.
UNCUT = 10**12


async def kb_chunks(listing: GraphListing, kb: str) -> list[Source]:
    """Every chunk of `kb`, in document and reading order."""
    rows = await listing.chunks(kb)
    rows.sort(key=lambda row: (str(row.get("document_id", "")), int(row.get("index") or 0)))
    return [Source(id=row["id"], kind="chunk", text=row["text"]) for row in rows if row.get("text")]


def write_corpus(path: Path, chunks: Sequence[Source]) -> None:
    """Write-then-rename, so a kill never leaves half a corpus."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text("".join(chunk.model_dump_json() + "\n" for chunk in chunks), encoding="utf-8")
    partial.replace(path)


def read_corpus(path: Path) -> list[Source] | None:
    if not path.is_file():
        return None
    return [Source.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def floor_sources(chunks: Sequence[Source], question_id: str, seed: int = FLOOR_SEED) -> list[Source]:
    """The chunks in an order drawn for this question alone (the same on every report)."""
    return random.Random(f"{seed}/{question_id}").sample(list(chunks), len(chunks))
