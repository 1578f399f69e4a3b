"""Whether a final answer is grounded: the check behind `degraded: ungrounded` (issue 34).

Two signs that an answer did not come from the query's sources, both cheap and certain enough to flag:
- it repeats the names of a prompt's worked example (`driftrag.prompts.examples`) that neither the
  question nor a document chunk shown holds: the model copied the example. Reports, summaries and
  descriptions do not count as holding them: they were written by a model, and a copied report is how
  an example's names got into a knowledge base's sources before (issue 52);
- it made citations and every one of them was unknown (handles or ids its context never showed).
An answer without any citation is not flagged: extractive and short answers often cite nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from driftrag.models.search import Source
from driftrag.prompts.examples import example_names_in
from driftrag.search.models import Degradation


def ungrounded(
    answer: str,
    *,
    step: str,
    cited: Sequence[str],
    unknown_citations: int,
    questions: Iterable[str],
    sources: Iterable[Source],
) -> list[Degradation]:
    """The `ungrounded` degradations of `answer` (empty when it looks grounded), given the `questions`
    asked and the `sources` shown to the model."""
    found: list[Degradation] = []
    copied = example_names_in(answer, [*questions, *(source.text for source in sources if source.kind == "chunk")])
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
