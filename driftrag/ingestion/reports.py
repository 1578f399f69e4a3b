"""Community reports: bottom-up order, context building within a token budget, answer parsing.

Context (as in Microsoft GraphRAG): a community's own entity and relationship descriptions are
preferred. When they exceed the budget, the reports of its sub-communities replace their members'
rows, largest sub-community first, until the context fits; if it still does not fit, rows are cut
from the end (sub-reports first, then entities by degree, then relationships by weight). A small
share of the budget left over carries excerpts of the community's source chunks.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from driftrag.ingestion.tasks import CommunityReporter
from driftrag.models.graph import (
    ChunkExcerpt,
    Citations,
    Community,
    CommunityContext,
    CommunityReport,
    Finding,
    MergedEntity,
    MergedRelationship,
    ReportPayload,
)
from driftrag.prompts.examples import example_names_in
from driftrag.providers.handles import Handles
from driftrag.providers.json_answer import InvalidModelOutput, extract_json_object
from driftrag.providers.tokens import count_tokens, get_encoding

DEFAULT_MAX_CONTEXT_TOKENS = 8000
DEFAULT_EXCERPT_SHARE = 0.1
EXCERPT_TOKENS = 150
_CELL = re.compile(r"[|\r\n]+")


def report_levels(communities: Sequence[Community]) -> list[list[Community]]:
    """Communities grouped by level, finest level first: reports of children exist before parents."""
    levels = sorted({c.level for c in communities}, reverse=True)
    return [sorted((c for c in communities if c.level == level), key=lambda c: c.id) for level in levels]


def _cell(text: str) -> str:
    return _CELL.sub(" ", text).strip()


def _entity_row(entity: MergedEntity, handle: str | None = None) -> str:
    description = entity.summary or " ".join(entity.descriptions)
    return f"{handle or entity.id}|{_cell(entity.name)}|{entity.type}|{_cell(description)}"


def _relationship_row(rel: MergedRelationship, names: Mapping[str, str], handle: str | None = None) -> str:
    description = rel.summary or " ".join(rel.descriptions)
    source, target = names.get(rel.source_id, rel.source_id), names.get(rel.target_id, rel.target_id)
    return f"{handle or rel.id}|{_cell(source)}|{_cell(target)}|{rel.type}|{_cell(description)}|{rel.weight:g}"


def _report_row(report: CommunityReport) -> str:
    # Sub-community reports are summaries, not citable sources: no handle.
    findings = " ".join(f.summary for f in report.findings)
    return f"{_cell(report.title)}|{_cell(report.summary)} {_cell(findings)}"


_HEADERS = {
    "reports": "## Sub-community reports\ntitle|summary",
    "entities": "## Entities\nhandle|name|type|description",
    "relationships": "## Relationships\nhandle|source|target|type|description|weight",
    "chunks": "## Source excerpts\nhandle|text",
}


def context_handles(context: CommunityContext) -> Handles:
    """The citation handles of a report context, in the order its rows are rendered."""
    return Handles(
        [e.id for e in context.entities] + [r.id for r in context.relationships] + [c.chunk_id for c in context.chunks]
    )


def _render(community: Community, sections: dict[str, list[str]]) -> str:
    parts = [f"# Community {community.id} (level {community.level}, {len(community.entity_ids)} entities)"]
    parts += [f"{_HEADERS[k]}\n" + "\n".join(rows) for k, rows in sections.items() if rows]
    return "\n\n".join(parts)


def build_report_context(
    community: Community,
    entities: Mapping[str, MergedEntity],
    relationships: Mapping[str, MergedRelationship],
    chunks: Mapping[str, str],
    sub_reports: Mapping[str, CommunityReport],
    max_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
    *,
    children: Sequence[Community] = (),
    excerpt_share: float = DEFAULT_EXCERPT_SHARE,
) -> CommunityContext:
    """The material a reporter gets for one community, within `max_tokens` (see module docstring)."""
    members = [entities[i] for i in community.entity_ids if i in entities]
    rels = [relationships[i] for i in community.relationship_ids if i in relationships]
    degree = Counter(end for r in rels for end in (r.source_id, r.target_id))
    members.sort(key=lambda e: (-degree[e.id], e.name, e.id))
    rels.sort(key=lambda r: (-r.weight, r.id))
    names = {e.id: e.name for e in members}
    cost: dict[str, int] = {}

    def tokens(row: str) -> int:
        if row not in cost:
            cost[row] = count_tokens(row) + 1
        return cost[row]

    def select(covered: set[str]) -> tuple[list[MergedEntity], list[MergedRelationship]]:
        kept_rels = [r for r in rels if not {r.source_id, r.target_id} <= covered]
        return [e for e in members if e.id not in covered], kept_rels

    # Sub-community reports replace their members' rows, largest first, until the rows fit.
    substitutes = sorted((c for c in children if c.id in sub_reports), key=lambda c: (-len(c.entity_ids), c.id))
    used: list[CommunityReport] = []
    covered: set[str] = set()
    kept_entities, kept_rels = members, rels
    overhead = 60
    budget = max_tokens - overhead

    def size() -> int:
        return (
            sum(tokens(_report_row(r)) for r in used)
            + sum(tokens(_entity_row(e)) for e in kept_entities)
            + sum(tokens(_relationship_row(r, names)) for r in kept_rels)
        )

    for child in substitutes:
        if size() <= budget:
            break
        used.append(sub_reports[child.id])
        covered |= set(child.entity_ids)
        kept_entities, kept_rels = select(covered)

    # Still too big: keep rows in priority order while they fit.
    truncated = False
    remaining = budget
    kept: dict[str, list[Any]] = {"reports": [], "entities": [], "relationships": []}
    rows = [("reports", r, _report_row(r)) for r in used]
    rows += [("entities", e, _entity_row(e)) for e in kept_entities]
    rows += [("relationships", r, _relationship_row(r, names)) for r in kept_rels]
    for section, item, row in rows:
        if tokens(row) > remaining:
            truncated = True
            continue
        kept[section].append(item)
        remaining -= tokens(row)

    excerpts = _excerpts(community.chunk_ids, chunks, min(remaining, int(max_tokens * excerpt_share)))
    context = CommunityContext(
        community=community,
        entities=kept["entities"],
        relationships=kept["relationships"],
        chunks=excerpts,
        sub_reports=kept["reports"],
        text="",
        n_tokens=0,
        truncated=truncated,
    )
    # Rows were costed with their full ids above, so the rendering with handles only gets shorter.
    handles = context_handles(context)
    sections = {
        "reports": [_report_row(r) for r in kept["reports"]],
        "entities": [_entity_row(e, handles.handle(e.id)) for e in kept["entities"]],
        "relationships": [_relationship_row(r, names, handles.handle(r.id)) for r in kept["relationships"]],
        "chunks": [f"{handles.handle(c.chunk_id)}|{_cell(c.text)}" for c in excerpts],
    }
    text = _render(community, sections)
    return context.model_copy(update={"text": text, "n_tokens": count_tokens(text)})


def _excerpts(chunk_ids: Sequence[str], chunks: Mapping[str, str], budget: int) -> list[ChunkExcerpt]:
    encoding = get_encoding()
    excerpts = []
    for chunk_id in chunk_ids:
        if chunk_id not in chunks:
            continue
        tokens = encoding.encode(chunks[chunk_id], disallowed_special=())[:EXCERPT_TOKENS]
        if len(tokens) + 20 > budget:
            break
        excerpts.append(ChunkExcerpt(chunk_id=chunk_id, text=encoding.decode(tokens)))
        budget -= len(tokens) + 20
    return excerpts


# --- parsing -------------------------------------------------------------------------------------


def _finding(item: Any) -> Finding | None:
    if isinstance(item, dict):
        summary = str(item.get("summary") or item.get("title") or "").strip()
        return Finding(summary=summary, explanation=str(item.get("explanation") or "").strip()) if summary else None
    text = str(item).strip()
    return Finding(summary=text, explanation="") if text else None


def _rating(value: Any) -> float:
    try:
        number = float(re.findall(r"-?\d+(?:\.\d+)?", str(value))[0])
    except (IndexError, ValueError) as exc:
        raise InvalidModelOutput(f"rating {value!r} is not a number") from exc
    return min(10.0, max(0.0, number))


def failed_report(context: CommunityContext, error: str) -> CommunityReport:
    """What stands for a report the model could not give: its members' names, rating 0, marked failed."""
    names = ", ".join(entity.name for entity in context.entities[:10])
    return CommunityReport(
        community_id=context.community.id,
        level=context.community.level,
        title=f"Community {context.community.id}",
        summary=f"No report: the model failed after its retries. Members: {names}." if names else "No report.",
        rating=0.0,
        rating_explanation=f"not rated: {error[:300]}",
        failed=True,
    )


