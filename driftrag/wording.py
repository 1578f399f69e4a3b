"""Counts in messages: `1 document`, `2 documents`, `1 entity`, `3 entities`."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`count` and `noun` in the number it takes; `plural_form` for a noun English does not regularly
    inflect (the regular rules: `-y` after a consonant → `-ies`, `-s -x -z -ch -sh` → `-es`, else `-s`)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural_form or _regular_plural(noun)}"


def _regular_plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in set("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"
