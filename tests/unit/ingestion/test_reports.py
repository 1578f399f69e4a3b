import asyncio
import json

import pytest

from driftrag.errors import ModelError
from driftrag.ingestion.llm_tasks import LLMCommunityReporter, LLMDescriptionSummarizer
from driftrag.ingestion.merge import summarize_all
from driftrag.ingestion.reports import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    build_report_context,
    context_handles,
    generate_reports,
    parse_report,
    report_levels,
)
from driftrag.models.graph import Community, CommunityReport, MergedEntity, MergedRelationship
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.json_answer import InvalidModelOutput
from driftrag.providers.tokens import count_tokens
from tests.fakes.scripted_llm import ScriptedChatModel

PROMPTS = PromptRegistry.load()


def _entity(i: int, words: int = 5) -> MergedEntity:
    return MergedEntity(
        id=f"entity-{i:08x}",
        name=f"Entity {i}",
        normalised_name=f"entity {i}",
        type="PERSON",
        descriptions=[" ".join(f"fact{i}_{k}" for k in range(words))],
        source_chunk_ids=[f"chunk-{i:08x}"],
    )


def _world(words: int = 5):
    """Parent community of 8 entities, two children of 5 and 3, relationships in a chain."""
    entities = [_entity(i, words) for i in range(8)]
    rels = [
        MergedRelationship(
            id=f"relationship-{i:08x}",
            source_id=entities[i].id,
            target_id=entities[i + 1].id,
            descriptions=[f"link {i}"],
            weight=float(i + 1),
        )
        for i in range(7)
    ]
    ids = [e.id for e in entities]

    def community(cid, level, members, parent=None, children=()):
        inside = [r.id for r in rels if r.source_id in members and r.target_id in members]
        chunk_ids = sorted(c for e in entities if e.id in members for c in e.source_chunk_ids)
        return Community(
            id=cid,
            level=level,
            parent_id=parent,
            child_ids=list(children),
            entity_ids=sorted(members),
            relationship_ids=sorted(inside),
            chunk_ids=chunk_ids,
        )

    big = community("community-1-0", 1, ids[:5], "community-0-0")
    small = community("community-1-1", 1, ids[5:], "community-0-0")
    parent = community("community-0-0", 0, ids, None, [big.id, small.id])
    return entities, rels, [parent, big, small]


def _sub_report(community: Community) -> CommunityReport:
    return CommunityReport(
        community_id=community.id,
        level=community.level,
        title=f"About {community.id}",
        summary="short summary",
        rating=5,
    )


def test_report_levels_are_finest_first():
    _, _, communities = _world()
    assert [[c.id for c in level] for level in report_levels(communities)] == [
        ["community-1-0", "community-1-1"],
        ["community-0-0"],
    ]


def test_context_uses_raw_descriptions_when_they_fit():
    entities, rels, (parent, big, small) = _world()
    context = build_report_context(
        parent,
        {e.id: e for e in entities},
        {r.id: r for r in rels},
        {},
        {big.id: _sub_report(big)},
        4000,
        children=[big, small],
    )
    assert len(context.entities) == 8 and len(context.relationships) == 7
    assert context.sub_reports == [] and not context.truncated
    assert "fact3_2" in context.text and context.n_tokens <= 4000


def test_context_substitutes_largest_sub_report_when_over_budget():
    entities, rels, (parent, big, small) = _world(words=60)
    sub_reports = {big.id: _sub_report(big), small.id: _sub_report(small)}
    context = build_report_context(
        parent,
        {e.id: e for e in entities},
        {r.id: r for r in rels},
        {},
        sub_reports,
        1000,
        children=[big, small],
    )
    assert [r.community_id for r in context.sub_reports] == [big.id]
    assert {e.id for e in context.entities} == {e.id for e in entities[5:]}
    # The relationship bridging the two children stays; the ones inside the substituted child go.
    assert {r.id for r in context.relationships} == {
        "relationship-00000004",
        "relationship-00000005",
        "relationship-00000006",
    }
    assert "About community-1-0" in context.text and not context.truncated
    assert context.n_tokens <= 1000


def test_context_truncates_when_substitution_is_not_enough():
    entities, rels, (parent, big, small) = _world(words=100)
    context = build_report_context(
        parent,
        {e.id: e for e in entities},
        {r.id: r for r in rels},
        {},
        {},
        600,
        children=[big, small],
    )
    assert context.truncated and context.n_tokens <= 600 and 0 < len(context.entities) < 8


def test_chunk_excerpts_fill_only_a_share_of_the_budget():
    entities, rels, (parent, _, _) = _world()
    chunks = {e.source_chunk_ids[0]: "word " * 500 for e in entities}
    context = build_report_context(parent, {e.id: e for e in entities}, {r.id: r for r in rels}, chunks, {}, 4000)
    assert 0 < len(context.chunks) <= 3