def parse_report(raw: str, context: CommunityContext) -> CommunityReport:
    """A report from a raw answer: cited handles mapped back to ids; citations of handles or ids the
    context did not show are dropped and counted in `unknown_citations`."""
    obj = extract_json_object(raw)
    findings = obj.get("findings") or []
    try:
        payload = ReportPayload(
            title=str(obj.get("title") or "").strip(),
            summary=str(obj.get("summary") or "").strip(),
            rating=_rating(obj.get("rating")),
            rating_explanation=str(obj.get("rating_explanation") or "").strip(),
            findings=[f for f in map(_finding, findings if isinstance(findings, list) else [findings]) if f],
            citations=[str(c) for c in obj.get("citations") or [] if isinstance(c, str | int)],
        )
    except ValidationError as exc:
        raise InvalidModelOutput(f"the report does not match the schema: {exc.errors()[:3]}") from exc
    # Handles (or ids) cited in the list or inline in the text both count, if the context showed them.
    prose = " ".join([payload.summary, *(f"{f.summary} {f.explanation}" for f in payload.findings)])
    # A report naming a worked example's names that its context does not hold copied it: asked again,
    # then stored as failed, so copied text never enters the knowledge base.
    copied = example_names_in(" ".join([payload.title, prose, payload.rating_explanation]), [context.text])
    if copied:
        raise InvalidModelOutput(
            f"the report repeats {', '.join(copied)}, names of a prompt example, not of the context"
        )
    _, cited, unknown = context_handles(context).resolve(prose, payload.citations)
    citable = set(cited)
    return CommunityReport(
        community_id=context.community.id,
        level=context.community.level,
        title=payload.title,
        summary=payload.summary,
        rating=payload.rating,
        rating_explanation=payload.rating_explanation,
        findings=payload.findings,
        citations=Citations(
            entity_ids=sorted(i for i in citable if i.startswith("entity-")),
            relationship_ids=sorted(i for i in citable if i.startswith("relationship-")),
            chunk_ids=sorted(i for i in citable if i.startswith("chunk-")),
        ),
        unknown_citations=unknown,
    )


