"""Global search without Neo4j: the level choice, batching, the map and reduce budget, citation handles,
and the extractive map and reduce. The store is an in-memory stand-in with hand-made reports; the LLM
tasks answer through the scripted chat double."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace

import pytest

from driftrag.errors import InvalidQueryError
from driftrag.models.search import ReportRow, Source
from driftrag.models.vector_spaces import SHARED, VectorSpace
from driftrag.offline.nlp import LanguageResources
from driftrag.offline.query.global_search import GLOBAL_NOTE, POINTS_PER_REPORT
from driftrag.offline.query.tasks import offline_query_tasks
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.handles import Handles
from driftrag.providers.usage import UsageTracker
from driftrag.search.budget import BudgetedChat, QueryBudget
from driftrag.search.deps import QueryDeps
from driftrag.search.global_search.levels import MapBudget, choose_level, level_reports, pack, report_tokens
from driftrag.search.global_search.models import GlobalPoint
from driftrag.search.global_search.search import GlobalSearch
from driftrag.search.llm_tasks import llm_query_tasks, parse_map, render_points
from driftrag.settings import Settings
from tests.fakes.hashing_embedding import HashingEmbedding
from tests.fakes.scripted_llm import ScriptedChatModel

WIDE = MapBudget(calls=19, tokens=90_000, batch_tokens=8000, overhead_tokens=600)


def report(rid: str, level: int, *, leaf: bool, similarity: float | None = 0.5, words: int = 50, **kw) -> ReportRow:
    text = kw.pop("text", " ".join(f"word{i}" for i in range(words)))
    return ReportRow(
        id=rid,
        title=kw.pop("title", rid),
        full_content=text,
        level=level,
        leaf=leaf,
        similarity=similarity,
        rating=kw.pop("rating", 5.0),
        report=kw.pop("report", None),
    )


def hierarchy() -> list[ReportRow]:
    """Level 0: a (split into a1, a2 at level 1, a1 split again at level 2) and b (a leaf)."""
    return [
        report("community-0-0", 0, leaf=False, similarity=0.9),
        report("community-0-1", 0, leaf=True, similarity=0.2),
        report("community-1-0", 1, leaf=False, similarity=0.4),
        report("community-1-1", 1, leaf=True, similarity=0.8),
        report("community-2-0", 2, leaf=True, similarity=0.6),
        report("community-2-1", 2, leaf=True, similarity=None),
    ]


# --- levels -------------------------------------------------------------------------------------------


def test_a_level_holds_its_communities_and_the_coarser_leaves_nearest_first() -> None:
    reports = hierarchy()
    assert [r.id for r in level_reports(reports, 0)] == ["community-0-0", "community-0-1"]
    assert [r.id for r in level_reports(reports, 1)] == ["community-1-1", "community-1-0", "community-0-1"]
    # Level 2: its own communities, and the leaves of levels 0 and 1; no embedding sorts last.
    assert [r.id for r in level_reports(reports, 2)] == [
        "community-1-1",
        "community-2-0",
        "community-0-1",
        "community-2-1",
    ]


def test_the_default_level_is_the_finest_that_fits_the_budget() -> None:
    choice, batches = choose_level(hierarchy(), WIDE, None, "budget")
    assert (choice.level, choice.reason, choice.fits, choice.levels) == (2, "budget", True, [0, 1, 2])
    assert choice.n_reports == choice.n_mapped == 4 and choice.n_batches == len(batches) == 1
    size = max(report_tokens(r) for r in hierarchy())
    # One call of two reports: level 0 (2 reports) fits, level 1 (3) and level 2 (4) need two calls.
    small = MapBudget(calls=1, tokens=90_000, batch_tokens=2 * size, overhead_tokens=10)
    choice, batches = choose_level(hierarchy(), small, None, "budget")
    assert (choice.level, choice.n_batches, choice.fits) == (0, 1, True)
    # Prompt tokens count too: many calls, but tokens for one batch only.
    tight = MapBudget(calls=10, tokens=2 * size + 10, batch_tokens=2 * size, overhead_tokens=10)
    assert choose_level(hierarchy(), tight, None, "budget")[0].level == 0


def test_when_no_level_fits_the_coarsest_is_cut_to_its_nearest_reports() -> None:
    size = max(report_tokens(r) for r in hierarchy())
    budget = MapBudget(calls=1, tokens=90_000, batch_tokens=size, overhead_tokens=10)
    choice, batches = choose_level(hierarchy(), budget, None, "budget")
    assert (choice.level, choice.fits, choice.n_reports, choice.n_mapped) == (0, False, 2, 1)
    assert [s.id for s in batches[0].context.sources] == ["community-0-0"]  # the nearest one


def test_a_requested_level_is_used_as_is_and_an_unknown_one_is_refused() -> None:
    choice, batches = choose_level(hierarchy(), WIDE, 1, "query")
    assert (choice.level, choice.reason) == (1, "query")
    assert [s.id for b in batches for s in b.context.sources] == ["community-1-1", "community-1-0", "community-0-1"]
    size = max(report_tokens(r) for r in hierarchy())
    cut = MapBudget(calls=1, tokens=90_000, batch_tokens=size, overhead_tokens=10)
    choice, batches = choose_level(hierarchy(), cut, 2, "setting")
    assert (choice.level, choice.reason, choice.fits, choice.n_mapped) == (2, "setting", False, 1)
    with pytest.raises(InvalidQueryError, match="levels are 0, 1, 2"):
        choose_level(hierarchy(), WIDE, 7, "query")
    assert choose_level([], WIDE, None, "budget") is None


def test_batches_are_consecutive_runs_within_the_batch_tokens() -> None:
    reports = [report(f"community-0-{i}", 0, leaf=True, similarity=1 - i / 10, words=40) for i in range(7)]
    size = report_tokens(reports[0])
    budget = MapBudget(calls=99, tokens=10**6, batch_tokens=3 * size, overhead_tokens=0)
    batches, fits = pack(reports, budget, {r.id: report_tokens(r) for r in reports})
    assert fits and [len(b) for b in batches] == [3, 3, 1]
    assert [r.id for b in batches for r in b] == [r.id for r in reports]
    _, contexts = choose_level(reports, budget, None, "budget")
    assert [c.first_rank for c in contexts] == [0, 3, 6]
    assert all(c.context.n_tokens <= budget.batch_tokens for c in contexts)
    # A report longer than a batch is alone in its batch, cut to it.
    long = report("community-0-9", 0, leaf=True, words=2000)
    _, contexts = choose_level([long, *reports[:1]], budget, None, "budget")
    alone = next(c.context for c in contexts if c.context.sources[0].id == long.id)
    assert alone.n_tokens == budget.batch_tokens and len(alone.sources) == 1


# --- handles -----------------------------------------------------------------------------------------


def test_map_points_cite_report_handles_mapped_back_to_ids() -> None:
    handles = Handles(["community-0-1", "community-1-4"])
    raw = json.dumps(
        {
            "points": [
                {"description": "The harbour rules the town [S2].", "score": 80, "citations": ["S2"]},
                {"description": "Unrelated.", "score": "30", "citations": ["S9", "S1"]},
                {"description": "", "score": 10, "citations": []},
            ]
        }
    )
    payload = parse_map(raw, handles, max_points=5)
    assert [p.description for p in payload.points] == ["The harbour rules the town [community-1-4].", "Unrelated."]
    assert [p.citations for p in payload.points] == [["community-1-4"], ["community-0-1"]]
    assert [p.score for p in payload.points] == [80, 30] and payload.unknown_citations == 1
    assert len(parse_map(raw, handles, max_points=1).points) == 1
    point = GlobalPoint(
        id="b1-p1", batch=0, description="Rule [community-1-4].", score=80, report_ids=["community-1-4"]
    )
    shown = render_points([point], handles)
    assert "community-" not in shown and "[S2]" in shown and shown.startswith("[b1-p1] (score 80)")


# --- the search, over an in-memory store -------------------------------------------------------------


class _Reports:
    """The store reads global search makes, over hand-made reports and chunks; the question's own chunk
    search finds nothing here, so the sources are the reports' chunks alone."""

    def __init__(self, reports: Sequence[ReportRow], chunks: dict[str, list[Source]]) -> None:
        self.reports = list(reports)
        self.chunks = chunks

    async def graph_enabled(self, kb: str) -> bool:
        return True

    async def vector_space(self, kb: str) -> VectorSpace:
        return SHARED  # no embedder recorded: any embedder may query

    async def community_reports(self, kb: str, vector: Sequence[float]) -> list[ReportRow]:
        return list(self.reports)

    async def community_chunks(self, kb, community_ids, vector, per_community) -> dict[str, list[Source]]:
        return {c: self.chunks.get(c, [])[:per_community] for c in community_ids}

    async def search_chunks(self, kb, vector, k, *, seen=None) -> list[Source]:
        return []

    async def search_chunks_text(self, kb, text, k, *, seen=None) -> list[Source]:
        return []