def test_parse_report_filters_hallucinated_citations_and_coerces():
    entities, rels, (parent, _, _) = _world()
    context = build_report_context(parent, {e.id: e for e in entities}, {r.id: r for r in rels}, {}, {}, 4000)
    raw = "Here you go: " + json.dumps(
        {
            "title": "Chain",
            "summary": "A chain of entities, see entity-00000003.",
            "rating": "12",
            "findings": ["plain string finding", {"summary": "s", "explanation": "e"}, {"explanation": "no summary"}],
            "citations": ["entity-00000001", "entity-deadbeef", "relationship-00000002", "chunk-00000001"],
        }
    )
    report = parse_report(raw, context)
    assert report.rating == 10
    assert report.citations.entity_ids == ["entity-00000001", "entity-00000003"]
    assert report.citations.relationship_ids == ["relationship-00000002"]
    assert report.citations.chunk_ids == []
    assert [f.summary for f in report.findings] == ["plain string finding", "s"]


def test_parse_report_refuses_missing_title_or_rating():
    entities, rels, (parent, _, _) = _world()
    context = build_report_context(parent, {e.id: e for e in entities}, {r.id: r for r in rels}, {}, {}, 4000)
    with pytest.raises(InvalidModelOutput):
        parse_report('{"summary": "x", "rating": 3}', context)
    with pytest.raises(InvalidModelOutput):
        parse_report('{"title": "x", "summary": "x", "rating": "high"}', context)


async def test_generate_reports_bottom_up_with_scripted_model():
    entities, rels, communities = _world()
    model = ScriptedChatModel(extra_citations=["entity-ffffffff"])
    reporter = LLMCommunityReporter(model, PROMPTS)
    reports = await generate_reports(communities, entities, rels, {}, reporter, max_tokens=4000)
    assert [r.community_id for r in reports] == ["community-0-0", "community-1-0", "community-1-1"]
    assert model.calls["report"] == 3
    assert all("entity-ffffffff" not in r.citations.entity_ids for r in reports)
    assert all(r.unknown_citations == 1 for r in reports)  # the id it was never shown is counted, not kept
    assert reports[1].citations.entity_ids == sorted(e.id for e in entities[:5])
    # Children were reported before the parent.
    assert "community-0-0" in model.requests[-1][0]["content"]


async def test_report_calls_wait_for_their_turn_and_their_contexts_are_ready_before_it():
    entities, rels, communities = _world()
    model = ScriptedChatModel()
    reporter = LLMCommunityReporter(model, PROMPTS)
    turn = asyncio.Event()
    ready: list[str] = []

    async def members_ready(community: Community) -> None:
        ready.append(community.id)

    running = asyncio.ensure_future(
        generate_reports(
            communities, entities, rels, {}, reporter, max_tokens=4000, members_ready=members_ready, call_turn=turn.wait
        )
    )
    await asyncio.sleep(0.05)
    # Every context was made (its members ready), and no model call went out before the turn.
    assert sorted(ready) == sorted(c.id for c in communities) and model.calls["report"] == 0
    turn.set()
    reports = await asyncio.wait_for(running, 5)
    assert model.calls["report"] == len(communities) == len(reports)


async def test_reporter_gives_a_failed_report_after_attempts():
    entities, rels, (parent, _, _) = _world()
    context = build_report_context(parent, {e.id: e for e in entities}, {r.id: r for r in rels}, {}, {}, 4000)
    model = ScriptedChatModel(invalid_reports=True)
    report = await LLMCommunityReporter(model, PROMPTS).report(context)
    assert report.failed and report.rating == 0 and report.community_id == "community-0-0"
    assert model.calls == {"report": 1, "repair": 1}


class _BrokenModel:
    async def chat(self, messages, *, json_mode=False, max_tokens=None, schema=None):
        raise ModelError("chat call failed after 4 attempts: HTTP 500")


async def test_a_model_failing_after_its_retries_never_aborts_summaries_or_reports():
    entities, rels, (parent, _, _) = _world()
    context = build_report_context(parent, {e.id: e for e in entities}, {r.id: r for r in rels}, {}, {}, 4000)
    report = await LLMCommunityReporter(_BrokenModel(), PROMPTS).report(context)
    assert report.failed and "HTTP 500" in report.rating_explanation
    # A summary's failure reaches `summarize_all`, which keeps the descriptions as a marked placeholder.
    summaries, failed = await summarize_all(
        [("entity-alice", "Alice", ["A girl.", "Curious."])], LLMDescriptionSummarizer(_BrokenModel(), PROMPTS)
    )
    assert summaries == {"entity-alice": "A girl. Curious."} and failed == {"entity-alice"}


async def test_summarizer_joins_deterministically_and_skips_single():
    model = ScriptedChatModel()
    summarizer = LLMDescriptionSummarizer(model, PROMPTS)
    assert await summarizer.summarize("Alice", ["A girl.", "Curious.", "A girl."]) == "A girl.; Curious."
    assert await summarizer.summarize("Alice", ["only one"]) == "only one"
    assert model.calls == {"summarize": 1}


