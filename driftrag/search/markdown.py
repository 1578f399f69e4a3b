"""Markdown renderings of query results, for Jupyter (`_repr_markdown_`) and the terminal.

Kept apart from the models so they stay plain data; the models call these lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftrag.models.search import Source
    from driftrag.search.drift.models import DriftResult, FollowUp
    from driftrag.search.global_search.models import GlobalResult
    from driftrag.search.models import QueryResult, SearchResult

EXCERPT_CHARS = 240


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def sources_markdown(sources: Sequence[Source], heading: str = "Sources") -> str:
    if not sources:
        return f"**{heading}:** none"
    lines = [f"**{heading}** ({len(sources)}):", ""]
    for source in sources:
        label = ", ".join(part for part in (source.title, source.page_label()) if part)
        title = f" — {label}" if label else ""
        lines.append(f"- `{source.id}` ({source.kind}{title}): {excerpt(source.text)}")
    return "\n".join(lines)


def degraded_line(result: QueryResult) -> list[str]:
    """One line naming what the query's steps tolerated or replaced (weak models), or nothing."""
    from driftrag.search.models import degraded_summary

    if not result.degraded:
        return []
    return [f"*Degraded: {degraded_summary(result.degraded)}*", ""]


def _head(result: QueryResult, line: str, with_answer: bool) -> list[str]:
    """The question and the answer, or (after a streamed answer) only the summary line, then the
    degraded line when there is one."""
    head = [f"### {result.question}", line, "", result.answer, ""] if with_answer else ["", line, ""]
    return head + degraded_line(result)


def query_result_markdown(result: QueryResult, *, with_answer: bool = True) -> str:
    """Any mode's result: the question, the answer, its cited sources and the run's cost."""
    mode = f"{result.mode} search" + (", extractive" if result.extractive else "")
    parts = [
        *_head(result, f"*{mode} in `{result.kb}`*", with_answer),
        sources_markdown(result.cited_sources(), "Cited sources"),
        "",
        f"*{result.llm_calls} model calls, {result.seconds:.2f} s*",
    ]
    return "\n".join(parts)


def search_result_markdown(result: SearchResult, *, with_answer: bool = True) -> str:
    mode = f"{result.mode} search" + (", extractive" if result.extractive else "")
    line = f"*{mode} in `{result.kb}`; score {result.score}*" if result.score is not None else f"*{mode}*"
    parts = [
        *_head(result, line, with_answer),
        sources_markdown(result.cited_sources(), "Cited sources"),
        "",
        f"*Context: {len(result.context.sources)} sources, {result.context.n_tokens} of "
        f"{result.context.budget_tokens} tokens; {result.usage.chat_calls} model calls, {result.seconds:.2f} s*",
    ]
    return "\n".join(parts)


def follow_up_tree_markdown(result: DriftResult) -> str:
    """The follow-up tree as a nested list: each searched query under the answer that proposed it."""
    children: dict[str, list[FollowUp]] = {}
    for node in result.follow_ups:
        children.setdefault(node.parent_id, []).append(node)
    scores = {answer.id: answer.score for answer in result.intermediate}
    lines: list[str] = []

    def walk(parent: str, indent: int) -> None:
        for node in children.get(parent, []):
            score = f", score {scores[node.answer_id]}" if node.answer_id in scores else ""
            note = f" (≈ “{node.duplicate_of}”)" if node.duplicate_of else ""
            lines.append(f"{'  ' * indent}- [{node.status}{score}] {node.query}{note}")
            if node.answer_id:
                walk(node.answer_id, indent + 1)

    root = "primer" if any(a.id == "primer" for a in result.intermediate) else "question"
    primer_score = f" (score {scores['primer']})" if "primer" in scores else ""
    lines.append(f"- {root}{primer_score}: {result.question}")
    walk(root, 1)
    return "\n".join(lines)


def drift_result_markdown(result: DriftResult, *, with_answer: bool = True) -> str:
    cited = set(result.source_ids)
    mode = "DRIFT search" + (", extractive" if result.extractive else "")
    line = (
        f"*{mode} in `{result.kb}`: {result.llm_calls} model calls, {result.prompt_tokens:,} prompt tokens, "
        f"{result.seconds:.2f} s*"
    )
    parts = [
        *_head(result, line, with_answer),
        sources_markdown([s for s in result.sources if s.id in cited], "Cited sources"),
        "",
        "**Intermediate answers**",
        "",
        "| id | depth | score | reduced | query |",
        "|---|---|---|---|---|",
    ]
    reduced = set(result.reduced_from)
    for answer in result.intermediate:
        query = answer.query.replace("|", "\\|")
        used = "yes" if answer.id in reduced else ""
        parts.append(f"| {answer.id} | {answer.depth} | {answer.score} | {used} | {query} |")
    parts += ["", "**Follow-up tree**", "", follow_up_tree_markdown(result)]
    if result.notes:
        parts += ["", "**Notes**", "", *[f"- {note}" for note in result.notes]]
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in result.seconds_by_phase.items())
    parts += ["", f"*Phases: {phases}*"]
    return "\n".join(parts)


def global_result_markdown(result: GlobalResult, *, with_answer: bool = True) -> str:
    cited = set(result.source_ids)
    mode = "global search" + (", extractive" if result.extractive else "")
    level = result.level
    where = (
        f"level {level.level} ({level.reason}; levels {', '.join(map(str, level.levels))}), "
        f"{level.n_mapped}/{level.n_reports} reports in {level.n_batches} map calls"
        if level
        else "no community reports"
    )
    line = (
        f"*{mode} in `{result.kb}`, {where}: {result.llm_calls} model calls, {result.prompt_tokens:,} prompt "
        f"tokens, {result.seconds:.2f} s*"
    )
    parts = [
        *_head(result, line, with_answer),
        sources_markdown([s for s in result.retrieved_sources() if s.id in cited], "Cited sources"),
        "",
        "**Key points** (best first; * = reduced)",
        "",
        "| id | score | reports | point |",
        "|---|---|---|---|",
    ]
    reduced = set(result.reduced_from)
    for point in sorted(result.points, key=lambda p: (-p.score, p.id)):
        mark = "*" if point.id in reduced else ""
        text = excerpt(point.description, 160).replace("|", "\\|")
        parts.append(f"| {point.id}{mark} | {point.score} | {', '.join(point.report_ids)} | {text} |")
    if result.notes:
        parts += ["", "**Notes**", "", *[f"- {note}" for note in result.notes]]
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in result.seconds_by_phase.items())
    parts += ["", f"*Phases: {phases}*"]
    return "\n".join(parts)
