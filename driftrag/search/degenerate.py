"""Whether a final answer is degenerate: the check behind `degraded: degenerate` (issue 52).

Small models that lose the thread answer in shapes no reader can use, and which the grounding check
(`driftrag.search.grounding`) does not see:
- one phrase written over and over ("The answer is: The answer is: …");
- a run of one short unit (`[x][x][x]…`, `Alice Alice Alice Alice Alice`, "The Queen.12.12.12.12…",
  "1.1.1.1.1."), glued or between punctuation;
- the prompt's description of the answer's keys copied into the answer (`string ≤8000`,
  `"score": integer 0-100`);
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
from driftrag.providers.structured import SHAPE_NOTATION
from driftrag.search.models import Degradation

# A phrase repeated back to back at least this often is a loop, not emphasis.
MIN_PHRASE_REPEATS = 3
# ... when the loop is at least this many words and half the answer, or this long on its own.
MIN_LOOP_WORDS = 6
LONG_LOOP_WORDS = 30
LONGEST_PHRASE_WORDS = 20
# One word, or a unit of 1-8 characters glued to itself ("[x][x]", ".12.12", "1.1."), repeated at least
# this often, over at least RUN_CHARS characters (a unit of one letter: LETTER_RUN_CHARS, past "Zzzzz").
MIN_TOKEN_REPEATS = 5
RUN_CHARS = 10
LETTER_RUN_CHARS = 12
# Digits alone ("1212…") could be a number: only a long run counts.
DIGIT_RUN_CHARS = 16
LONGEST_UNIT = 8
# Every start, so a run is found even inside a longer one: its shortest unit there, repeated.
_UNIT_RUN = re.compile(rf"(?=((.{{1,{LONGEST_UNIT}}}?)\2{{{MIN_TOKEN_REPEATS - 1},}}))", re.DOTALL)
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
            copied_shape(answer),
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
    """One short unit repeated back to back: glued (`[x][x][x]…`, ".12.12.12…", "1.1.1.1.1.") or as
    separate words ("Alice Alice Alice…")."""
    for match in _UNIT_RUN.finditer(answer):
        run, unit = match.group(1), match.group(2)
        if _is_unit_loop(run, unit):
            return f"a run of one token: {unit!r} × {len(run) // len(unit)}"
    words = [w.strip(".,;:!?").casefold() for w in answer.split()]
    run_length = 1
    for previous, word in itertools.pairwise(words):
        run_length = run_length + 1 if word and word == previous else 1
        if run_length >= MIN_TOKEN_REPEATS:
            return f"a run of one token: {word!r} × {run_length}+"
    return None


def _is_unit_loop(run: str, unit: str) -> bool:
    """Whether `unit` repeated as `run` is a model stuck on it, not typography or a number: rules and
    ellipses ("-----", "....") hold no letter or digit, thousands and padding ("1,000,000,000,000,000",
    "1000000") only zeros, and a table's cells ("| 1 | 1 | 1 |") are its own."""
    alnum = [ch for ch in unit if ch.isalnum()]
    if not alnum or all(ch == "0" for ch in alnum) or "|" in unit:
        return False
    if any(ch.isalpha() for ch in unit):
        return len(run) >= (LETTER_RUN_CHARS if len(unit) == 1 else RUN_CHARS)
    if unit.isdigit():
        return len(run) >= DIGIT_RUN_CHARS
    return len(run) >= RUN_CHARS


def lone_citation(answer: str) -> str | None:
    """An answer that is nothing but citation ids."""
    text = answer.strip()
    if text and _CITATIONS_ONLY.match(text):
        return f"only a citation: {text[:40]!r}"
    return None


def copied_shape(answer: str) -> str | None:
    """The prompt's key description (`driftrag.providers.structured.describe_keys`) in the answer: the
    model wrote the shape it was asked for instead of filling it."""
    match = SHAPE_NOTATION.search(answer)
    if match:
        return f"copies the prompt's description of the answer: {match.group(0)!r}"
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
