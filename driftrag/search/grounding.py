"""Whether a final answer is grounded: the check behind `degraded: ungrounded` (issue 34).

Two signs that an answer did not come from the query's sources, both cheap and certain enough to flag:
- it repeats the names of a prompt's worked example (`driftrag.prompts.examples`) that neither the
  question nor any source shown holds: the model copied the example;
- it made citations and every one of them was unknown (handles or ids its context never showed).
An answer without any citation is not flagged: extractive and short answers often cite nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from driftrag.prompts.examples import example_names_in
from driftrag.search.models import Degradation


def ungrounded(
    answer: str, *, step: str, cited: Sequence[str], unknown_citations: int, shown: Iterable[str]
) -> list[Degradation]:
    """The `ungrounded` degradations of `answer` (empty when it looks grounded)."""
    found: list[Degradation] = []
    copied = example_names_in(answer, shown)
    if copied:
        found.append(
            Degradation(step=step, reason="ungrounded", detail=f"repeats the prompt example's {', '.join(copied)}")
        )
    if unknown_citations > 0 and not cited:
        found.append(
            Degradation(
                step=step, reason="ungrounded", detail=f"all {unknown_citations} citation(s) are to unknown sources"
            )
        )
    return found
