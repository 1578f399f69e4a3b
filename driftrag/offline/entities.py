"""Entity spans without a model: capitalised names, their evidence, and a type guess.

A *span* is a run of capitalised words ("Cheshire Cat", "Mock Turtle"), possibly joined by
connectors ("Queen of Hearts"), never crossing punctuation except the period of an abbreviated
title ("Mr. Smith"). Stopwords, interjections, month/day names, single letters and ALL-CAPS words
(emphasis, headings) are not name words. A possessive followed by a name word stays inside the span
("Saint Orla's Chapel"); otherwise a possessive or contraction (`'s`, `'ll`) ends the span and is
dropped. A leading
determiner is not part of a span: "the Queen" gives "Queen" (and `merge.normalise_name` would drop
a leading "the" anyway).

Capitalisation is evidence of a name only where the language does not impose it. A span that starts
a sentence, a quotation or a line of verse (*initial*) is resolved per chunk (`resolve_mentions`):

- one word: kept if the same name also occurs capitalised at a non-initial position in the chunk, or
  the language's Punkt model saw it capitalised mid-sentence and never in lower case ("Alice");
- several words: kept whole if the first word is not a common word, or the whole span also occurs at
  a non-initial position; else the first word is dropped ("Poor Alice" gives "Alice").

The chunk itself also says which words are common: a word that its running text uses in lower case
("time", "prizes") is a common word *here*, whatever Punkt saw, so

- an initial one-word span that the chunk also writes in lower case is dropped, even if the Punkt
  model only saw it capitalised ("Prizes!" next to "there must be prizes");
- a non-initial span made only of such words is emphasis or personification, not evidence of a name
  ("if you knew Time" next to "just time to begin"), unless some mention of it in the chunk has a
  determiner before it ("the Mouse", with "a mouse" elsewhere), a title, or a type vote ("said Five").

A calendar word on its own ("March", "Monday") is not a name: the language capitalises it anyway.
As the head of a longer span it is ("March Hare").

A span that begins with a title ("Queen Victoria", "Captain Voss") is always kept whole; a title on
its own is a name only after a determiner ("the Queen", not "Yes, Sir").

Type evidence (counted per mention, summed per chunk): a place word as the head noun of a
multi-word span ("Amber Lighthouse", "Saint Orla's Chapel", "Phare Rouge") votes PLACE strongly, an
organisation word there votes ORGANIZATION strongly, else a title or honorific first in the span
("Queen", "Captain Voss") votes PERSON strongly. A speech verb next to the span ("said the Hatter",
"Alice replied") votes PERSON; a locative preposition before it ("in Harbor Town") or a directional
one with a determiner ("to the Lighthouse") votes PLACE weakly (but "said to the Queen" or "looked
at the Cat" votes PERSON weakly). The type with the most votes in a chunk wins if it has at least
`MIN_VOTES` (one speech verb, or two weak hints); else, or on a tie, the entity stays `UNKNOWN`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace

from driftrag.ingestion.merge import normalise_name
from driftrag.models.graph import UNKNOWN_ENTITY_TYPE
from driftrag.offline.lexicon import Lexicon, is_title
from driftrag.offline.nlp import WORD, Language

PERSON, PLACE, ORGANIZATION = "PERSON", "PLACE", "ORGANIZATION"
# A title, place or organisation word inside the span outweighs contextual hints; a speech verb is a
# fair hint on its own, a preposition is not (a type needs MIN_VOTES in a chunk).
STRONG_VOTE, SPEECH_VOTE, WEAK_VOTE, MIN_VOTES = 3, 2, 1, 2

_CONTRACTION = re.compile(r"(?:['’](?:s|ll|re|ve|d|m)|n['’]t)$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_OPENERS = frozenset("'\"‘“«([—–-")


@dataclass(frozen=True)
class Mention:
    """One occurrence of a candidate name in a sentence of a chunk."""

    name: str
    sentence: int
    start: int
    end: int
    initial: bool
    votes: Counter[str] = field(default_factory=Counter)
    listed: bool = False
    determined: bool = False

    @property
    def key(self) -> str:
        return normalise_name(self.name)

    @property
    def words(self) -> list[str]:
        return self.name.split()


@dataclass(frozen=True)
class _Token:
    text: str
    start: int
    end: int

    @property
    def folded(self) -> str:
        return self.text.casefold().replace("’", "'")


def _base(word: str) -> str:
    """The word without a contraction or possessive ending ("I'll" -> "I", "Queen's" -> "Queen")."""
    return _CONTRACTION.sub("", word) or word


class SpanDetector:
    """Finds mentions in the sentences of one language (stateless; one instance per language)."""

    def __init__(self, language: Language, lexicon: Lexicon) -> None:
        self.language = language
        self.lexicon = lexicon

    def is_name_word(self, word: str) -> bool:
        base = _base(word)
        folded = base.casefold()
        if not base[:1].isupper() or folded in self.language.stopwords or folded in self.lexicon.never_names:
            return False
        if len(base) == 1:
            return folded in self.lexicon.titles
        return not base.isupper()

    def mentions(self, sentence: str, index: int, listed: Sequence[str] = ()) -> list[Mention]:
        """Candidate mentions of one sentence; names from `listed` (the kb's examples) always count."""
        found = self._listed(sentence, index, listed)
        taken = [(m.start, m.end) for m in found]
        tokens = [_Token(m.group(), m.start(), m.end()) for m in WORD.finditer(sentence)]
        i = 0
        while i < len(tokens):
            if not self.is_name_word(tokens[i].text):
                i += 1
                continue
            end = self._span_end(sentence, tokens, i)
            span = tokens[i : end + 1]
            overlaps = any(s < span[-1].end and span[0].start < e for s, e in taken)
            # A bare title is a form of address ("Yes, Sir"), unless a determiner makes it a name ("the Queen").
            address = end == i and is_title(span[0].text) and not self._determined(sentence, tokens, i)
            if not overlaps and not address:
                found.append(self._mention(sentence, tokens, i, end, index))
            i = end + 1
        return sorted(found, key=lambda m: m.start)

    def _listed(self, sentence: str, index: int, listed: Sequence[str]) -> list[Mention]:
        mentions = []
        for name in sorted({n.strip() for n in listed if n.strip()}, key=len, reverse=True):
            for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", sentence):
                if not any(m.start < match.end() and match.start() < m.end for m in mentions):
                    mentions.append(Mention(name, index, match.start(), match.end(), initial=False, listed=True))
        return mentions

    def _joined(self, sentence: str, tokens: list[_Token], k: int) -> bool:
        """Token k continues the token before it: only spaces between, or the period of a title."""
        gap = sentence[tokens[k - 1].end : tokens[k].start]
        if not gap.strip():
            return True
        previous = tokens[k - 1].folded
        is_abbreviation = previous in self.lexicon.titles or previous in self.language.abbreviations
        return gap.strip() == "." and is_abbreviation

    def _span_end(self, sentence: str, tokens: list[_Token], start: int) -> int:
        """Index of the last token of the span starting at `start` (connectors only between names)."""
        end = start
        while True:
            if _CONTRACTION.search(tokens[end].text):
                # A possessive inside a name ("Saint Orla's Chapel", "the Widow's Teeth") continues it.
                following = end + 1 < len(tokens) and self._joined(sentence, tokens, end + 1)
                if _POSSESSIVE.search(tokens[end].text) and following and self.is_name_word(tokens[end + 1].text):
                    end += 1
                    continue
                break
            k = end + 1
            while (
                k < len(tokens)
                and k - end <= 2
                and tokens[k].folded in self.lexicon.connectors
                and self._joined(sentence, tokens, k)
            ):
                k += 1
            if k < len(tokens) and self._joined(sentence, tokens, k) and self.is_name_word(tokens[k].text):
                end = k
            else:
                break
        return end

    def _mention(self, sentence: str, tokens: list[_Token], start: int, end: int, index: int) -> Mention:
        span = tokens[start : end + 1]
        parts = [_base(t.text) if j == len(span) - 1 else t.text for j, t in enumerate(span)]
        name = re.sub(r"(['’]) ", r"\1", " ".join(parts))
        gap = sentence[tokens[start - 1].end : tokens[start].start] if start else ""
        # A line break inside a sentence only survives in verse, where every line starts capitalised.
        initial = start == 0 or "\n" in gap or (gap.rstrip() == gap and gap[-1:] in _OPENERS)
        votes = self._votes(sentence, tokens, start, end)
        determined = self._determined(sentence, tokens, start)
        return Mention(name, index, span[0].start, span[-1].end, initial, votes, determined=determined)

    def _determined(self, sentence: str, tokens: list[_Token], start: int) -> bool:
        """A determiner right before token `start` ("the Queen")."""
        return (
            start > 0 and tokens[start - 1].folded in self.lexicon.determiners and self._joined(sentence, tokens, start)
        )

    def _votes(self, sentence: str, tokens: list[_Token], start: int, end: int) -> Counter[str]:
        lex = self.lexicon
        votes: Counter[str] = Counter()
        first = tokens[start].folded.rstrip(".")
        head = first if lex.head_first else _base(tokens[end].text).casefold()
        if end > start and head in lex.place_words:
            votes[PLACE] += STRONG_VOTE
        elif end > start and head in lex.organisation_words:
            votes[ORGANIZATION] += STRONG_VOTE
        elif first in lex.titles:
            votes[PERSON] += STRONG_VOTE
        before = start - 1
        determiner = self._determined(sentence, tokens, start)
        if determiner:
            before -= 1
        if before >= 0 and self._joined(sentence, tokens, before + 1):
            word = tokens[before].folded
            votes[PERSON] += SPEECH_VOTE * (word in lex.speech_verbs)
            votes[PLACE] += WEAK_VOTE * (word in lex.locatives)
            if determiner and word in lex.directionals:
                # "said to the Queen", "looked at the Cat" address someone; "went to the Market" does not.
                verb = tokens[before - 1].folded if before >= 1 else ""
                addressed = verb in lex.speech_verbs or verb in lex.addressing_verbs
                votes[PERSON if addressed else PLACE] += WEAK_VOTE
        after = end + 1
        if after < len(tokens) and self._joined(sentence, tokens, after) and tokens[after].folded in lex.speech_verbs:
            votes[PERSON] += SPEECH_VOTE
        return +votes


def resolve_mentions(
    mentions: Sequence[Mention], language: Language, lexicon: Lexicon, lowercase: Collection[str] = frozenset()
) -> list[Mention]:
    """Apply the chunk-level rules of the module docstring; `lowercase` holds the casefolded words the
    chunk's running text writes in lower case."""
    connectors = lexicon.connectors
    non_initial = {m.key for m in mentions if not m.initial}
    kept = []
    for mention in mentions:
        words = mention.words
        if mention.listed:
            kept.append(mention)
        elif len(words) == 1 and words[0].casefold() in lexicon.calendar_words:
            continue
        elif not mention.initial or mention.key in non_initial or is_title(words[0]):
            kept.append(mention)
        elif len(words) == 1:
            folded = words[0].casefold()
            if folded in language.proper_words and folded not in lowercase:
                kept.append(mention)
        elif words[0].casefold() not in language.common_words:
            kept.append(mention)
        else:
            rest = words[1:]
            while rest and rest[0].casefold() in connectors:
                rest = rest[1:]
            if rest:
                name = " ".join(rest)
                kept.append(replace(mention, name=name, start=mention.end - len(name), initial=False))
    named = {m.key for m in kept if m.listed or m.votes or m.determined or is_title(m.words[0])}
    return [m for m in kept if m.key and (m.key in named or not _all_lowercase(m.words, lowercase))]


def _all_lowercase(words: Sequence[str], lowercase: Collection[str]) -> bool:
    """Every word of a name is one the chunk also writes in lower case."""
    folded = [_base(word).casefold() for word in words]
    return bool(lowercase) and all(word in lowercase for word in folded)


def lowercase_words(sentences: Iterable[str]) -> frozenset[str]:
    """The words the sentences write in lower case (casefolded), the chunk's own evidence of common words."""
    tokens = (m.group() for sentence in sentences for m in WORD.finditer(sentence))
    return frozenset(_base(token).casefold() for token in tokens if token[:1].islower())


def guess_type(votes: Counter[str]) -> str:
    """The type with the most votes, or `UNKNOWN` below `MIN_VOTES` or on a tie."""
    ranked = votes.most_common(2)
    if not ranked or ranked[0][1] < MIN_VOTES or (len(ranked) == 2 and ranked[1][1] == ranked[0][1]):
        return UNKNOWN_ENTITY_TYPE
    return ranked[0][0]