def test_report_context_shows_short_handles_not_ids():
    entities, rels, (parent, _, _) = _world()
    context = build_report_context(
        parent, {e.id: e for e in entities}, {r.id: r for r in rels}, {"chunk-c0ffee01": "Some text."}, {}, 4000
    )
    assert not any(e.id in context.text for e in context.entities)
    assert not any(r.id in context.text for r in context.relationships)
    handles = context_handles(context)
    for entity in context.entities:
        assert f"\n{handles.handle(entity.id)}|{entity.name}|" in context.text
    assert context.n_tokens == count_tokens(context.text)


def test_parse_report_maps_handles_back_and_counts_miscopied_ones():
    entities, rels, (parent, _, _) = _world()
    context = build_report_context(parent, {e.id: e for e in entities}, {r.id: r for r in rels}, {}, {}, 4000)
    handles = context_handles(context)
    first, second = context.entities[0].id, context.relationships[0].id
    raw = json.dumps(
        {
            "title": "T",
            "summary": f"Inline [{handles.handle(second)}].",
            "rating": 3,
            "rating_explanation": "r",
            "findings": [{"summary": "f", "explanation": "e [S999]"}],
            "citations": [handles.handle(first), "S998", context.entities[1].id],
        }
    )
    report = parse_report(raw, context)
    assert report.citations.entity_ids == sorted([first, context.entities[1].id])
    assert report.citations.relationship_ids == [second]
    assert report.unknown_citations == 2


class _GatedReporter:
    """Reports at once, except the communities in `gated`, which wait for `release`; records each start."""

    def __init__(self, gated: set[str]) -> None:
        self.gated, self.release, self.started = gated, asyncio.Event(), []
        self.contexts: dict[str, str] = {}

    async def report(self, context) -> CommunityReport:
        community = context.community
        self.started.append(community.id)
        self.contexts[community.id] = context.text
        if community.id in self.gated:
            await self.release.wait()
        return _sub_report(community)


async def test_a_parent_report_starts_once_its_own_children_are_done_not_the_whole_level():
    # Rows over the budget: the parents' contexts take sub-community reports, so they wait for them.
    entities, rels, (parent, big, small) = _world(words=200)
    # A second branch: a slow leaf of the finer level under its own parent.
    slow = Community(id="community-1-2", level=1, parent_id="community-0-1", entity_ids=[entities[7].id])
    other = Community(id="community-0-1", level=0, child_ids=[slow.id], entity_ids=[entities[7].id])
    reporter = _GatedReporter(gated={slow.id})
    reporting = asyncio.create_task(
        generate_reports([parent, big, small, slow, other], entities, rels, {}, reporter, max_tokens=200)
    )
    for _ in range(50):
        if parent.id in reporter.started:
            break
        await asyncio.sleep(0)
    # The parent was asked after its children, while the slow leaf of the same level is still running;
    # the slow leaf's parent waits for it.
    assert parent.id in reporter.started and other.id not in reporter.started
    assert reporter.started.index(parent.id) > max(reporter.started.index(big.id), reporter.started.index(small.id))
    reporter.release.set()
    reports = await reporting
    assert reporter.started.index(other.id) > reporter.started.index(slow.id)
    assert [r.community_id for r in reports] == [parent.id, other.id, big.id, small.id, slow.id]


async def test_a_parent_whose_own_rows_fit_starts_without_waiting_for_its_children():
    entities, rels, (parent, big, small) = _world()
    reporter = _GatedReporter(gated={big.id})
    reporting = asyncio.create_task(generate_reports([parent, big, small], entities, rels, {}, reporter))
    for _ in range(50):
        if parent.id in reporter.started:
            break
        await asyncio.sleep(0)
    assert parent.id in reporter.started and big.id in reporter.started  # the child is still running
    reporter.release.set()
    reports = await reporting
    # The same context as with its children's reports at hand: they would not have been used.
    children = {big.id: next(r for r in reports if r.community_id == big.id)}
    children[small.id] = next(r for r in reports if r.community_id == small.id)
    by_id = {e.id: e for e in entities}
    with_children = build_report_context(
        parent, by_id, {r.id: r for r in rels}, {}, children, DEFAULT_MAX_CONTEXT_TOKENS, children=[big, small]
    )
    assert reporter.contexts[parent.id] == with_children.text


async def test_a_failing_report_cancels_the_others():
    entities, rels, (parent, big, small) = _world(words=200)

    class Failing(_GatedReporter):
        async def report(self, context) -> CommunityReport:
            if context.community.id == small.id:
                raise RuntimeError("boom")
            return await super().report(context)

    reporter = Failing(gated={big.id})
    with pytest.raises(RuntimeError, match="boom"):
        await generate_reports([parent, big, small], entities, rels, {}, reporter, max_tokens=200)
    await asyncio.sleep(0)
    assert parent.id not in reporter.started  # its children never both finished; nothing is left running
