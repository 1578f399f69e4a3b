"""A large synthetic knowledge base, written through the store's own batched writes.

    .venv/bin/python benchmarks/synthetic_kb.py --kb synthetic --relationships 1000000 [--seed 15]
    .venv/bin/python benchmarks/synthetic_kb.py --kb synthetic-50k --relationships 50000   # to iterate
    .venv/bin/python benchmarks/synthetic_kb.py --kb syn1m --record   # replace the build table of docs/benchmarks.md

At `--relationships R` (default 1,000,000): R/5 entities whose degrees follow a power law (endpoints
drawn with p(rank) ~ rank^-0.9 over a random order, so a few hubs hold 10k+ relationships at 1M, and a
long tail holds one or two), R/20 chunks in documents of 50 chunks, each chunk's text stating its
relationships and its extraction checkpointed on it (so a rebuild, e.g. after a delete, derives the
same graph), communities of every level from Leiden over the stored graph (read back in pages), a
report per community, and random unit vectors (384 d) for chunks, entities and reports. Seeded: the
same seed and size give the same kb. Every write goes through `DocumentWriter` and `GraphStore`
(no Cypher here). Prints the time per stage, the kb counts and the size of the Neo4j store.

The local Neo4j's sizing comes from DRIFTRAG_NEO4J_HEAP_MB / DRIFTRAG_NEO4J_PAGECACHE_MB; with NEO4J_URI
unset the script starts it (on DRIFTRAG_NEO4J_PORT) if it is not running, and stops nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.record import add_record_option, record
from driftrag.ingestion.communities import detect_graph_communities, read_community_graph
from driftrag.ingestion.merge import entity_id, normalise_name, relationship_id
from driftrag.models.graph import (
    Chunk,
    CommunityReport,
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionOutcome,
    Finding,
    MergedEntity,
    MergedRelationship,
    SourceDocument,
    stable_hash,
)
from driftrag.models.vector_spaces import space_for
from driftrag.settings import Settings
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.roles import neo4j_roles

DIMENSION = 384
CHUNKS_PER_DOCUMENT = 50
ENTITY_TYPES = ("PERSON", "ORGANIZATION", "LOCATION", "EVENT", "OBJECT", "CONCEPT")
RELATIONSHIP_TYPES = ("KNOWS", "WORKS_WITH", "LOCATED_IN", "MEMBER_OF", "RIVAL_OF", "FOUNDED")
VERBS = {
    "KNOWS": "knows",
    "WORKS_WITH": "works with",
    "LOCATED_IN": "is found in",
    "MEMBER_OF": "belongs to",
    "RIVAL_OF": "competes with",
    "FOUNDED": "founded",
}
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["or", "an", "el", "is", "ul", "en"]
SURNAMES = [
    "Ashford", "Brennan", "Carrow", "Dunmore", "Elswick", "Farrow", "Galloway", "Hartwell", "Ingram", "Jessop",
    "Kestrel", "Lockwood", "Marlowe", "Northam", "Oakley", "Penrose", "Quarry", "Redfern", "Sallow", "Thorne",
    "Underhill", "Varga", "Whitlock", "Yardley", "Zeller",
]  # fmt: skip
POWER = 0.9
WRITE_SLICE = 10_000
VECTOR_SLICE = 2_000


def entity_name(index: int) -> str:
    """A unique two-word name per index (the first word spells the index in syllables)."""
    syllables, n = [], index
    for _ in range(3):
        n, digit = divmod(n, len(SYLLABLES))
        syllables.append(SYLLABLES[digit])
    while n:
        n, digit = divmod(n, len(SYLLABLES))
        syllables.append(SYLLABLES[digit])
    return f"{''.join(syllables).capitalize()} {SURNAMES[index % len(SURNAMES)]}"


class SyntheticGraph:
    """The kb's shape as numpy arrays: relationship endpoints, types, strengths and chunks."""

    def __init__(self, relationships: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.n_entities = max(relationships // 5, 10)
        self.n_chunks = max(relationships // 20, 1)
        order = rng.permutation(self.n_entities)  # hubs anywhere in the id space
        weights = 1.0 / np.arange(1, self.n_entities + 1) ** POWER
        weights /= weights.sum()
        sources = np.empty(0, dtype=np.int64)
        targets = np.empty(0, dtype=np.int64)
        while sources.size < relationships:
            draw = int((relationships - sources.size) * 1.3) + 16
            s = order[rng.choice(self.n_entities, draw, p=weights)]
            t = order[rng.choice(self.n_entities, draw, p=weights)]
            keep = s != t
            sources, targets = np.concatenate([sources, s[keep]]), np.concatenate([targets, t[keep]])
            _, first = np.unique(sources * self.n_entities + targets, return_index=True)
            first.sort()  # distinct directed pairs, in draw order
            sources, targets = sources[first], targets[first]
        self.sources, self.targets = sources[:relationships], targets[:relationships]
        self.types = rng.integers(0, len(RELATIONSHIP_TYPES), relationships)
        self.strengths = rng.integers(1, 11, relationships)
        self.chunks = rng.integers(0, self.n_chunks, relationships)
        self.entity_types = rng.integers(0, len(ENTITY_TYPES), self.n_entities)
        # Entity -> its chunks: the chunks of its relationships; an isolated entity gets one chunk.
        degree = np.bincount(np.concatenate([self.sources, self.targets]), minlength=self.n_entities)
        isolated = np.flatnonzero(degree == 0)
        pairs = np.concatenate(
            [
                np.stack([self.sources, self.chunks], 1),
                np.stack([self.targets, self.chunks], 1),
                np.stack([isolated, rng.integers(0, self.n_chunks, isolated.size)], 1),
            ]
        )
        pairs = np.unique(pairs, axis=0)  # sorted by entity, then chunk
        self.mention_entities, self.mention_chunks = pairs[:, 0], pairs[:, 1]
        self.degree = degree
        self.names = [entity_name(i) for i in range(self.n_entities)]
        self.ids = [entity_id(normalise_name(name)) for name in self.names]
        starts = np.searchsorted(self.mention_entities, np.arange(self.n_entities + 1))
        self.chunk_starts = starts
        self.chunk_count = np.diff(starts)
        self.chunk_ids: list[str] = []

    def entity_chunks(self, entity: int) -> np.ndarray:
        return self.mention_chunks[self.chunk_starts[entity] : self.chunk_starts[entity + 1]]

    def relationship_ids(self) -> list[str]:
        return [
            relationship_id(self.ids[s], self.ids[t], RELATIONSHIP_TYPES[k])
            for s, t, k in zip(self.sources.tolist(), self.targets.tolist(), self.types.tolist(), strict=True)
        ]


def entity_description(graph: SyntheticGraph, entity: int) -> str:
    return f"{graph.names[entity]} is a {ENTITY_TYPES[graph.entity_types[entity]].lower()} of the synthetic corpus."


def relationship_sentence(graph: SyntheticGraph, k: int) -> str:
    return (
        f"{graph.names[graph.sources[k]]} {VERBS[RELATIONSHIP_TYPES[graph.types[k]]]} {graph.names[graph.targets[k]]}."
    )


def documents(graph: SyntheticGraph, kb: str) -> Iterator[tuple[SourceDocument, list[Chunk], list[ExtractionOutcome]]]:
    """Documents of `CHUNKS_PER_DOCUMENT` chunks; a chunk states its relationships and mentions."""
    by_chunk = np.argsort(graph.chunks, kind="stable")
    rel_starts = np.searchsorted(graph.chunks[by_chunk], np.arange(graph.n_chunks + 1))
    by_mention = np.argsort(graph.mention_chunks, kind="stable")
    mention_starts = np.searchsorted(graph.mention_chunks[by_mention], np.arange(graph.n_chunks + 1))
    for first in range(0, graph.n_chunks, CHUNKS_PER_DOCUMENT):
        numbers = range(first, min(first + CHUNKS_PER_DOCUMENT, graph.n_chunks))
        texts, outcomes_data = [], []
        for number in numbers:
            rels = by_chunk[rel_starts[number] : rel_starts[number + 1]].tolist()
            ents = graph.mention_entities[by_mention[mention_starts[number] : mention_starts[number + 1]]].tolist()
            sentences = [relationship_sentence(graph, k) for k in rels]
            sentences += [entity_description(graph, e) for e in ents if graph.degree[e] == 0]
            texts.append(" ".join(sentences) or f"Passage {number} of the synthetic corpus.")
            outcomes_data.append((rels, ents))
        text = "\n\n".join(texts)
        content_hash = stable_hash(kb, str(first), text, length=64)
        document = SourceDocument(
            id=f"document-{content_hash[:32]}",
            kb=kb,
            title=f"synthetic-{first // CHUNKS_PER_DOCUMENT:06d}",
            text=text,
            content_hash=content_hash,
        )
        chunks, outcomes = [], []
        for index, (chunk_text, (rels, ents)) in enumerate(zip(texts, outcomes_data, strict=True)):
            chunk = Chunk(
                id=f"chunk-{stable_hash(document.id, str(index), chunk_text)}",
                document_id=document.id,
                index=index,
                text=chunk_text,
                n_tokens=len(chunk_text.split()),
                start_char=0,
                end_char=len(chunk_text),
            )
            graph.chunk_ids.append(chunk.id)
            chunks.append(chunk)
            outcomes.append(
                ExtractionOutcome(
                    chunk_id=chunk.id,
                    entities=[
                        ExtractedEntity(
                            name=graph.names[e],
                            type=ENTITY_TYPES[graph.entity_types[e]],
                            description=entity_description(graph, e),
                        )
                        for e in ents
                    ],
                    relationships=[
                        ExtractedRelationship(
                            source=graph.names[graph.sources[k]],
                            target=graph.names[graph.targets[k]],
                            type=RELATIONSHIP_TYPES[graph.types[k]],
                            description=relationship_sentence(graph, k),
                            strength=int(graph.strengths[k]),
                        )
                        for k in rels
                    ],
                    attempts=1,
                )
            )
        yield document, chunks, outcomes


def unit_vectors(rng: np.random.Generator, n: int) -> list[list[float]]:
    vectors = rng.standard_normal((n, DIMENSION), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.tolist()


def merged_entities(graph: SyntheticGraph, start: int, stop: int) -> list[MergedEntity]:
    return [
        MergedEntity(
            id=graph.ids[e],
            name=graph.names[e],
            normalised_name=normalise_name(graph.names[e]),
            type=ENTITY_TYPES[graph.entity_types[e]],
            descriptions=[entity_description(graph, e)],
            source_chunk_ids=sorted(graph.chunk_ids[c] for c in graph.entity_chunks(e).tolist()),
        )
        for e in range(start, stop)
    ]


def merged_relationships(graph: SyntheticGraph, rel_ids: list[str], start: int, stop: int) -> list[MergedRelationship]:
    rows = []
    for k in range(start, stop):
        s, t = int(graph.sources[k]), int(graph.targets[k])
        rows.append(
            MergedRelationship(
                id=rel_ids[k],
                source_id=graph.ids[s],
                target_id=graph.ids[t],
                type=RELATIONSHIP_TYPES[graph.types[k]],
                original_types=[],
                descriptions=[relationship_sentence(graph, k)],
                weight=float(graph.strengths[k]),
                source_chunk_ids=[graph.chunk_ids[graph.chunks[k]]],
            )
        )
    return rows


def synthetic_report(community, rng: np.random.Generator, names: dict[str, str]) -> CommunityReport:
    members = [names[e] for e in community.entity_ids[:5]]
    return CommunityReport(
        community_id=community.id,
        level=community.level,
        title=f"{members[0]} and {len(community.entity_ids) - 1} others",
        summary=f"A community of {len(community.entity_ids)} entities around {', '.join(members)}.",
        rating=float(rng.integers(0, 11)),
        rating_explanation="Synthetic rating.",
        findings=[Finding(summary=f"{m} is a member", explanation=f"{m} is linked to the others.") for m in members],
    )


class Stage:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    def __call__(self, name: str, started: float) -> None:
        self.times[name] = time.monotonic() - started
        print(f"  {name}: {self.times[name]:.1f} s", flush=True)


async def load(args: argparse.Namespace) -> None:
    settings = Settings(neo4j_uri=args.neo4j_uri) if args.neo4j_uri else Settings()
    if settings.neo4j_uri is None:
        from driftrag.local_neo4j import LocalNeo4j

        LocalNeo4j(settings).start()
    stores = neo4j_roles(Neo4jStore.from_settings(settings))
    kb, stage, total_started = args.kb, Stage(), time.monotonic()
    try:
        await stores.database.connect()
        await stores.database.ensure_schema()
        await stores.kbs.delete_kb(kb)
        # Its vectors are random, searched by the benchmark's several embedders: a space of its own, with
        # no embedder name recorded (any embedder of its dimension may query it).
        space = space_for("synthetic", DIMENSION).model_copy(update={"embedder": None})
        await stores.database.claim_vector_space(kb, space)
        started = time.monotonic()
        graph = SyntheticGraph(args.relationships, args.seed)
        top = np.sort(graph.degree)[::-1]
        print(
            f"kb {kb!r}: {args.relationships:,} relationships, {graph.n_entities:,} entities, "
            f"{graph.n_chunks:,} chunks; "
            f"top degrees {top[:5].tolist()}, hubs of 10k+: {int((top >= 10_000).sum())}, "
            f"isolated entities: {int((top == 0).sum()):,}",
            flush=True,
        )
        stage("generate", started)

        started = time.monotonic()
        await stores.kbs.mark_stale(kb, True)
        for document, chunks, outcomes in documents(graph, kb):
            await stores.documents.upsert_document(document, chunks)
            await stores.extractions.save_extractions(kb, outcomes)
        stage("documents, chunks and extraction checkpoints", started)

        started = time.monotonic()
        for start in range(0, graph.n_entities, WRITE_SLICE):
            await stores.entity_layer.upsert_entities(
                kb, merged_entities(graph, start, min(start + WRITE_SLICE, graph.n_entities))
            )
        stage("entities and mentions", started)

        started = time.monotonic()
        rel_ids = graph.relationship_ids()
        for start in range(0, args.relationships, WRITE_SLICE):
            await stores.entity_layer.upsert_relationships(
                kb, merged_relationships(graph, rel_ids, start, min(start + WRITE_SLICE, args.relationships))
            )
            if start and start % 200_000 == 0:
                print(f"    {start:,} relationships", flush=True)
        await stores.entity_layer.set_pmi_chunks(kb, graph.n_chunks)  # every chunk's checkpoint is an extraction
        stage("relationships", started)

        started = time.monotonic()
        community_graph = await read_community_graph(stores.communities, kb)
        communities = detect_graph_communities(
            community_graph, max_cluster_size=settings.max_cluster_size, seed=settings.leiden_seed
        )
        del community_graph
        stage(f"Leiden ({len(communities):,} communities)", started)

        started = time.monotonic()
        names = dict(zip(graph.ids, graph.names, strict=True))
        reports = {c.id: synthetic_report(c, graph.rng, names) for c in communities}
        finest: dict[str, str] = {}
        for community in communities:  # sorted by level: the deepest listing wins
            for entity in community.entity_ids:
                finest[entity] = community.id
        await stores.communities.replace_communities(kb, communities, reports, {}, finest)
        stage("communities and reports", started)

        started = time.monotonic()
        kinds = (("chunk", graph.chunk_ids), ("entity", graph.ids), ("community", [c.id for c in communities]))
        for kind, ids in kinds:
            for start in range(0, len(ids), VECTOR_SLICE):
                part = ids[start : start + VECTOR_SLICE]
                await stores.documents.set_embeddings(
                    kind, kb, list(zip(part, unit_vectors(graph.rng, len(part)), strict=True))
                )
        await stores.kbs.mark_stale(kb, False)
        stage("vectors", started)
        total = time.monotonic() - total_started
        counts = await stores.kbs.counts(kb)
        print(f"loaded in {total:.0f} s; {counts}")
    finally:
        await stores.database.close()
    rows = [[name, f"{seconds:,.0f} s"] for name, seconds in stage.times.items()]
    rows.append(["total", f"{total:,.0f} s ({total / 60:.0f} min)"])
    if settings.neo4j_uri is None:
        data = settings.home / "neo4j" / "instances" / str(settings.neo4j_port)
        du = await asyncio.to_thread(subprocess.run, ["du", "-sh", str(data)], capture_output=True, text=True)
        size = du.stdout.split("\t")[0]
        print(f"Neo4j store size ({data}): {size} (every kb of this server)")
        rows.append(["Neo4j data folder, every kb of the server, transaction logs included", size])
    if args.record:
        note = (
            f"{counts.entities:,} entities, {counts.relationships:,} relationships, {counts.chunks:,} chunks, "
            f"{counts.communities:,} communities; Neo4j heap {settings.neo4j_heap_mb} MiB, page cache "
            f"{settings.neo4j_pagecache_mb} MiB (when it is the local one)."
        )
        record("synthetic-kb", "Synthetic million-relationship kb: build", ["stage", "time"], rows, note=note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", default="synthetic")
    parser.add_argument("--relationships", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--neo4j-uri", default=None, help="default: NEO4J_URI, else the local Neo4j")
    add_record_option(parser)
    args = parser.parse_args()
    if args.relationships < 100:
        parser.error("--relationships must be at least 100")
    if args.record and args.relationships != 1_000_000:
        parser.error("--record writes the million-relationship table: use it with --relationships 1000000")
    asyncio.run(load(args))


if __name__ == "__main__":
    main()
