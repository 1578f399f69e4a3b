"""Language resources of the offline mode: sentence splitting, word tokens, stopwords, language guess.

Everything comes from the NLTK data that llama-index-core bundles (`_static/nltk_cache`): the
`stopwords` lists and the `punkt_tab` sentence models. The files are read directly (nothing is
downloaded, and NLTK's global data path is left alone); only the Punkt algorithm itself is NLTK's.
Besides its sentence splitter, a Punkt model records how each word of its training text was
capitalised; the words it saw in lower case are this module's lexicon of *common words*, used to
tell a capitalised sentence opener ("Suddenly", "Poor") from a name ("Alice").

Languages are those with both a stopword list and a Punkt model. The language of a text is the one
whose stopwords cover the largest share of its words (`detect_language`); a settings override skips
the guess.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from driftrag.errors import ConfigurationError

AUTO = "auto"
DEFAULT_LANGUAGE = "english"
# Punkt's orthographic flags (nltk.tokenize.punkt._ORTHO_*_LC): seen in lower case somewhere.
_ORTHO_LOWERCASE = (1 << 4) | (1 << 5) | (1 << 6)
_ORTHO_MID_UPPERCASE = 1 << 2

WORD = re.compile(r"(?:[lLdDjJnNsScCmMtT]|[Qq]u)['’](?=[^\W\d_])|[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_MARKDOWN_BLOCK = re.compile(r"^\s*(?:#{1,6}\s|[-*+>]\s|\d+[.)]\s|\|)")
_BLANK_LINES = re.compile(r"\n\s*\n")
_SPACES = re.compile(r"\s+")
_TERMINAL = re.compile(r"[.!?…:;'\"’”»)\]]\s*$")
_OPENING = re.compile(r"^[\s'\"‘“«(\[—–-]*")


def nltk_data_dir() -> Path:
    """llama-index-core's bundled NLTK data, located without importing llama_index (slow)."""
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError("the offline mode needs llama-index-core's bundled NLTK data; it is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "_static" / "nltk_cache"


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True)
class Paragraph:
    """A block of text; `heading` when it looks like a title line rather than prose.

    The lines of verse (most lines capitalised) keep their line breaks, so that a capitalised
    line start can be told from a capitalised word inside a sentence.
    """

    text: str
    heading: bool = False


class Language:
    """One language: stopwords, common words and the Punkt sentence splitter (loaded on first use)."""

    def __init__(self, name: str, stopwords: frozenset[str], punkt_dir: Path) -> None:
        self.name = name
        self.stopwords = stopwords
        self._punkt_dir = punkt_dir
        self._load_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Language({self.name!r})"

    @cached_property
    def _params(self):
        # Imported here: importing nltk costs about a second (it pulls scipy).
        from nltk.tokenize.punkt import PunktParameters

        params = PunktParameters()
        params.abbrev_types = set(_lines(self._punkt_dir / "abbrev_types.txt"))
        params.sent_starters = set(_lines(self._punkt_dir / "sent_starters.txt"))
        params.collocations = {tuple(line.split("\t")) for line in _lines(self._punkt_dir / "collocations.tab")}
        for line in _lines(self._punkt_dir / "ortho_context.tab"):
            word, _, flags = line.partition("\t")
            params.add_ortho_context(word, int(flags))
        return params

    @cached_property
    def _splitter(self):
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        return PunktSentenceTokenizer(self._params)

    @cached_property
    def common_words(self) -> frozenset[str]:
        """Words the Punkt model saw in lower case in its training text (plus the stopwords)."""
        seen = {word for word, flags in self._params.ortho_context.items() if flags & _ORTHO_LOWERCASE}
        return frozenset(seen) | self.stopwords

    @cached_property
    def proper_words(self) -> frozenset[str]:
        """Words the Punkt model saw capitalised inside sentences and never in lower case ("alice")."""
        return frozenset(
            word
            for word, flags in self._params.ortho_context.items()
            if flags & _ORTHO_MID_UPPERCASE and not flags & _ORTHO_LOWERCASE
        )

    @cached_property
    def abbreviations(self) -> frozenset[str]:
        return frozenset(self._params.abbrev_types)

    def load(self) -> Language:
        """Parse the Punkt model now (a second or so), e.g. in a worker thread; concurrent callers wait."""
        with self._load_lock:
            _ = self._splitter, self.common_words, self.proper_words, self.abbreviations
        return self

    def sentences(self, text: str) -> list[str]:
        """Sentences of running text; a fragment that starts in lower case is glued to the one before.

        Punkt ends a sentence at `?'` even in `'Who are you?' said the Caterpillar.`; gluing the
        lower-case remainder back keeps the speaker in the same sentence as the speech.
        """
        sentences: list[str] = []
        for piece in self._splitter.tokenize(text):
            piece = piece.strip()
            if not piece:
                continue
            first = _OPENING.sub("", piece)[:1]
            if sentences and first.islower():
                sentences[-1] = f"{sentences[-1]} {piece}"
            else:
                sentences.append(piece)
        return sentences


