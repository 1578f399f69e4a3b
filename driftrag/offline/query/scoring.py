"""Relevance of candidate sentences to a question, without embedding them: Okapi BM25 and source rank.

    relevance = 0.75 · lexical + 0.25 · prior          (in [0, 1])

- lexical is Okapi BM25 (k1 = 1.2, b = 0.75) over the candidate sentences of one call, normalised by
  what a sentence holding each question term once, at average length, would score, and capped at 1:

      lexical = min(1, Σ_t w_t · idf_t · tf_t (k1 + 1) / (tf_t + k1 (1 − b + b · len / avglen)) / Σ_t w_t · idf_t)

  Terms are the stems of the question's content words; a name's words weigh w = 2 (exact names
  count), others 1; idf_t = ln(1 + (N − df_t + 0.5) / (df_t + 0.5)) over the N candidate sentences.
  So it is the share of the question's (rarity-weighted) terms a sentence holds, with BM25's term
  saturation and length normalisation.
- prior is the rank of the sentence's source among the context's sources of its kind,
  `PRIOR_K / (PRIOR_K + rank)` (1 for the first chunk, ½ for the sixth): the context is ranked by the
  search, which compared the question with the stored vectors of chunks, entities and reports, so the
  semantic evidence of those vectors enters through that order rather than through new embeddings.

A question without any content word is scored on the prior alone. An answer's score (0-100) is
`round(100 × relevance)` of its best sentence, so it rises with relevance and nothing else.

Nothing is embedded at query time: the answer step costs milliseconds, where embedding up to 64
sentences per call cost seconds on CPU (measured in `benchmarks/answer_evidence.py`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from driftrag.offline.nlp import Language, words
from driftrag.offline.query.text import Sentence, name_spans, stem_list, stems

LEXICAL_WEIGHT = 0.75
PRIOR_WEIGHT = 1.0 - LEXICAL_WEIGHT
PRIOR_K = 5
NAME_TERM_WEIGHT = 2.0
BM25_K1 = 1.2
BM25_B = 0.75
# Sentences whose content stems overlap this much (Jaccard) say the same thing.
NEAR_DUPLICATE_OVERLAP = 0.8


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
    lexical: float
    prior: float
    stems: frozenset[str]


def question_terms(question: str, language: Language) -> dict[str, float]:
    """The question's stems with their weights (a name's words weigh `NAME_TERM_WEIGHT`)."""
    weights = dict.fromkeys(stems(question, language), 1.0)
    for span in name_spans([question], language, question=True):
        for word in words(span.name):
            for stem in stems(word, language):
                weights[stem] = NAME_TERM_WEIGHT
    return weights


def bm25_shares(terms: dict[str, float], documents: Sequence[Sequence[str]]) -> list[float]:
    """The normalised BM25 of each document (a list of stems) for the weighted terms (module docstring)."""
    n = len(documents)
    if not n or not terms:
        return [0.0] * n
    counts = [Counter(doc) for doc in documents]
    df = Counter(term for bag in counts for term in bag if term in terms)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    full = sum(terms[t] * idf[t] for t in terms)
    average = sum(len(doc) for doc in documents) / n or 1.0
    shares = []
    for doc, bag in zip(documents, counts, strict=True):
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / average)
        total = sum(terms[t] * idf[t] * bag[t] * (BM25_K1 + 1) / (bag[t] + norm) for t in terms if bag[t])
        shares.append(min(1.0, total / full) if full else 0.0)
    return shares


def source_prior(sentence: Sentence) -> float:
    """`PRIOR_K / (PRIOR_K + rank)`, rank = the place of the sentence's source among its kind."""
    return PRIOR_K / (PRIOR_K + sentence.kind_rank)


class SentenceScorer:
    """Scores sentences against a question lexically and by the rank of their source; embeds nothing."""

    async def rank(self, question: str, sentences: Sequence[Sentence], language: Language) -> list[Scored]:
        """Every sentence scored, best first; ties keep context order."""
        if not sentences:
            return []
        terms = question_terms(question, language)
        documents = [stem_list(s.text, language) for s in sentences]
        lexical = bm25_shares(terms, documents)
        scored = []
        for sentence, document, share in zip(sentences, documents, lexical, strict=True):
            prior = source_prior(sentence)
            relevance = LEXICAL_WEIGHT * share + PRIOR_WEIGHT * prior if terms else prior
            scored.append(Scored(sentence, relevance, share, prior, frozenset(document)))
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
