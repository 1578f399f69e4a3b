"""`LoopWatch`: tells, as an answer streams in, that the model has started to loop.

A small model that loses the thread writes one phrase over and over ("She is very good. She is very
good. …") or a run of one short unit ("The answer is: The answer is: …", ".12.12.12…") until its output
cap: up to thousands of tokens of nothing, the main cost of a small local model. The client stops such a
stream at the third repetition (`ModelClient`'s `stop_loops`), keeps what came before, and counts the
stop in usage; a JSON answer cut there is repaired by its parser like one cut at its cap.

Two signs, both about the answer's own text (nothing about a task or a language):
- a sentence or quoted string of at least `MIN_PHRASE_WORDS` words seen `REPEATS` times;
- the text ending in a unit of 1 to `MAX_UNIT_CHARS` characters, with a letter or digit in it, repeated
  back to back over at least `MIN_RUN_CHARS` characters (a Markdown rule or a table's `|---|` is no loop).
"""

from __future__ import annotations

import re
from collections import Counter

REPEATS = 3
MIN_PHRASE_WORDS = 5
MAX_UNIT_CHARS = 40
MIN_RUN_CHARS = 80
# Where a phrase ends: sentence punctuation, a line break or a JSON string's quote.
_PHRASE_END = re.compile(r'(?<=[.!?;])\s+|\n+|"')
_WORD = re.compile(r"\w+")
# Only the tail is searched for a run: the answer's last stretch is where a loop shows.
_TAIL_CHARS = MAX_UNIT_CHARS * 8


class LoopWatch:
    """Feed it an answer's pieces in order; `feed` returns True once the answer loops."""

    def __init__(self) -> None:
        self._text = ""
        self._scanned = 0  # where the next phrase starts
        self._phrases: Counter[str] = Counter()
        self.reason: str | None = None

    def feed(self, piece: str) -> bool:
        if self.reason is not None:
            return True
        self._text += piece
        self.reason = self._repeated_phrase() or self._run_at_end()
        return self.reason is not None

    def _repeated_phrase(self) -> str | None:
        # Only phrases that have ended count; the one being written is looked at when it ends.
        ends = list(_PHRASE_END.finditer(self._text, self._scanned))
        for end in ends:
            phrase = self._text[self._scanned : end.start()]
            self._scanned = end.end()
            words = _WORD.findall(phrase.lower())
            if len(words) < MIN_PHRASE_WORDS:
                continue
            key = " ".join(words)
            self._phrases[key] += 1
            if self._phrases[key] >= REPEATS:
                return f"one phrase written {REPEATS} times: {phrase.strip()[:80]!r}"
        return None

    def _run_at_end(self) -> str | None:
        tail = self._text[-_TAIL_CHARS:]
        if len(tail) < MIN_RUN_CHARS:
            return None
        for size in range(1, MAX_UNIT_CHARS + 1):
            unit = tail[-size:]
            if not any(char.isalnum() for char in unit):
                continue  # indentation, rules and table borders are no loop
            copies = MIN_RUN_CHARS // size + (MIN_RUN_CHARS % size > 0)
            if copies >= 2 and tail.endswith(unit * copies):
                return f"a run of {unit!r}"
        return None
