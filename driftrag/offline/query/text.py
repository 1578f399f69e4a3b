"""Text handling of the offline query tasks: candidate sentences, key terms, name spans, citations.

Sentences and word lists come from `driftrag.offline.nlp` (NLTK data bundled with llama-index-core),
name mentions from the ingestion side's detector (`driftrag.offline.entities`), with two query-side
additions:

- a question is too short to carry evidence, so a lone word opening it counts as a name when it is
  not a common word of the language ("Gryphon: where does he go?");
- Markdown headings (community report titles and findings) are in Title Case, so a heading gives
  only the names its report's prose also shows ("The Gryphon Takes Alice…" gives Gryphon, Alice).

Names keep their case as written; a leading "the" is not part of a name ("the Queen" gives
"Queen"), but is remembered so follow-up questions can say "the Queen".
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from driftrag.ingestion.merge import normalise_name as name_key
from driftrag.models.search import Source
from driftrag.offline.entities import Mention, SpanDetector, resolve_mentions
from driftrag.offline.lexicon import lexicon_for
from driftrag.offline.nlp import AUTO, Language, LanguageResources, content_words, paragraphs, words

# Sentences shorter than this (in words) are fragments ("CHAPTER X.", "'Come on!'"), not answers.
MIN_SENTENCE_WORDS = 3
# Words that ask for something rather than name it; not key terms of a question.
REQUEST_WORDS = frozenset(
    "describe explain tell list give show summarize summarise compare please according context text story "
    "happen happens happened role".split()
)
_POSSESSIVE = re.compile(r"['’]s$")
_RATING_LINE = re.compile(r"^rating\s*:", re.IGNORECASE)
_ID = re.compile(r"^[a-z]+-[\w.:-]+$")
_CITATION = re.compile(r"\s*\[([^\[\]]+)\]\s*$")


@dataclass(frozen=True)
class QueryLanguage:
    """How questions are read: `setting` is a language name or `auto` (guessed per question)."""

    resources: LanguageResources
    setting: str = AUTO

    async def of(self, question: str) -> Language:
        """The language, parsed off the event loop on first use."""
        return await asyncio.to_thread(self.resources.resolve, self.setting, question)


@functools.cache
def _stemmer(language: str) -> Callable[[str], str]:
    from nltk.stem.snowball import SnowballStemmer

    if language not in SnowballStemmer.languages:
        return str.casefold
    stem = SnowballStemmer(language).stem
    return functools.lru_cache(maxsize=65536)(lambda word: stem(word.casefold()))


def stem_list(text: str, language: Language) -> list[str]:
    """Stems of the content words of `text`, in order and repeated (lexical matching ignores inflection)."""
    stem = _stemmer(language.name)
    return [stem(_POSSESSIVE.sub("", word)) for word in content_words(text, language)]


def stems(text: str, language: Language) -> set[str]:
    """The distinct stems of the content words of `text` (take/takes give one)."""
    return set(stem_list(text, language))


@dataclass(frozen=True)
class Sentence:
    """A candidate answer sentence: its text, the source it came from and where."""

    text: str
    source_id: str
    source_rank: int
    position: int
    kind_rank: int = 0  # the source's place among the context's sources of its kind (chunk, entity, …)


def source_sentences(sources: Sequence[Source], language: Language) -> list[Sentence]:
    """The sentences of each source, in context order.

    Left out: rating lines, and the headings of chunks (a chapter title matches a question's words
    without answering it); a report's headings are its title and finding summaries, so they stay.
    """
    found: list[Sentence] = []
    kinds: Counter[str] = Counter()
    for rank, source in enumerate(sources):
        kind_rank = kinds[source.kind]
        kinds[source.kind] += 1
        position = 0
        for paragraph in paragraphs(source.text):
            if _RATING_LINE.match(paragraph.text) or (paragraph.heading and source.kind == "chunk"):
                continue
            pieces = [paragraph.text] if paragraph.heading else language.sentences(paragraph.text)
            for piece in pieces:
                if len(words(piece)) >= MIN_SENTENCE_WORDS:
                    # One line each (verse keeps its line breaks): an answer shows a sentence as one bullet.
                    found.append(Sentence(" ".join(piece.split()), source.id, rank, position, kind_rank))
                    position += 1
    return found


# --- name spans -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NameSpan:
    name: str
    article: bool  # written "the <name>" where it was first found


def name_spans(texts: Iterable[str], language: Language, *, question: bool = False) -> list[NameSpan]:
    """Proper-noun spans of `texts`, once per name, in order of first appearance (module docstring).

    `question`: the texts are a question, too short to show evidence (see the module docstring).
    """
    lexicon = lexicon_for(language.name)
    detector = SpanDetector(language, lexicon)
    sentences: list[str] = []
    prose: list[Mention] = []
    headings: list[Mention] = []
    for text in texts:
        for paragraph in paragraphs(text):
            for sentence in [paragraph.text] if paragraph.heading else language.sentences(paragraph.text):
                found = detector.mentions(sentence, len(sentences))
                sentences.append(sentence)
                (headings if paragraph.heading else prose).extend(found)
    kept = resolve_mentions(prose, language, lexicon)
    known = {m.key for m in kept}
    if question:
        kept += [
            m
            for m in prose
            if m.initial
            and len(m.words) == 1
            and m.words[0].casefold() not in language.common_words
            and m.key not in known
        ]
    known = {m.key: m for m in kept}
    for heading in headings:
        # Title Case capitalises every word: trust only the names the prose shows.
        if heading.key in known:
            kept.append(heading)
        else:
            inner = f" {heading.key} "
            kept += [m for key, m in known.items() if f" {key} " in inner]
    spans: dict[str, NameSpan] = {}
    for mention in sorted(kept, key=lambda m: (m.sentence, m.start)):
        before = sentences[mention.sentence][: mention.start].rstrip().casefold()
        article = before.endswith("the") and not before[-4:-3].isalnum()
        if mention.key not in spans:
            spans[mention.key] = NameSpan(mention.name, article)
        elif article and not spans[mention.key].article:
            spans[mention.key] = NameSpan(spans[mention.key].name, True)
    return list(spans.values())


def display_name(span: NameSpan) -> str:
    return f"the {span.name}" if span.article else span.name


def key_terms(question: str, language: Language, *, limit: int = 8) -> list[str]:
    """Names first (as written), then the other content words, once each, in question order."""
    names = [span.name for span in name_spans([question], language, question=True)]
    covered = {word.casefold() for name in names for word in words(name)}
    terms = list(names)
    seen = {name_key(name) for name in names}
    for word in content_words(question, language):
        word = _POSSESSIVE.sub("", word)
        if word in covered or word in seen or word in REQUEST_WORDS:
            continue
        seen.add(word)
        terms.append(word)
    return terms[:limit]


def mentioned(name: str, question_names: Sequence[str], question_words: set[str], language: Language) -> bool:
    """Whether the question already mentions `name` ("Queen" covers "Queen of Hearts" and "the Queen")."""
    significant = {w.casefold() for w in words(name)} - language.stopwords
    if significant and significant <= question_words:
        return True
    for asked in question_names:
        asked_words = {w.casefold() for w in words(asked)} - language.stopwords
        if asked_words and asked_words <= significant:
            return True
    return False


# --- citations ------------------------------------------------------------------------------


def cite(ids: Sequence[str]) -> str:
    return f"[{', '.join(ids)}]" if ids else ""


def split_citation(text: str) -> tuple[str, list[str]]:
    """`"Sentence. [chunk-1, entity-2]"` → `("Sentence.", ["chunk-1", "entity-2"])`."""
    match = _CITATION.search(text)
    if match:
        ids = [part.strip() for part in match.group(1).split(",")]
        if ids and all(_ID.match(i) for i in ids):
            return text[: match.start()].rstrip(), ids
    return text.strip(), []