THEMES = [
    "The Queen of Hearts orders executions at the croquet ground. The gardeners paint the roses red.",
    "The Hatter and the March Hare hold a tea party. They ask riddles without answers.",
    "The Mock Turtle tells the story of his school under the sea. The Gryphon laughs at him.",
    "The King of Hearts holds a trial about the stolen tarts. The jury writes on slates.",
]


def themed_reports(pad: int = 0) -> tuple[list[ReportRow], dict[str, list[Source]]]:
    """One report per theme; `pad` adds that many filler words (no question term) to each."""
    filler = " ".join(f"filler{k}" for k in range(pad))
    reports = [
        report(f"community-1-{i}", 1, leaf=True, similarity=0.9 - i / 10, text=f"# Theme {i}\n\n{text} {filler}")
        for i, text in enumerate(THEMES)
    ]
    chunks = {
        r.id: [Source(id=f"chunk-{i}{j}", kind="chunk", text=f"{THEMES[i]} Passage {j}.", score=0.5) for j in range(3)]
        for i, r in enumerate(reports)
    }
    return reports, chunks


def deps_for(settings: Settings, store: _Reports, chat: ScriptedChatModel | None) -> QueryDeps:
    stores = SimpleNamespace(graph_search=store, search=store, database=store)
    if chat is None:
        language = LanguageResources()

        def factory(budget: QueryBudget):
            return offline_query_tasks(settings, language)
    else:

        def factory(budget: QueryBudget):
            return llm_query_tasks(BudgetedChat(chat, budget), PromptRegistry.load(), settings)

    return QueryDeps(
        settings=settings, stores=stores, embedder=HashingEmbedding(), usage=UsageTracker(), task_factory=factory
    )


