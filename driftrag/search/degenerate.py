"""Whether a final answer is degenerate: the check behind `degraded: degenerate` (issue 52).

Small models that lose the thread answer in shapes no reader can use, and which the grounding check
(`driftrag.search.grounding`) does not see:
- one phrase written over and over ("The answer is: The answer is: …");
- a run of one token (`[x][x][x]…`, `Alice Alice Alice Alice Alice`);
- a lone citation id as the whole answer ("S1", "[S2, S3]");
- the prompt's worked example retold, cited to a stored source that is itself a copy of it (a report a
  weak model wrote from the example): its names count as shown only in sources that are not such copies.
Each is cheap, certain enough to flag, and never flags ordinary prose.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from driftrag.prompts.examples import EXAMPLE_CITY, EXAMPLE_HIRE, EXAMPLE_ORG, EXAMPLE_PERSON, example_names_in
from driftrag.search.models import Degradation

# A phrase repeated back to back at least this often is a loop, not emphasis.
MIN_PHRASE_REPEATS = 3
# ... when the loop is at least this many words and half the answer, or this long on its own.
MIN_LOOP_WORDS = 6
LONG_LOOP_WORDS = 30
LONGEST_PHRASE_WORDS = 20
# One word (or a token glued to itself: "[x][x]") repeated at least this often.
MIN_TOKEN_REPEATS = 5
_GLUED_RUN = re.compile(r"(\S{1,12}?)\1{4,}")
# Citation handles and ids as the prompts show them: S1, [S2], E3, chunk ids are not prose either.
_CITATIONS_ONLY = re.compile(r"^[\s\[\](){}.,;:|-]*(?:(?:[A-Z]{1,2}\d+|[a-z]+-[0-9a-f]{4,})[\s\[\](){}.,;:|-]*)+$")
_FULL_EXAMPLE_NAMES = (EXAMPLE_PERSON, EXAMPLE_HIRE, EXAMPLE_ORG, EXAMPLE_CITY)


def degenerate(answer: str, *, step: str, question: str, shown: Iterable[str] = ()) -> list[Degradation]:
    """The `degenerate` degradations of `answer` (empty when none applies); `shown` are the texts the
    model was given (the sources), `question` the user's."""
    details = [
        detail
        for detail in (
            repeated_phrase(answer),
            token_run(answer),
            lone_citation(answer),
            copied_example(answer, question, list(shown)),
        )
        if detail
    ]
    return [Degradation(step=step, reason="degenerate", detail=detail) for detail in details]


def repeated_phrase(answer: str) -> str | None:
    """A phrase of two or more words repeated back to back (most of the answer, or a long loop)."""
    words = answer.split()
    best: tuple[int, int, int] | None = None  # (words covered, phrase length, start)
    for size in range(2, min(LONGEST_PHRASE_WORDS, len(words) // MIN_PHRASE_REPEATS) + 1):
        start = 0
        while start + size * MIN_PHRASE_REPEATS <= len(words):
            phrase = _norm(words[start : start + size])
            repeats = 1
            while _norm(words[start + repeats * size : start + (repeats + 1) * size]) == phrase:
                repeats += 1
            covered = repeats * size
            if repeats >= MIN_PHRASE_REPEATS and (best is None or covered > best[0]):
                best = (covered, size, start)
            start += 1
    if best is None:
        return None
    covered, size, start = best
    if covered >= LONG_LOOP_WORDS or (covered >= MIN_LOOP_WORDS and covered * 2 >= len(words)):
        phrase = " ".join(words[start : start + size])
        return f"repeats one phrase {covered // size} times: {phrase[:60]!r}"
    return None


def token_run(answer: str) -> str | None:
    """One token repeated back to back: glued (`[x][x][x]…`) or as separate words."""
    for match in _GLUED_RUN.finditer(answer):
        unit = match.group(1)
        # Rules and ellipses ("-----", "....") and numbers ("1000000") are not a model stuck on a token.
        if any(ch.isalpha() for ch in unit) and len(match.group(0)) >= 12:
            return f"a run of one token: {unit!r} × {len(match.group(0)) // len(unit)}"
    words = [w.strip(".,;:!?").casefold() for w in answer.split()]
    run = 1
    for previous, word in itertools.pairwise(words):
        run = run + 1 if word and word == previous else 1
        if run >= MIN_TOKEN_REPEATS:
            return f"a run of one token: {word!r} × {run}+"
    return None


def lone_citation(answer: str) -> str | None:
    """An answer that is nothing but citation ids."""
    text = answer.strip()
    if text and _CITATIONS_ONLY.match(text):
        return f"only a citation: {text[:40]!r}"
    return None


def copied_example(answer: str, question: str, shown: Sequence[str]) -> str | None:
    """The worked example's names, shown only by sources that retell the example themselves (a copied
    report): the grounding check lets these through, as the names are in a source."""
    if example_names_in(answer, [question, *shown]):
        return None  # not in any source: the grounding check flags it (`ungrounded`)
    genuine = [text for text in shown if len(_example_full_names(text)) < 2]
    copied = [name for name in example_names_in(answer, [question, *genuine]) if name in _FULL_EXAMPLE_NAMES]
    if copied:
        return f"retells the prompt example's {', '.join(copied)} (its only sources are copies of the example)"
    return None


def _example_full_names(text: str) -> list[str]:
    return [name for name in example_names_in(text) if name in _FULL_EXAMPLE_NAMES]


def _norm(words: Sequence[str]) -> tuple[str, ...]:
    return tuple(word.casefold() for word in words)
