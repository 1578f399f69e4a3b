"""A query's time-out follows its model unless it is set, and DRIFT stops starting rounds it cannot end in time."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from types import SimpleNamespace

from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.limits import CallLimits
from driftrag.providers.usage import UsageTracker
from driftrag.search.budget import BudgetedChat, QueryBudget
from driftrag.search.deadline import QUERY_WORK_S, QueryDeadline, query_deadline
from driftrag.search.deps import QueryDeps
from driftrag.search.drift.models import FollowUp
from driftrag.search.drift.search import DriftSearch
from driftrag.search.llm_tasks import llm_query_tasks
from driftrag.search.modes import MODES
from driftrag.settings import Settings
from driftrag.workflows.query import deadline_of
from tests.fakes.hashing_embedding import HashingEmbedding
from tests.fakes.scripted_llm import ScriptedChatModel

API = CallLimits(concurrency=8, concurrency_source="default", timeout_s=60.0, timeout_source="DRIFTRAG_LLM_TIMEOUT_S")
LOCAL = CallLimits(
    concurrency=2, concurrency_source="slots", timeout_s=600.0, timeout_source="DRIFTRAG_LOCAL_TIMEOUT_S"
)


def test_a_local_models_queries_get_their_calls_at_their_time_out() -> None:
    settings = Settings(_env_file=None)
    drift = query_deadline(settings, MODES["drift"], LOCAL)
    # HyDE, primer, two rounds of 5 follow-ups 2 at a time (3 waves each), reduce.
    assert drift.timeout_s == 9 * 600 + QUERY_WORK_S
    assert drift.source == "9 model calls in a row × 600 s (DRIFTRAG_LOCAL_TIMEOUT_S) + 60 s"
    assert query_deadline(settings, MODES["basic"], LOCAL).timeout_s == 600 + QUERY_WORK_S
    assert query_deadline(settings, MODES["entity"], LOCAL).timeout_s == 2 * 600 + QUERY_WORK_S
    # The map's 19 calls at most (the budget less the reduce), 2 at a time, then the reduce.
    assert query_deadline(settings, MODES["global"], LOCAL).timeout_s == 11 * 600 + QUERY_WORK_S
    # One slot: DRIFT's rounds are 5 waves each.
    one_slot = replace(LOCAL, concurrency=1)
    assert query_deadline(settings, MODES["drift"], one_slot).timeout_s == 13 * 600 + QUERY_WORK_S


def test_a_model_apis_queries_keep_the_default_unless_their_calls_need_more() -> None:
    settings = Settings(_env_file=None)
    for mode in ("basic", "local", "entity"):
        deadline = query_deadline(settings, MODES[mode], API)
        assert (deadline.timeout_s, deadline.source) == (300.0, "the DRIFTRAG_QUERY_TIMEOUT_S default")
    assert query_deadline(settings, MODES["drift"], API).timeout_s == 5 * 60 + QUERY_WORK_S
    assert query_deadline(settings, MODES["drift"], None).timeout_s == 300.0  # no model: nothing to wait for
    unknown = replace(API, timeout_s=None)  # an LLM whose time-out driftrag does not know
    assert query_deadline(settings, MODES["drift"], unknown).timeout_s == 300.0


def test_a_query_time_out_the_user_set_always_wins() -> None:
    for given in (
        Settings(_env_file=None, query_timeout_s=120),
        Settings(_env_file=None).model_copy(update={"query_timeout_s": 120}),
    ):
        deadline = query_deadline(given, MODES["drift"], LOCAL)
        assert (deadline.timeout_s, deadline.source) == (120, "DRIFTRAG_QUERY_TIMEOUT_S")


def _drift(deadline: QueryDeadline | None) -> DriftSearch:
    settings = Settings(_env_file=None)

    def factory(budget: QueryBudget):
        return llm_query_tasks(BudgetedChat(ScriptedChatModel(), budget), PromptRegistry.load(), settings)

    stores = SimpleNamespace(graph_search=None, search=None, database=None)  # no phase reads them here
    deps = QueryDeps(
        settings=settings,
        stores=stores,
        embedder=HashingEmbedding(),
        usage=UsageTracker(),
        task_factory=factory,
        deadline=deadline,
    )
    return DriftSearch(deps, "kb1", "Who is the Hatter?")


def _round(search: DriftSearch, n: int = 5) -> list[FollowUp]:
    nodes = [
        FollowUp(id=f"d1-{i}", query=f"q{i}", depth=1, parent_id="primer", relevance=0.5, status="searched")
        for i in range(1, n + 1)
    ]
    search.follow_ups.extend(nodes)
    return nodes


def test_a_round_that_would_end_past_the_deadline_is_cut_to_what_fits() -> None:
    # 100 s left of 5460, calls taking up to 40 s: one wave (2 follow-ups, 2 slots) and the reduce fit.
    deadline = QueryDeadline(5460.0, "derived", LOCAL, started=time.monotonic() - 5360.0)
    search = _drift(deadline)
    search.budget.slowest_call_s = 40.0
    runnable = search.start_round(1, _round(search))
    assert [f.id for f in runnable] == ["d1-1", "d1-2"]
    assert [f.status for f in search.follow_ups] == ["searched"] * 2 + ["over_time"] * 3
    [flag] = search.tasks.degraded.items()
    assert (flag.step, flag.reason) == ("follow-up", "time_limit")
    assert "3 follow-up(s) not searched" in flag.detail and any("time-out" in note for note in search.notes)


def test_no_round_starts_when_only_the_reduce_fits() -> None:
    deadline = QueryDeadline(300.0, "set", API, started=time.monotonic() - 250.0)
    search = _drift(deadline)
    search.budget.slowest_call_s = 30.0  # 50 s left: the reduce alone
    assert search.start_round(1, _round(search)) == []
    assert {f.status for f in search.follow_ups} == {"over_time"}


def test_rounds_that_fit_or_an_unmeasured_pace_are_not_cut() -> None:
    fresh = _drift(QueryDeadline(300.0, "set", API))
    fresh.budget.slowest_call_s = 5.0
    assert len(fresh.start_round(1, _round(fresh))) == 5
    cached = _drift(QueryDeadline(300.0, "set", API, started=time.monotonic() - 299.0))
    assert len(cached.start_round(1, _round(cached))) == 5  # every call a cache hit so far: no pace to judge
    undated = _drift(None)  # a search driven directly, without the query front
    undated.budget.slowest_call_s = 1000.0
    assert len(undated.start_round(1, _round(undated))) == 5
    assert not fresh.tasks.degraded.items()


async def test_the_query_front_asks_the_model_for_its_limits() -> None:
    asked = []

    async def limits() -> CallLimits:
        asked.append(True)
        return LOCAL

    deps = replace(_drift(None).deps, call_limits=limits)
    deadline = await deadline_of(deps, "drift")
    assert asked and deadline.timeout_s == 9 * 600 + QUERY_WORK_S and deadline.calls == LOCAL
    assert (await deadline_of(replace(deps, call_limits=None), "drift")).timeout_s == 300.0


class _SlowChat:
    def __init__(self, seconds: float, cached: bool = False) -> None:
        self.seconds, self.cached = seconds, cached

    async def chat(self, messages, **_: object) -> SimpleNamespace:
        await asyncio.sleep(self.seconds)
        return SimpleNamespace(text="x", cached=self.cached, prompt_tokens=3, completion_tokens=1)


async def test_the_budget_keeps_the_pace_of_the_slowest_call_cache_hits_aside() -> None:
    budget = QueryBudget(max_calls=5, max_prompt_tokens=1000)
    await BudgetedChat(_SlowChat(0.05), budget).chat([{"role": "user", "content": "q"}])
    await BudgetedChat(_SlowChat(0.0), budget).chat([{"role": "user", "content": "q"}])
    assert 0.05 <= budget.slowest_call_s < 1
    hit = QueryBudget(max_calls=5, max_prompt_tokens=1000)
    await BudgetedChat(_SlowChat(0.05, cached=True), hit).chat([{"role": "user", "content": "q"}])
    assert hit.slowest_call_s == 0.0