async def run_global(deps: QueryDeps, question: str, level: int | None = None):
    search = GlobalSearch(deps, "kb1", question, community_level=level)
    await search.plan()
    await search.map()
    return await search.reduce()


QUESTION = "What do the Queen, the Hatter, the Mock Turtle and the King do in the story?"


async def test_one_map_call_per_batch_then_one_reduce_and_the_chunks_behind_the_points() -> None:
    reports, chunks = themed_reports()
    settings = Settings(_env_file=None, global_map_context_tokens=500)
    chat = ScriptedChatModel()
    result = await run_global(deps_for(settings, _Reports(reports, chunks), chat), QUESTION)
    assert result.level.n_batches == chat.calls["global_map"] == 1 and chat.calls["global_reduce"] == 1
    assert result.llm_calls == 2
    assert {p.report_ids[0] for p in result.points} == {r.id for r in reports}
    ranked = result.retrieved_sources()
    assert [s.kind for s in ranked[:12]] == ["chunk"] * 12 and ranked[12].kind == "community"
    cited = set(result.source_ids)
    assert {r.id for r in reports} <= cited and cited & {c.id for cs in chunks.values() for c in cs}


async def test_the_map_stops_at_the_calls_left_and_the_reduce_always_runs() -> None:
    reports, chunks = themed_reports(pad=300)
    size = max(report_tokens(r) for r in reports)
    assert size >= 500
    # One report per batch, three calls: two map calls and the reduce, whatever level is asked for.
    settings = Settings(_env_file=None, global_map_context_tokens=size, query_max_llm_calls=3)
    chat = ScriptedChatModel()
    result = await run_global(deps_for(settings, _Reports(reports, chunks), chat), QUESTION, level=1)
    assert (result.level.n_batches, result.level.n_mapped, result.level.fits) == (2, 2, False)
    assert chat.calls["global_map"] == 2 and chat.calls["global_reduce"] == 1 and result.llm_calls == 3
    assert any("do not fit" in note for note in result.notes)
    # The two reports mapped are the nearest to the question.
    assert [r.id for r in result.reports] == ["community-1-0", "community-1-1"]


