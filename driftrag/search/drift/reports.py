"""The reports that prime DRIFT, rendered as one context within a token budget (the primer's material)."""

from __future__ import annotations

from collections.abc import Sequence

from driftrag.models.search import Source
from driftrag.providers.tokens import get_encoding
from driftrag.search.models import SearchContext


def reports_context(reports: Sequence[Source], budget_tokens: int) -> SearchContext:
    """Reports in the given (relevance) order, each headed by its id; a report that does not fit is
    cut at the budget rather than dropped, so the best report always reaches the primer."""
    encoding = get_encoding()
    parts: list[str] = []
    kept: list[Source] = []
    used = 0
    for report in reports:
        block = f"[{report.id}] {report.title}\n{report.text}".strip()
        tokens = encoding.encode(block, disallowed_special=())
        room = budget_tokens - used
        if room <= 0:
            break
        if len(tokens) > room:
            tokens = tokens[:room]
            block = encoding.decode(tokens)
        parts.append(block)
        kept.append(report)
        used += len(tokens)
    return SearchContext(
        text="\n\n".join(parts),
        n_tokens=used,
        budget_tokens=budget_tokens,
        sources=kept,
        tokens_by_kind={"community": used},
    )