def paragraphs(text: str) -> list[Paragraph]:
    """Blocks separated by blank lines; Markdown block lines kept apart; prose lines joined.

    A heading is a Markdown `#` line, or a one-line block of at most 12 words that does not end
    like a sentence (e.g. `CHAPTER I. Down the Rabbit-Hole`). Verse is a block of several lines
    most of which start with a capital letter; its lines stay separated by newlines.
    """
    blocks: list[Paragraph] = []
    for block in _BLANK_LINES.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        lines = [_SPACES.sub(" ", line).strip() for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        if any(_MARKDOWN_BLOCK.match(line) for line in lines):
            for line in lines:
                heading = line.startswith("#")
                blocks.append(Paragraph(text=line.lstrip("#>-*+| ").strip(), heading=heading))
        elif len(lines) == 1:
            line = lines[0]
            blocks.append(Paragraph(text=line, heading=len(line.split()) <= 12 and not _TERMINAL.search(line)))
        else:
            capitalised = sum(_OPENING.sub("", line)[:1].isupper() for line in lines)
            verse = capitalised >= 0.6 * len(lines)
            blocks.append(Paragraph(text=("\n" if verse else " ").join(lines)))
    return [block for block in blocks if block.text]


def words(text: str) -> list[str]:
    """Word tokens (letters, inner apostrophes and hyphens; French elisions such as `l'` apart)."""
    return WORD.findall(text)


def content_words(text: str, language: Language) -> list[str]:
    """Lower-cased words that are not stopwords, elisions (`l'`) or single letters."""
    folded = (token.casefold() for token in words(text))
    return [w for w in folded if len(w) > 1 and w not in language.stopwords and not w.endswith(("'", "’"))]


class LanguageResources:
    """The languages available offline; each is parsed once, on first use, under a lock."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self._data_dir = data_dir or nltk_data_dir()
        self._languages: dict[str, Language] | None = None
        self._lock = threading.Lock()

    def _all(self) -> dict[str, Language]:
        with self._lock:
            if self._languages is None:
                stopwords_dir = self._data_dir / "corpora" / "stopwords"
                punkt_dir = self._data_dir / "tokenizers" / "punkt_tab"
                if not stopwords_dir.is_dir() or not punkt_dir.is_dir():
                    raise ConfigurationError(f"NLTK stopwords or punkt_tab data missing under {self._data_dir}")
                names = sorted(
                    path.name
                    for path in stopwords_dir.iterdir()
                    if path.is_file() and (punkt_dir / path.name / "ortho_context.tab").is_file()
                )
                self._languages = {
                    name: Language(
                        name, frozenset(w.casefold() for w in _lines(stopwords_dir / name)), punkt_dir / name
                    )
                    for name in names
                }
            return self._languages

    @property
    def names(self) -> list[str]:
        return list(self._all())

    def get(self, name: str) -> Language:
        languages = self._all()
        if name not in languages:
            raise ConfigurationError(f"offline language {name!r} is not available; choose from {sorted(languages)}")
        return languages[name]

    def detect(self, text: str) -> Language:
        """The language whose stopwords cover most of the text's words (English on a tie or no words)."""
        return self.get(detect_language(words(text), {n: lang.stopwords for n, lang in self._all().items()}))

    def resolve(self, setting: str, text: str) -> Language:
        """`setting` is a language name, or `auto` to guess it from `text`."""
        language = self.detect(text) if setting == AUTO else self.get(setting)
        return language.load()


def detect_language(tokens: Iterable[str], stopwords: dict[str, frozenset[str]]) -> str:
    folded = [token.casefold() for token in tokens]
    if not folded:
        return DEFAULT_LANGUAGE
    scores = {name: sum(token in words for token in folded) for name, words in stopwords.items()}
    best = max(scores.values())
    if best == 0 or scores.get(DEFAULT_LANGUAGE) == best:
        return DEFAULT_LANGUAGE
    return min(name for name, score in scores.items() if score == best)
