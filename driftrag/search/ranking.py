"""Ranking by relevance to the question across everything a search gathered: rank fusion.

Every mode that gathers material from several searches (DRIFT: the question's own chunk search and
each follow-up's local search; local and entity search: the question's chunk search and the chunks,
entities, relationships and reports the graph links to it) orders it with this one rule. Each search
is a ranking, and so is a BM25 ranking of the question over everything gathered (the one place where
every source is compared with the question). They are fused by weighted reciprocal rank fusion
(Cormack et al., 2009):

    score(source) = sum over rankings r holding it of  weight(r) / (RRF_K + rank_r(source))

with ranks from 1. The question's own searches (vector and lexical) weigh most, so what plain vector
search finds stays near the front; a search led by the graph or by a follow-up weighs less, the
sources several searches agree on rise, and DRIFT's answer citations add to their sources. Ties: the
first ranking that holds the source, then its rank there. Measured on the Alice development set
(README, evaluation).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from driftrag.models.search import Source

# Damps the gap between the first ranks of one list. Below the usual 60: the question's own first
# chunks must stay ahead of material that many follow-up searches merely agree on (chosen on the
# tuning halves of the question sets, data/README.md).
RRF_K = 20
# Weights of the rankings: the question's vector search over chunks, BM25 of the question over
# everything gathered, DRIFT's answer citations, one DRIFT follow-up's local search, and a ranking the
# graph made (the chunks mentioning local search's entities, the chunks of entity search's named
# entities, the entities, relationships and reports themselves). (DRIFT's HyDE reports are no ranking
# of their own: long, and already ranked inside the follow-ups' contexts.) The vector search weighs
# twice the lexical one: it alone judged each chunk by meaning against the question.
QUESTION_WEIGHT = 6.0
# The question's full-text search over the whole kb (`driftrag.search.question_chunks`) weighs as much
# as its vector search: on the tuning halves of the question sets, words found as much evidence as
# meaning (more in French), and the two together most.
QUESTION_WORDS_WEIGHT = 6.0
LEXICAL_WEIGHT = 3.0
CITED_WEIGHT = 1.0
FOLLOW_UP_WEIGHT = 0.3
GRAPH_WEIGHT = 1.0
# The question's own chunk search reaches this many times `basic_top_k` deep: the chunks past basic
# search's cut enter the rank fusion, where the lexical and the graph's rankings can lift them.
QUESTION_DEPTH = 3


@dataclass(frozen=True)
class Ranking:
    """One search's source ids, best first, and the weight of that search in the fusion."""

    name: str
    weight: float
    ids: Sequence[str]


def fuse(rankings: Iterable[Ranking]) -> list[str]:
    """Every id of the rankings once, by weighted reciprocal rank fusion (ties: first seen)."""
    scores: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for position, ranking in enumerate(rankings):
        for rank, source_id in enumerate(dict.fromkeys(ranking.ids), start=1):
            scores[source_id] = scores.get(source_id, 0.0) + ranking.weight / (RRF_K + rank)
            first_seen.setdefault(source_id, (position, rank))
    return sorted(scores, key=lambda source_id: (-scores[source_id], first_seen[source_id]))


def final_order(fused: Sequence[str], known: Iterable[str]) -> list[str]:
    """Every known id once: in fused order, then those no ranking holds, by id."""
    position = {source_id: i for i, source_id in enumerate(fused)}
    return sorted(dict.fromkeys(known), key=lambda source_id: (position.get(source_id, len(position)), source_id))


_WORD = re.compile(r"\w+")
_BM25_K1 = 1.2
_BM25_B = 0.75
# Words shorter than this carry little topic in any alphabetic language (articles, pronouns).
_MIN_TERM_CHARS = 3
# Source texts whose term counts are remembered (the most recently ranked).
_BAG_CACHE_SIZE = 4096


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if len(w) >= _MIN_TERM_CHARS]


@functools.lru_cache(maxsize=_BAG_CACHE_SIZE)
def _bag(text: str) -> tuple[int, Counter[str]]:
    """(number of terms, term counts) of a source text, memoised: every context of a query ranks the
    sources gathered so far again. Callers only read the counter."""
    terms = _terms(text)
    return len(terms), Counter(terms)


def lexical_ranking(question: str, sources: Sequence[Source]) -> list[str]:
    """The sources holding a word of the question, by Okapi BM25 of the question over all of them.

    Language-agnostic on purpose (word tokens, no stemming): it compares the question with everything
    gathered, which the vector searches of each step did not do with each other's results.
    """
    query = set(_terms(question))
    if not query or not sources:
        return []
    bags = [_bag(source.text) for source in sources]
    n = len(bags)
    # Per question term, not per term of every bag: a few words against thousands of distinct ones.
    df = {term: sum(1 for _, bag in bags if term in bag) for term in query}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in query}
    average = sum(length for length, _ in bags) / n or 1.0
    scores: dict[str, float] = {}
    for source, (length, bag) in zip(sources, bags, strict=True):
        norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average)
        score = sum(idf[t] * bag[t] * (_BM25_K1 + 1) / (bag[t] + norm) for t in query if bag[t])
        if score > 0:
            scores[source.id] = max(score, scores.get(source.id, 0.0))
    return sorted(scores, key=lambda source_id: -scores[source_id])


def relevance_order(question: str, pool: Sequence[Source], rankings: Iterable[Ranking]) -> list[str]:
    """Every id of `pool` once, by the fusion of `rankings` and the BM25 ranking of `question` over
    the whole pool (added last); ids no ranking holds come last, by id."""
    lexical = Ranking("lexical", LEXICAL_WEIGHT, lexical_ranking(question, pool))
    return final_order(fuse([*rankings, lexical]), [source.id for source in pool])
