"""The content of every worked example shown in a prompt: one fixed, visibly fictional domain.

A weak model sometimes answers with the prompt's example instead of the context (issue 34: a small
model "answered" with the example's names). The examples therefore use names no corpus holds, marked
"Placeholder", so such an answer is both obvious to a reader and found by `example_names_in`, which
flags the answer as ungrounded (`driftrag.search.grounding`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

EXAMPLE_PERSON = "Xel Placeholder"
EXAMPLE_HIRE = "Yan Placeholder"
EXAMPLE_ORG = "Placeholder Guild"
EXAMPLE_CITY = "Placeholder City"
EXAMPLE_NICKNAME = "Yanno"
# Every name the examples use, and the marker word itself.
EXAMPLE_NAMES = (EXAMPLE_PERSON, EXAMPLE_HIRE, EXAMPLE_ORG, EXAMPLE_CITY, "Placeholder")

EXAMPLE_ANSWER = f"{EXAMPLE_PERSON} hired {EXAMPLE_HIRE} in 2019 [S2]; the context does not say why."
EXAMPLE_FOLLOW_UP = f"Why did {EXAMPLE_PERSON} hire {EXAMPLE_HIRE}?"
EXAMPLE_REDUCED = f"{EXAMPLE_PERSON} runs the {EXAMPLE_ORG} [S1]; she hired {EXAMPLE_HIRE} [S2]."
EXAMPLE_PASSAGE = (
    f"{EXAMPLE_PERSON} runs the {EXAMPLE_ORG}. In 2019 she hired {EXAMPLE_HIRE}, whom everyone calls "
    f"{EXAMPLE_NICKNAME}."
)


def example_names_in(text: str, allowed: Iterable[str] = ()) -> list[str]:
    """The example names `text` repeats (whole words, any case) that none of the `allowed` texts hold
    (the question, the sources: a corpus that does name them is answered from, not copied)."""
    shown = " ".join(allowed).casefold()
    found = []
    for name in EXAMPLE_NAMES:
        pattern = rf"\b{re.escape(name.casefold())}\b"
        if re.search(pattern, text.casefold()) and not re.search(pattern, shown):
            found.append(name)
    return found
