"""Which community level global search maps over, and the batches of its reports.

The reports of level L are the communities of level L and the leaves of coarser levels (communities
that were not split that deep), so every level covers the whole graph, as Microsoft GraphRAG's roll-up
does. Within a level, reports are ordered by the cosine of their stored embedding to the question
(reports without one last), then by rating, then id. Batches are consecutive runs of that order, each
at most `global_map_context_tokens` of report text (a longer report is cut to one batch).

A level *fits* the map budget when its batches need no more calls than the map may make and no more
prompt tokens than it may spend, counting each call's prompt besides the reports
(`MapBudget.overhead_tokens`). The default level is the finest one that fits; when none does, the
coarsest level, cut to its reports nearest to the question that fit. A level that was asked for (the
setting or the query) is used as is, cut the same way when it does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from driftrag.errors import InvalidQueryError
from driftrag.models.search import ReportRow
from driftrag.providers.tokens import get_encoding
from driftrag.search.drift.reports import reports_context
from driftrag.search.global_search.models import LevelChoice, LevelReason, ReportBatch


@dataclass(frozen=True)
class MapBudget:
    """What the map may spend: `calls` model calls, `tokens` prompt tokens, `batch_tokens` report tokens
    per call, `overhead_tokens` of prompt per call besides its reports (instructions and question)."""

    calls: int
    tokens: int
    batch_tokens: int
    overhead_tokens: int

    def fits(self, batch_sizes: Sequence[int]) -> bool:
        cost = sum(size + self.overhead_tokens for size in batch_sizes)
        return len(batch_sizes) <= self.calls and cost <= self.tokens


def level_reports(reports: Sequence[ReportRow], level: int) -> list[ReportRow]:
    """The reports of `level` (its communities and coarser leaves), nearest to the question first."""
    chosen = [r for r in reports if r.level == level or (r.level < level and r.leaf)]
    return sorted(
        chosen,
        key=lambda r: (r.similarity is None, -(r.similarity or 0.0), -(r.rating or 0.0), r.id),
    )


def report_tokens(report: ReportRow) -> int:
    """The tokens a report takes in a map batch (as `reports_context` renders it)."""
    block = f"[{report.id}] {report.title}\n{report.full_content}".strip()
    return len(get_encoding().encode(block, disallowed_special=()))


class _Packer:
    """Greedy packing of reports, in order, into batches of at most `batch_tokens` (sizes counted once)."""

    def __init__(self, batch_tokens: int, sizes: dict[str, int]) -> None:
        self.batch_tokens = batch_tokens
        self.sizes = sizes
        self.batches: list[list[ReportRow]] = []
        self.used: list[int] = []

    def add(self, report: ReportRow) -> None:
        size = min(self.sizes[report.id], self.batch_tokens)
        if not self.batches or self.used[-1] + size > self.batch_tokens:
            self.batches.append([])
            self.used.append(0)
        self.batches[-1].append(report)
        self.used[-1] += size

    def undo(self) -> None:
        """Take the last report out again."""
        report = self.batches[-1].pop()
        self.used[-1] -= min(self.sizes[report.id], self.batch_tokens)
        if not self.batches[-1]:
            self.batches.pop()
            self.used.pop()


def pack(
    reports: Sequence[ReportRow], budget: MapBudget, sizes: dict[str, int], *, within: bool = False
) -> tuple[list[list[ReportRow]], bool]:
    """Consecutive runs of `reports` in batches, and whether all of them fit the budget. `within`: stop
    before the first report that would break the budget (packing is greedy, so a prefix packs the same)."""
    packer = _Packer(budget.batch_tokens, sizes)
    for report in reports:
        packer.add(report)
        if within and not budget.fits(packer.used):
            packer.undo()
            return packer.batches, False
    return packer.batches, budget.fits(packer.used)


def choose_level(
    reports: Sequence[ReportRow], budget: MapBudget, requested: int | None, reason: LevelReason
) -> tuple[LevelChoice, list[ReportBatch]] | None:
    """The level and its batches (module docstring); None when the kb has no report."""
    levels = sorted({r.level for r in reports})
    if not levels:
        return None
    if requested is not None and requested not in levels:
        raise InvalidQueryError(
            f"community level {requested} does not exist in this knowledge base; its levels are "
            f"{', '.join(map(str, levels))} (0 = coarsest)"
        )
    sizes = {r.id: report_tokens(r) for r in reports}
    if requested is None:
        reason = "budget"
        fitting = [lvl for lvl in reversed(levels) if pack(level_reports(reports, lvl), budget, sizes)[1]]
        level = fitting[0] if fitting else levels[0]
    else:
        level = requested
    ordered = level_reports(reports, level)
    batches, fits = pack(ordered, budget, sizes)
    if not fits:
        batches, _ = pack(ordered, budget, sizes, within=True)
    choice = LevelChoice(
        level=level,
        reason=reason,
        levels=levels,
        n_reports=len(ordered),
        n_mapped=sum(len(b) for b in batches),
        n_batches=len(batches),
        fits=fits,
    )
    return choice, _contexts(batches, budget.batch_tokens)


def _contexts(batches: Sequence[Sequence[ReportRow]], batch_tokens: int) -> list[ReportBatch]:
    out: list[ReportBatch] = []
    first = 0
    for index, batch in enumerate(batches):
        context = reports_context([r.source() for r in batch], batch_tokens)
        out.append(ReportBatch(index=index, first_rank=first, context=context))
        first += len(batch)
    return out
