"""The query modes, registered once: the facade, CLI, HTTP API, evaluation, notebooks and streaming all
read `MODES` and switch on nothing.

A mode is one `Mode` entry naming its workflow ("module:Class", imported when first run, so reading the
registry stays cheap for the CLI). The workflow builds its own start event (`start_event`), streams its
progress as `QueryProgressEvent`s and ends with its result, a `QueryResult` that ranks its sources,
renders itself (`markdown`) and says what it adds to the common fields (`extras`). Every mode gets
`QueryRun`'s budget, retries, guard and accounting, and the workflow's timeout.

A single-pass mode (basic, local, entity) only names its retriever (`QueryRun` → `SearchContext`):
`driftrag.workflows.search.SearchWorkflow` runs every such mode with the same steps, and the run's
answerer answers the context. Multi-step modes (DRIFT, global) have their own workflow.

Per-query options (`QueryOptions`, in `driftrag.search.options`) are declared by the modes that read
them; giving one to a mode that does not is an error, not a silent no-op.

Adding a single-pass mode: a module in `driftrag/search/` with its retriever, and one entry below.
Adding a multi-step mode: its search and result (`driftrag/search/<mode>/`), its workflow
(`driftrag/workflows/<mode>.py`), and one entry below.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from driftrag.errors import InvalidQueryError

if TYPE_CHECKING:
    from driftrag.search.deps import QueryDeps
    from driftrag.search.models import SearchContext
    from driftrag.search.options import QueryOptions
    from driftrag.search.run import QueryRun
    from driftrag.settings import Settings

Retriever = Callable[["QueryRun"], Awaitable["SearchContext"]]
SEARCH_WORKFLOW = "driftrag.workflows.search:SearchWorkflow"


def _load(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Mode:
    name: str
    summary: str
    uses_graph: bool = True
    # Single-pass modes: "module:function" of the retriever whose context `QueryRun.answer` answers.
    retriever: str | None = None
    # "module:Class" of the workflow that runs a query of this mode (a single-pass mode: `SearchWorkflow`).
    workflow: str = SEARCH_WORKFLOW
    # The `QueryOptions` fields this mode reads.
    options: frozenset[str] = frozenset()
    # Model calls a query makes one after another (its time-out follows them, `driftrag.search.deadline`):
    # a number, or "module:function" of (settings, concurrency) for a mode whose calls fan out.
    sequential_calls: int | str = 1

    def __post_init__(self) -> None:
        if (self.retriever is None) == (self.workflow == SEARCH_WORKFLOW):
            raise ValueError(f"mode {self.name!r}: name a retriever (single-pass) or its own workflow, not both")

    @property
    def single_pass(self) -> bool:
        return self.retriever is not None

    def retrieve(self) -> Retriever:
        if self.retriever is None:
            raise ValueError(f"{self.name} is a multi-step mode: it has no single retriever")
        return _load(self.retriever)

    def workflow_class(self) -> Any:
        """The workflow class (a `driftrag.workflows.query.QueryWorkflow`)."""
        return _load(self.workflow)

    def sequential_model_calls(self, settings: Settings, concurrency: int) -> int:
        """Model calls a query makes one after another, at most its call budget (`query_max_llm_calls`)."""
        calls = self.sequential_calls
        count = calls if isinstance(calls, int) else _load(calls)(settings, concurrency)
        return max(1, min(count, settings.query_max_llm_calls))

    def check_options(self, options: QueryOptions) -> QueryOptions:
        """`options`, or InvalidQueryError naming an option this mode does not read."""
        extra = sorted(options.given() - self.options)
        if extra:
            raise InvalidQueryError(f"{', '.join(extra)} does not apply to {self.name} search")
        return options


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "drift",
            "HyDE, community reports, rounds of follow-up local searches, one reduced answer.",
            workflow="driftrag.workflows.drift:DriftWorkflow",
            sequential_calls="driftrag.search.drift.search:sequential_calls",
        ),
        Mode(
            "global",
            "Map over the community reports of one level (key points), reduce the best: corpus-wide themes.",
            workflow="driftrag.workflows.global_search:GlobalWorkflow",
            options=frozenset({"community_level"}),
            sequential_calls="driftrag.search.global_search.search:sequential_calls",
        ),
        Mode(
            "local",
            "The question's nearest entities and what the graph holds on them.",
            retriever="driftrag.search.local:retrieve_local",
        ),
        Mode(
            "entity",
            "Chunks linked to the entities the question names, beside vector search.",
            retriever="driftrag.search.entity:retrieve_entity",
            sequential_calls=2,  # the question's entity names, then the answer
        ),
        Mode(
            "basic",
            "Vector search over chunks (works with the graph disabled).",
            uses_graph=False,
            retriever="driftrag.search.basic:retrieve_basic",
        ),
    )
}
MODE_NAMES: tuple[str, ...] = tuple(MODES)
DEFAULT_MODE = "drift"
# For request models: the registered names, as a type.
ModeName = Literal[MODE_NAMES]  # type: ignore[valid-type]


def get_mode(name: str) -> Mode:
    """The registered mode, or InvalidQueryError naming the known ones."""
    if name not in MODES:
        raise InvalidQueryError(f"unknown mode {name!r}; choose one of {', '.join(MODE_NAMES)}")
    return MODES[name]


def start_run(deps: QueryDeps, name: str, kb: str, question: str, **kwargs: Any) -> QueryRun:
    """A `QueryRun` of the named mode (validation only, no I/O)."""
    from driftrag.search.run import QueryRun

    mode = get_mode(name)
    return QueryRun(deps, mode.name, kb, question, uses_graph=mode.uses_graph, **kwargs)
