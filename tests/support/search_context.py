"""Sources of each kind (a chunk, an entity, a community) and the search context that holds them, for the
query tasks' tests: what a retriever would hand the answer step."""

from __future__ import annotations

from driftrag.models.search import Source
from driftrag.search.models import SearchContext

SOURCES = [
    Source(
        id="chunk-aaa1",
        kind="chunk",
        title="voyage.txt",
        text="Captain Mirela Voss sailed the Amber Lantern out of Harbor Town before dawn. The tide turned.",
    ),
    Source(
        id="entity-bbb2",
        kind="entity",
        title="Jonas Pell",
        text="Jonas Pell: the first mate, who kept the charts dry beneath an oilskin near the Grey Reef.",
    ),
    Source(
        id="community-0-1",
        kind="community",
        title="Glass Monastery",
        text="# Glass Monastery\n\nBrother Anselm Hale keeps a library of tide tables at the Glass Monastery.",
    ),
]


def context_of(sources: list[Source]) -> SearchContext:
    """A context of `sources`, each under its `[id]` and title."""
    text = "\n\n".join(f"[{s.id}] {s.title}\n{s.text}" for s in sources)
    return SearchContext(text=text, n_tokens=100, budget_tokens=1000, sources=sources)