async def generate_reports(
    communities: Sequence[Community],
    entities: Sequence[MergedEntity] | Mapping[str, MergedEntity],
    relationships: Sequence[MergedRelationship] | Mapping[str, MergedRelationship],
    chunks: Mapping[str, str],
    reporter: CommunityReporter,
    *,
    max_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
    concurrency: int = 8,
    members_ready: Callable[[Community], Awaitable[None]] | None = None,
    call_turn: Callable[[], Awaitable[None]] | None = None,
) -> list[CommunityReport]:
    """Reports of all communities, each started as soon as what its context needs exists; sorted by
    (level, community id). A parent whose own rows exceed the budget waits for its own children's
    reports (not for the whole finer level); one whose rows fit cannot use them, and starts at once.

    `members_ready` (with mappings the caller keeps current): awaited before a community's context is
    built; once it returns, the community's members in `entities` and `relationships` are final (their
    summaries written), so reports need not wait for every summary of the kb. `call_turn`: awaited after
    the context is built, before the report's model call (the summaries' turn for the model's slots)."""
    by_id = {c.id: c for c in communities}
    entity_map = entities if isinstance(entities, Mapping) else {e.id: e for e in entities}
    relationship_map = relationships if isinstance(relationships, Mapping) else {r.id: r for r in relationships}
    limit = asyncio.Semaphore(max(1, concurrency))
    tasks: dict[str, asyncio.Task[CommunityReport]] = {}

    async def one(community: Community) -> CommunityReport:
        if members_ready is not None:
            await members_ready(community)
        children = [by_id[k] for k in community.child_ids if k in by_id]
        # Sub-community reports replace rows only when the community's own rows exceed the budget (the
        # context is then cut): otherwise the context is the same without them, and need not wait.
        context = build_report_context(community, entity_map, relationship_map, chunks, {}, max_tokens)
        if children and context.truncated:
            child_reports = {child.id: await tasks[child.id] for child in children}
            context = build_report_context(
                community, entity_map, relationship_map, chunks, child_reports, max_tokens, children=children
            )
        if call_turn is not None:
            await call_turn()
        async with limit:
            return await reporter.report(context)

    # Created finest level first, so leaves queue for the concurrency limit before any parent; every task
    # exists before the first one runs, so a parent always finds its children's.
    for level in report_levels(communities):
        for community in level:
            tasks[community.id] = asyncio.create_task(one(community))
    try:
        reports = await asyncio.gather(*tasks.values())
    finally:
        for task in tasks.values():
            task.cancel()  # a failure leaves no report running (a no-op on finished tasks)
    return sorted(reports, key=lambda r: (r.level, r.community_id))
