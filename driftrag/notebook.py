"""Small display helpers for notebooks: tables, answers with their sources, the DRIFT follow-up tree, progress.

Each object renders itself in Jupyter (`_repr_html_` / `_repr_markdown_`) and as plain text everywhere
else (`str()`, a script, a test), so IPython is never imported here and pandas is not needed.

    from driftrag.notebook import AnswerView, FollowUpTree, ProgressPrinter, Table
    result = await rag.drift(kb, question, on_progress=ProgressPrinter())
    AnswerView(result)            # the answer, then every cited source with its id
    FollowUpTree(result)          # primer -> follow-up searches -> their follow-ups, with scores and statuses
    await interactive_graph(rag, kb)  # the graph, coloured by community, searchable (needs driftrag[notebook])
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Protocol

from driftrag.models.search import Source
from driftrag.models.views import GraphView
from driftrag.search.drift.models import DriftProgress, DriftResult, FollowUp
from driftrag.search.models import QueryResult
from driftrag.views.interactive import InteractiveGraph, membership
from driftrag.views.mermaid import escape_label


def _cell(value: Any, limit: int) -> str:
    text = " ".join(str("" if value is None else value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Table:
    """Rows of dicts as an HTML table in Jupyter, fixed-width text elsewhere; long cells are cut."""

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        columns: Sequence[str] | None = None,
        *,
        title: str = "",
        width: int = 60,
    ) -> None:
        self.columns = list(columns or (rows[0].keys() if rows else []))
        self.rows = [[_cell(row.get(column), width) for column in self.columns] for row in rows]
        self.title = title

    def __str__(self) -> str:
        if not self.rows:
            return "\n".join([*([self.title] if self.title else []), "(no rows)"])
        widths = [max([len(c)] + [len(r[i]) for r in self.rows]) for i, c in enumerate(self.columns)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

        lines = [self.title] if self.title else []
        lines += [line(self.columns), line(["-" * w for w in widths])] + [line(row) for row in self.rows]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if not self.rows:
            return f"<p><b>{escape(self.title)}</b> (no rows)</p>"
        head = "".join(f"<th style='text-align:left'>{escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td style='text-align:left'>{escape(v)}</td>" for v in row) + "</tr>"
            for row in self.rows
        )
        caption = f"<caption style='text-align:left'><b>{escape(self.title)}</b></caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cited_sources(result: QueryResult) -> list[Source]:
    """The sources the answer cites, in citation order, whatever the mode."""
    by_id = {source.id: source for source in result.retrieved_sources()}
    return [by_id[source_id] for source_id in result.source_ids if source_id in by_id]


class AnswerView:
    """An answer and the sources it cites (id, kind, title, the start of the text)."""

    def __init__(self, result: QueryResult, *, max_sources: int = 10, snippet: int = 160) -> None:
        self.result = result
        self.sources = cited_sources(result)
        self.max_sources = max_sources
        self.snippet = snippet

    def _source_lines(self) -> list[str]:
        shown = self.sources[: self.max_sources]
        lines = [f"- [{s.id}] {s.kind} {s.title!r}: {_cell(s.text, self.snippet)}" for s in shown]
        if len(self.sources) > len(shown):
            lines.append(f"- … and {len(self.sources) - len(shown)} more")
        return lines

    def header(self) -> str:
        result = self.result
        return (
            f"{result.mode} answer in {result.seconds:.1f} s, {result.llm_calls} model calls, "
            f"{len(self.sources)} cited sources"
        )

    def __str__(self) -> str:
        return "\n".join([self.header(), "", self.result.answer.strip(), "", "Sources:", *self._source_lines()])

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        sources = [line.replace("[", "`", 1).replace("]", "`", 1) for line in self._source_lines()]
        return "\n".join([f"*{self.header()}*", "", self.result.answer.strip(), "", "**Sources**", "", *sources])


class FollowUpTree:
    """The DRIFT follow-up tree: the primer, the follow-up queries it proposed, what became of each
    (searched with its answer's score, or dropped as a duplicate / over the per-round cap / over budget),
    and the follow-ups of each searched query in turn."""

    def __init__(self, result: DriftResult) -> None:
        self.result = result
        self.children: dict[str, list[FollowUp]] = {}
        for node in result.follow_ups:
            self.children.setdefault(node.parent_id, []).append(node)
        self.answers = {answer.id: answer for answer in result.intermediate}

    def _label(self, node: FollowUp) -> str:
        answer = self.answers.get(node.answer_id or "")
        if answer is not None:
            status = f"searched as {answer.id}, score {answer.score}"
        elif node.status == "duplicate":
            status = f"duplicate of {node.duplicate_of!r}"
        else:
            status = node.status.replace("_", " ")
        return f"{node.query}  [{status}; relevance {node.relevance:.2f}]"

    def lines(self) -> list[str]:
        result = self.result
        lines = [f"Q: {result.question}"]
        primer = self.answers.get("primer")
        if primer is not None:
            lines.append(f"└─ primer (score {primer.score}, {len(result.communities)} community reports)")
            roots, indent = self.children.get("primer", []), "   "
        else:  # no report passed the rating threshold: the question was its own first follow-up
            roots, indent = self.children.get("question", []), ""

        def walk(nodes: list[FollowUp], prefix: str) -> None:
            for i, node in enumerate(nodes):
                last = i == len(nodes) - 1
                lines.append(f"{prefix}{'└─' if last else '├─'} {self._label(node)}")
                if node.answer_id:
                    walk(self.children.get(node.answer_id, []), prefix + ("   " if last else "│  "))

        walk(roots, indent)
        return lines

    @property
    def text(self) -> str:
        return "\n".join(self.lines())

    @property
    def mermaid(self) -> str:
        """`graph TD`: searched follow-ups as boxes with their score, dropped ones as grey rounded nodes."""
        out = ["graph TD", f'  question["{escape_label(self.result.question)}"]']
        ids = {"question": "question", "primer": "primer"}
        if "primer" in self.answers:
            out += [f'  primer["primer · score {self.answers["primer"].score}"]', "  question --> primer"]
        dropped: list[str] = []
        for n, node in enumerate(self.result.follow_ups):
            ids[node.id] = f"f{n}"
            answer = self.answers.get(node.answer_id or "")
            if answer is not None:
                out.append(f'  f{n}["{escape_label(node.query)} · score {answer.score}"]')
            else:
                out.append(f'  f{n}("{escape_label(node.query)} · {node.status.replace("_", " ")}")')
                dropped.append(f"f{n}")
        for node in self.result.follow_ups:
            parent = ids.get(node.parent_id)
            if parent is not None:
                out.append(f"  {parent} --> {ids[node.id]}")
        if dropped:
            out += [
                "  classDef dropped fill:#eceff1,stroke:#90a4ae,color:#607d8b",
                f"  class {','.join(dropped)} dropped",
            ]
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.mermaid}```\n"


class ProgressPrinter:
    """An `on_progress` callback that prints ingestion stages and DRIFT phases as they stream in.

    Ingestion `Progress` events arrive per item; a stage is printed when it starts, at each quarter,
    and when it ends, so a long stage shows it is moving without flooding the output."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._printed: dict[str, int] = {}

    def __call__(self, event: Any) -> None:
        elapsed = f"[{time.monotonic() - self.started:6.1f} s]"
        if isinstance(event, DriftProgress):
            # A round's end is phase `depth` itself: "depth 1", not "depth depth 1".
            label = {"local_search": f"local_search depth {event.depth}", "depth": f"depth {event.depth}"}
            score = f" (score {event.score})" if event.score is not None else ""
            print(f"{elapsed} {label.get(event.phase, event.phase)}: {event.message}{score}", flush=True)
            return
        stage, done, total = getattr(event, "stage", "?"), getattr(event, "done", 0), getattr(event, "total", 0)
        quarter = 4 * done // total if total else 4
        if self._printed.get(stage, -1) < quarter:
            self._printed[stage] = quarter
            print(f"{elapsed} {stage}: {done}/{total}", flush=True)


class GraphReader(Protocol):
    """What `interactive_graph` reads: `DriftRAG`'s graph view and communities."""

    async def graph_view(
        self, kb: str, *, community_id: str | None = None, max_nodes: int | None = None
    ) -> GraphView: ...

    async def communities(self, kb: str) -> list[dict[str, Any]]: ...


async def interactive_graph(
    rag: GraphReader,
    kb: str,
    *,
    community_id: str | None = None,
    max_nodes: int | None = 150,
    level: int | None = None,
    height: int = 640,
) -> InteractiveGraph:
    """The kb (or one community) as an interactive pyvis view: nodes coloured by their community at
    `level` (default: the level below the view's community, level 0 for a whole kb), a search box,
    hover details. Needs the optional extra: `pip install 'driftrag[notebook]'` (else
    `OptionalDependencyError` says so). The page needs no network; `write_html(path)` saves it."""
    view = await rag.graph_view(kb, community_id=community_id, max_nodes=max_nodes)
    communities = await rag.communities(kb)
    return InteractiveGraph(view, membership(view, communities, level), height=height)
