"""The names of the one fixed, visibly fictional domain that worked examples use, and their detection.

A weak model sometimes answers with a prompt's example instead of the context (issue 34: a small model
"answered" with the example's names; issue 52: copied reports and summaries). The packaged prompts now
describe their answer's keys instead of showing a filled-in example (`driftrag.providers.structured`),
but a user's prompt override, a knowledge base's own guidance, or a model that saw earlier prompts can
still bring such an example back. Examples therefore use names no corpus holds, marked "Placeholder", so
that a copied answer is both obvious to a reader and found by `example_names_in`: extraction drops those
entities, summaries and reports repeating them are asked again and then stored as placeholders, and a
query answer naming them is flagged as ungrounded (`driftrag.search.grounding`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

EXAMPLE_PERSON = "Xel Placeholder"
EXAMPLE_HIRE = "Yan Placeholder"
EXAMPLE_ORG = "Placeholder Guild"
EXAMPLE_CITY = "Placeholder City"
# Every name the examples use, and the marker word itself.
EXAMPLE_NAMES = (EXAMPLE_PERSON, EXAMPLE_HIRE, EXAMPLE_ORG, EXAMPLE_CITY, "Placeholder")


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
