"""The sources of a global answer: the chunks behind its key points, ranked for the final context.

The reports behind the reduced key points carry their members' source chunks; global search reads the
`CHUNKS_PER_REPORT` of each nearest to the question (stored embeddings) and ranks that pool by
weighted reciprocal rank fusion (`driftrag.search.ranking.fuse`) of:

- support (weight 6): for each reduced key point, best first, the chunk of its reports that shares the
  most with the point's text (BM25 of the point over those chunks), so each point brings its evidence;
- similarity (weight 6): the chunks by the cosine of their stored embedding to the question;
- the question's own chunk search by meaning and by words (`driftrag.search.question_chunks`, weights
  of `driftrag.search.ranking`): its chunks join the pool, so a question the reports cannot help keeps
  what plain vector search would have found;
- lexical (weight 3): BM25 of the question over the pool;
- reports (weight 1): each report's chunks in report order (the order of the key points citing them).

The reports themselves follow the chunks: they are summaries, and the chunks hold what they summarise.
An answer citing a report also cites the chunk that best supports each key point drawn from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from driftrag.models.search import Source
from driftrag.search.global_search.models import GlobalPoint
from driftrag.search.question_chunks import QuestionChunks
from driftrag.search.ranking import Ranking, final_order, fuse, lexical_ranking

CHUNKS_PER_REPORT = 10
SUPPORT_WEIGHT = 6.0
QUESTION_WEIGHT = 6.0
LEXICAL_WEIGHT = 3.0
REPORT_WEIGHT = 1.0


def supporting_chunks(points: Sequence[GlobalPoint], chunks_of: Mapping[str, Sequence[Source]]) -> dict[str, str]:
    """Point id → the chunk of its reports whose text best matches the point (absent without chunks)."""
    support: dict[str, str] = {}
    for point in points:
        candidates = list({c.id: c for r in point.report_ids for c in chunks_of.get(r, [])}.values())
        if not candidates:
            continue
        ranked = lexical_ranking(point.description, candidates)
        support[point.id] = ranked[0] if ranked else candidates[0].id
    return support


def rank_sources(
    question: str,
    points: Sequence[GlobalPoint],
    chunks_of: Mapping[str, Sequence[Source]],
    reports: Sequence[Source],
    question_chunks: QuestionChunks | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The source ids in final-context order (chunks by fusion, then reports), and each point's chunk."""
    question_chunks = question_chunks or QuestionChunks((), ())
    grounded = list({c.id: c for chunks in chunks_of.values() for c in chunks}.values())
    pool = list({c.id: c for c in [*grounded, *question_chunks.sources]}.values())
    support = supporting_chunks(points, chunks_of)
    # Cosine scores only: the reports' chunks and the question's vector hits (word hits score BM25).
    similar = list({c.id: c for c in [*grounded, *question_chunks.by_vector]}.values())
    by_similarity = sorted(similar, key=lambda c: (-(c.score or 0.0), c.id))
    report_order = [c.id for report_id in chunks_of for c in chunks_of[report_id]]
    fused = fuse(
        [
            Ranking("support", SUPPORT_WEIGHT, [support[p.id] for p in points if p.id in support]),
            Ranking("similarity", QUESTION_WEIGHT, [c.id for c in by_similarity]),
            *question_chunks.rankings(),
            Ranking("lexical", LEXICAL_WEIGHT, lexical_ranking(question, pool)),
            Ranking("reports", REPORT_WEIGHT, report_order),
        ]
    )
    chunk_order = final_order(fused, [c.id for c in pool])
    return chunk_order + [r.id for r in reports if r.id not in set(chunk_order)], support