async def test_the_reduce_keeps_the_best_points_within_the_context_budget() -> None:
    reports, chunks = themed_reports()
    settings = Settings(_env_file=None, local_context_tokens=200)
    chat = ScriptedChatModel()
    search = GlobalSearch(deps_for(settings, _Reports(reports, chunks), chat), "kb1", QUESTION)
    await search.plan()
    search.points = [
        GlobalPoint(id=f"b1-p{n}", batch=0, description="word " * 40, score=score, report_ids=["community-1-0"])
        for n, score in enumerate([10, 90, 0, 50, 70], start=1)
    ]
    result = await search.reduce()
    # Score 0 is no point; each point is ~56 tokens, so three of the four fit in 200, the best first.
    assert result.reduced_from == ["b1-p2", "b1-p5", "b1-p4"]
    assert any("kept the 3 best of 4 key points" in note for note in result.notes)


async def test_offline_global_search_extracts_report_sentences_and_says_so() -> None:
    reports, chunks = themed_reports()
    settings = Settings(_env_file=None)
    result = await run_global(deps_for(settings, _Reports(reports, chunks), None), QUESTION)
    assert result.extractive and result.llm_calls == 0
    assert result.answer.startswith(GLOBAL_NOTE)
    per_report: dict[str, int] = {}
    for point in result.points:
        (report_id,) = point.report_ids
        per_report[report_id] = per_report.get(report_id, 0) + 1
        assert point.description.rsplit(" [", 1)[0] in next(r.full_content for r in reports if r.id == report_id)
    assert max(per_report.values()) <= POINTS_PER_REPORT and len(per_report) == len(reports)
    # Nothing in the reports bears on the question: an extractive answer that says so, no source.
    empty = await run_global(deps_for(settings, _Reports(reports, chunks), None), "Why is a raven like a desk?")
    assert empty.answer.startswith(GLOBAL_NOTE) and "no sentence" in empty.answer and not empty.source_ids


# --- the registry --------------------------------------------------------------------------------------


def test_global_is_a_registered_multi_step_mode_and_the_only_one_taking_a_level() -> None:
    from driftrag.search.modes import MODE_NAMES, get_mode
    from driftrag.search.options import QueryOptions
    from driftrag.workflows.global_search import GlobalWorkflow

    assert "global" in MODE_NAMES and not get_mode("global").single_pass
    assert get_mode("global").workflow_class() is GlobalWorkflow
    level = QueryOptions.of(community_level=2)
    assert get_mode("global").check_options(level) == level
    for mode in MODE_NAMES:
        if mode != "global":
            with pytest.raises(InvalidQueryError, match=f"does not apply to {mode}"):
                get_mode(mode).check_options(level)
            assert get_mode(mode).check_options(QueryOptions()) == QueryOptions()
    with pytest.raises(InvalidQueryError, match="community_level"):
        QueryOptions.of(community_level=-1)


async def test_an_unusable_map_answer_is_asked_again_then_its_batch_is_skipped() -> None:
    reports, chunks = themed_reports()
    settings = Settings(_env_file=None, query_step_retries=0)
    once = ScriptedChatModel(query_misbehave={"global_map": "invalid_once"})
    result = await run_global(deps_for(settings, _Reports(reports, chunks), once), QUESTION)
    assert once.calls["global_map"] == 1 and once.calls["repair"] == 1 and result.points
    never = ScriptedChatModel(query_misbehave={"global_map": "invalid"})
    result = await run_global(deps_for(settings, _Reports(reports, chunks), never), QUESTION)
    assert not result.points and any("batch 1 failed" in note for note in result.notes)
    # Nothing to reduce: the answer says so, and no reduce call is spent.
    assert never.calls["global_reduce"] == 0 and "nothing that answers" in result.answer
