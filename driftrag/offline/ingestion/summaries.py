"""Extractive summaries: the most central sentences of a set of texts, within a word budget.

Centrality (as in centroid-based extractive summarisation): each sentence is a vector of content-word
counts (stopwords and caller-given words removed, lower-cased), L2-normalised; the centroid is the
sum of those vectors; a sentence's score is its cosine with the centroid, scaled down for short
sentences (`× min(1, content words / INFORMATIVE_WORDS)`) and for fragments, pieces cut by chunk
boundaries that start in lower case or do not end like a sentence (`× FRAGMENT_FACTOR`; a chosen
fragment is followed by ` …`), plus an optional bonus from the caller (e.g. for naming the entities
a report is about). The caller removes words every sentence shares, such as the entity's own name
and speech verbs, which would otherwise make "'Yes,' said Alice." the most central sentence about
Alice.

Sentences are taken by decreasing score (ties: first seen) while they fit the budget, skipping
near-duplicates (the overlap between chunks repeats sentences and pieces of them); the chosen ones
are returned in their original order, so the summary reads like the source. The first choice is
always kept, cut to the budget if it alone is longer.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Sequence, Set

from driftrag.offline.lexicon import lexicon_for
from driftrag.offline.nlp import AUTO, Language, LanguageResources, content_words, words

DEFAULT_SUMMARY_WORDS = 80
NEAR_DUPLICATE = 0.8  # content-word overlap (over the smaller set) above which a sentence repeats another
INFORMATIVE_WORDS = 6
FRAGMENT_FACTOR = 0.5
_OPENING = "'\"‘“«([—–- "
_ENDINGS = (".", "!", "?", "…", ":", ";", "'", '"', "’", "”", "»", ")")


def split_sentences(texts: Sequence[str], language: Language) -> list[str]:
    """Distinct sentences of the texts, in first-seen order (a trailing cut marker `…` is dropped)."""
    seen: dict[str, None] = {}
    for text in texts:
        for sentence in language.sentences(text.strip()):
            sentence = " ".join(sentence.removesuffix("…").split())
            if sentence:
                seen.setdefault(sentence, None)
    return list(seen)


def _normalised(vector: Counter[str]) -> dict[str, float]:
    norm = math.sqrt(sum(v * v for v in vector.values()))
    return {word: count / norm for word, count in vector.items()} if norm else {}


def is_fragment(sentence: str) -> bool:
    """A piece cut by a chunk boundary: it starts in lower case or does not end like a sentence."""
    stripped = sentence.strip()
    return stripped.lstrip(_OPENING)[:1].islower() or not stripped.endswith(_ENDINGS)


def centrality(sentences: Sequence[str], language: Language, ignore: Set[str] = frozenset()) -> list[float]:
    """Each sentence's score before the caller's bonus (module docstring)."""
    counts = [Counter(w for w in content_words(s, language) if w not in ignore) for s in sentences]
    vectors = [_normalised(c) for c in counts]
    centroid: Counter[str] = Counter()
    for vector in vectors:
        centroid.update(vector)
    unit = _normalised(centroid)
    scores = []
    for sentence, count, vector in zip(sentences, counts, vectors, strict=True):
        score = sum(weight * unit.get(word, 0.0) for word, weight in vector.items())
        score *= min(1.0, sum(count.values()) / INFORMATIVE_WORDS)
        if is_fragment(sentence):
            score *= FRAGMENT_FACTOR
        scores.append(score)
    return scores


def central_sentences(
    sentences: Sequence[str],
    language: Language,
    max_words: int,
    bonus: Callable[[str], float] | None = None,
    ignore: Set[str] = frozenset(),
) -> list[int]:
    """Indices (ascending) of the sentences chosen within `max_words` (see module docstring)."""
    if not sentences:
        return []
    scores = centrality(sentences, language, ignore)
    if bonus is not None:
        scores = [score + bonus(sentence) for score, sentence in zip(scores, sentences, strict=True)]
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    chosen_words: list[set[str]] = []
    used = 0
    for i in order:
        length = len(sentences[i].split())
        if chosen and used + length > max_words:
            continue
        words = set(content_words(sentences[i], language))
        if any(_overlap(words, other) >= NEAR_DUPLICATE for other in chosen_words):
            continue
        chosen.append(i)
        chosen_words.append(words)
        used += length
        if used >= max_words:
            break
    return sorted(chosen)


def _overlap(a: set[str], b: set[str]) -> float:
    """Shared content words over the smaller set: a fragment of a chosen sentence counts as a repeat."""
    return len(a & b) / min(len(a), len(b)) if a and b else float(a == b)


def cut_words(text: str, max_words: int) -> str:
    tokens = text.split()
    return text if len(tokens) <= max_words else " ".join(tokens[:max_words]) + " …"


def shared_words(names: Sequence[str], language: Language) -> frozenset[str]:
    """Words to leave out of centrality: the names' own words and the language's speech verbs."""
    own = {w.casefold() for name in names for w in words(name)}
    return frozenset(own | lexicon_for(language.name).speech_verbs)


def join_sentences(sentences: Sequence[str]) -> str:
    """Sentences joined by spaces; a fragment is followed by ` …` so it does not run into the next one."""
    return " ".join(f"{s} …" if is_fragment(s) and not s.endswith("…") else s for s in sentences)


def summarize_text(texts: Sequence[str], language: Language, max_words: int, ignore: Set[str] = frozenset()) -> str:
    sentences = split_sentences(texts, language)
    chosen = [sentences[i] for i in central_sentences(sentences, language, max_words, ignore=ignore)]
    return cut_words(join_sentences(chosen), max_words)


class OfflineDescriptionSummarizer:
    """`DescriptionSummarizer` by sentence extraction: no model, the words are the sources' own."""

    def __init__(
        self, resources: LanguageResources, *, language: str = AUTO, max_words: int = DEFAULT_SUMMARY_WORDS
    ) -> None:
        self._resources = resources
        self._language = language
        self._max_words = max_words

    async def summarize(self, name: str, descriptions: list[str]) -> str:
        distinct = list(dict.fromkeys(d.strip() for d in descriptions if d.strip()))
        if len(distinct) < 2:
            return distinct[0] if distinct else ""
        # A thread: the first call of a process may have to parse the language model.
        return await asyncio.to_thread(self._summarize, name, distinct)

    def _summarize(self, name: str, descriptions: list[str]) -> str:
        language = self._resources.resolve(self._language, " ".join(descriptions))
        # Relationship items are named "source -> target": both names are shared by every sentence.
        ignore = shared_words(name.split(" -> "), language)
        return summarize_text(descriptions, language, self._max_words, ignore)
