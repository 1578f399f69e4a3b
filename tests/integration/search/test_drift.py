"""DRIFT on the real Neo4j, over a graph ingested by the deterministic test LLM; the query tasks are
answered by the scripted double (over the per-query budget) and embedded by the offline embedder."""

from __future__ import annotations

import json
import re

import pytest
from workflows.events import StepState, StepStateChanged

from driftrag.composition import query_deps
from driftrag.errors import GraphDisabledError, InvalidQueryError, KnowledgeBaseNotFoundError
from driftrag.search.deps import QueryDeps
from driftrag.search.drift.followups import normalise_query
from driftrag.search.drift.models import DriftProgress, DriftResult
from driftrag.search.drift.search import DriftSearch
from driftrag.settings import Settings
from driftrag.store.cypher import search as search_cy
from driftrag.store.graph import GraphStore
from driftrag.store.graph_search import GraphSearchStore
from driftrag.store.neo4j_store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.drift import DriftProgressEvent, DriftStart, DriftWorkflow
from tests.fakes.scripted_llm import QUERY_MARKS, ScriptedChatModel
from tests.support.search import all_ids

QUESTION = "What did Captain Mirela Voss tell Jonas Pell about the Grey Reef?"


def drift_deps(settings: Settings, store, providers, **overrides) -> tuple[QueryDeps, ScriptedChatModel]:
    chat = ScriptedChatModel()
    deps = query_deps(settings.model_copy(update=overrides), neo4j_roles(store), providers, chat)
    return deps, chat


async def run_drift(deps: QueryDeps, kb: str, question: str = QUESTION) -> tuple[DriftResult, list[DriftProgress]]:
    handler = DriftWorkflow(deps).run(start_event=DriftStart(kb=kb, question=question))
    events = [e.progress async for e in handler.stream_events() if isinstance(e, DriftProgressEvent)]
    return await handler, events


async def test_each_follow_up_is_an_event_to_the_local_search_step_and_the_context_serialises(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    deps, _ = drift_deps(search_settings, module_store, search_providers)
    handler = DriftWorkflow(deps).run(start_event=DriftStart(kb=graph_kb, question=QUESTION))
    searched: list[str] = []
    async for event in handler.stream_events(expose_internal=True):
        if isinstance(event, StepStateChanged) and event.name == "local_search":
            if event.step_state == StepState.RUNNING:
                searched.append(event.input_event_name)
    result: DriftResult = await handler
    follow_ups = [a for a in result.intermediate if a.depth >= 1]
    assert len(follow_ups) > 1 and searched == ["FollowUpSearch"] * len(follow_ups)
    # The context holds data only (the live search stays out of it): it serialises as JSON.
    saved = json.loads(json.dumps(handler.ctx.to_dict()))
    state = json.loads(saved["state"]["state_data"])["value"]
    assert saved["state"]["state_type"] == "DriftState" and "search" not in state
    assert state["depth"] == max(a.depth for a in follow_ups)
    assert {f["id"] for f in state["round"]} <= {a.id for a in follow_ups}


async def test_drift_answer_and_every_step_cite_sources_that_exist_in_the_graph(
    search_settings, module_store, search_providers, graph_kb, graph_ids
) -> None:
    deps, chat = drift_deps(search_settings, module_store, search_providers)
    result, _ = await run_drift(deps, graph_kb)
    known = all_ids(graph_ids)
    assert result.answer.strip() and not result.extractive
    assert result.source_ids and set(result.source_ids) <= {s.id for s in result.sources} <= known
    assert result.communities and {c.id for c in result.communities} <= graph_ids["community"]
    assert all(c.rating is None or c.rating > search_settings.drift_min_community_rating for c in result.communities)
    for answer in result.intermediate:
        assert set(answer.source_ids) <= known, answer.id
    assert result.intermediate[0].id == "primer" and result.intermediate[0].depth == 0
    assert {a.depth for a in result.intermediate} == {0, 1, 2}
    assert chat.calls["hyde"] == 1 and chat.calls["primer"] == 1 and chat.calls["reduce"] == 1
    assert result.llm_calls == sum(chat.calls.values()) <= search_settings.query_max_llm_calls
    assert set(result.seconds_by_phase) >= {"hyde", "communities", "primer", "depth-1", "depth-2", "reduce"}
    # The HyDE text is shaped like the best report, and the question leads it.
    assert result.hyde.startswith(QUESTION)
    # Every local step sees the user's question above its own follow-up query.
    steps = [r[0]["content"] for r in chat.requests if r[0]["content"].startswith(QUERY_MARKS["answer"])]
    assert len(steps) == len(result.intermediate) - 1
    assert all(f"<<<USER_QUESTION>>>\n{QUESTION}\n<<<END_USER_QUESTION>>>" in step for step in steps)


async def test_events_stream_in_phase_order(search_settings, module_store, search_providers, graph_kb) -> None:
    deps, _ = drift_deps(search_settings, module_store, search_providers)
    result, events = await run_drift(deps, graph_kb)
    phases = [e.phase for e in events]
    assert phases[:3] == ["hyde", "communities", "primer"] and phases[-1] == "reduce"
    rounds = [e for e in events if e.phase == "depth"]
    assert [e.depth for e in rounds] == [1, 2]
    for depth_event in rounds:
        position = events.index(depth_event)
        searches = [e for e in events if e.phase == "local_search" and e.depth == depth_event.depth]
        assert searches and all(events.index(e) < position for e in searches)
        assert [e.done for e in searches] == list(range(1, len(searches) + 1))
    # Searches of a round finish in any order; each is reported once.
    searched = [e.answer_id for e in events if e.phase == "local_search"]
    assert sorted(searched) == sorted(a.id for a in result.intermediate if a.depth >= 1)


@pytest.mark.parametrize("overrides", [{"drift_followups_per_round": 0}, {"drift_max_depth": 0}])
async def test_zero_follow_ups_finish_cleanly_with_a_reduce(
    search_settings, module_store, search_providers, graph_kb, overrides
) -> None:
    deps, chat = drift_deps(search_settings, module_store, search_providers, **overrides)
    result, events = await run_drift(deps, graph_kb)
    assert [a.id for a in result.intermediate] == ["primer"]
    assert all(f.status != "searched" for f in result.follow_ups)
    assert chat.calls["answer"] == 0 and chat.calls["reduce"] == 1
    assert result.reduced_from == ["primer"] and result.answer.strip()
    assert [e.phase for e in events] == ["hyde", "communities", "primer", "reduce"]


async def test_the_last_rounds_answers_reach_the_reduce(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    deps, chat = drift_deps(search_settings, module_store, search_providers, drift_min_answer_score=0)
    result, _ = await run_drift(deps, graph_kb)
    last = [a for a in result.intermediate if a.depth == search_settings.drift_max_depth]
    assert last, "the test graph must give the last round something to search"
    assert {a.id for a in last} <= set(result.reduced_from)
    reduce_prompt = next(r for r in chat.requests if r[0]["content"].startswith("You combine intermediate answers"))
    for answer in last:
        assert answer.query in reduce_prompt[0]["content"]


async def test_low_scored_answers_are_left_out_of_the_reduce(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    deps, _ = drift_deps(search_settings, module_store, search_providers, drift_min_answer_score=40)
    result, _ = await run_drift(deps, graph_kb)
    scores = {a.id: a.score for a in result.intermediate if a.answer.strip()}
    passing = {answer_id for answer_id, score in scores.items() if score >= 40}
    assert passing and passing != set(scores), f"the test graph should give scores on both sides: {scores}"
    assert set(result.reduced_from) == passing
    assert [scores[i] for i in result.reduced_from] == sorted((scores[i] for i in passing), reverse=True)

    deps, _ = drift_deps(search_settings, module_store, search_providers, drift_min_answer_score=100)
    result, _ = await run_drift(deps, graph_kb)
    best = max(result.intermediate, key=lambda a: a.score)
    assert result.reduced_from == [best.id] and any("best one" in note for note in result.notes)


async def test_near_duplicate_follow_ups_are_dropped(search_settings, module_store, search_providers, graph_kb) -> None:
    deps, _ = drift_deps(search_settings, module_store, search_providers)
    result, _ = await run_drift(deps, graph_kb)
    duplicates = [f for f in result.follow_ups if f.status == "duplicate"]
    assert duplicates, "answers of one round propose overlapping follow-ups in this graph"
    searched = [normalise_query(f.query) for f in result.follow_ups if f.status == "searched"]
    assert len(searched) == len(set(searched))
    for follow_up in duplicates:
        assert follow_up.duplicate_of is not None and follow_up.answer_id is None
    per_round = {}
    for follow_up in result.follow_ups:
        if follow_up.status == "searched":
            per_round[follow_up.depth] = per_round.get(follow_up.depth, 0) + 1
    assert max(per_round.values()) <= search_settings.drift_followups_per_round


@pytest.mark.parametrize("max_calls", [2, 3, 4, 6])
async def test_the_call_budget_is_never_exceeded_and_the_reduce_still_runs(
    search_settings, module_store, search_providers, graph_kb, max_calls
) -> None:
    deps, chat = drift_deps(search_settings, module_store, search_providers, query_max_llm_calls=max_calls)
    result, _ = await run_drift(deps, graph_kb)
    assert sum(chat.calls.values()) == result.llm_calls <= max_calls
    assert chat.calls["reduce"] == 1 and result.answer.strip()
    assert result.budget_exhausted
    assert any(f.status == "over_budget" for f in result.follow_ups) or max_calls <= 3


async def test_the_token_budget_is_never_exceeded(search_settings, module_store, search_providers, graph_kb) -> None:
    deps, chat = drift_deps(
        search_settings, module_store, search_providers, query_max_prompt_tokens=4000, local_context_tokens=800
    )
    result, _ = await run_drift(deps, graph_kb)
    # The cap holds on the tokens counted before each call; the result reports what the provider billed.
    assert sum(deps_budget_tokens(request) for request in chat.requests) <= 4000
    assert result.prompt_tokens == sum(sum(len(m["content"]) for m in r) // 4 for r in chat.requests)
    assert result.budget_exhausted and result.answer.strip()


def deps_budget_tokens(messages: list[dict[str, str]]) -> int:
    from driftrag.search.budget import QueryBudget

    return QueryBudget(max_calls=1, max_prompt_tokens=1).count_prompt_tokens(messages)


async def test_bad_questions_and_unusable_knowledge_bases_fail_clearly(
    search_settings, module_store, search_providers, graph_kb, kb
) -> None:
    deps, chat = drift_deps(search_settings, module_store, search_providers)
    with pytest.raises(InvalidQueryError):
        await run_drift(deps, graph_kb, "   ")
    with pytest.raises(KnowledgeBaseNotFoundError):
        await run_drift(deps, kb)
    await GraphSearchStore(module_store).set_graph_enabled(graph_kb, False)
    try:
        with pytest.raises(GraphDisabledError):
            await run_drift(deps, graph_kb)
    finally:
        await GraphSearchStore(module_store).set_graph_enabled(graph_kb, True)
    assert sum(chat.calls.values()) == 0


async def test_hostile_questions_are_plain_data(search_settings, module_store, search_providers, graph_kb) -> None:
    deps, _ = drift_deps(search_settings, module_store, search_providers, drift_max_depth=1)
    hostile = "Jonas Pell' OR 1=1 // `x` }) MATCH (n) DETACH DELETE n; .*[("
    result, _ = await run_drift(deps, graph_kb, hostile)
    assert result.answer.strip()
    assert re.search(r"\S", result.hyde)


async def test_miscopied_citations_are_counted_in_the_result(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    deps, chat = drift_deps(search_settings, module_store, search_providers)
    chat.extra_citations = ["S99"]  # a handle no context showed, cited by every step
    result, _ = await run_drift(deps, graph_kb)
    steps = [a for a in result.intermediate if a.answer.strip()]
    assert steps and all(a.unknown_citations == 1 for a in steps)
    # The reduce cites it too: its miscopy is counted with the steps' own.
    assert result.unknown_citations == len(steps) + 1
    assert "S99" not in result.source_ids


async def test_drift_holds_the_questions_nearest_chunks_and_ranks_them_in_its_context(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    deps, _ = drift_deps(search_settings, module_store, search_providers)
    result, _ = await run_drift(deps, graph_kb)
    vector = await deps.embedder.aget_query_embedding(QUESTION)
    nearest = await deps.stores.search.search_chunks(graph_kb, vector, search_settings.basic_top_k)
    ranked = [source.id for source in result.retrieved_sources()]
    assert nearest and {chunk.id for chunk in nearest} <= set(ranked)
    assert ranked == result.ranking and len(ranked) == len({s.id for s in result.sources})
    # The question's nearest chunk is weighed by both the vector and the lexical ranking: it leads.
    assert nearest[0].id in ranked[:3]


async def test_the_first_follow_ups_reach_the_neighbours_of_the_top_communities(
    search_settings, module_store, search_providers, graph_kb, graph_ids
) -> None:
    # Offline tasks (no model): the extractive primer builds follow-ups from the question's neighbourhood.
    deps = query_deps(search_settings, neo4j_roles(module_store), search_providers)
    search = DriftSearch(deps, graph_kb, QUESTION)
    await search.hyde()
    await search.find_communities()
    assert search.communities
    communities = {c["id"]: c for c in await GraphStore(module_store).communities(graph_kb)}
    members = {e for c in search.communities for e in communities[c.id]["entity_ids"]}
    neighbourhood = {e.id: e for e in search.neighbourhood}
    assert members <= set(neighbourhood) <= graph_ids["entity"]
    neighbours = [e for e in search.neighbourhood if e.origin.startswith("neighbour:")]
    assert neighbours and not {e.id for e in neighbours} & members
    # Each neighbour is one hop from the entity its origin names (a relationship between the two).
    names = {e.title for e in search.neighbourhood}
    assert all(e.origin.removeprefix("neighbour:") in names for e in neighbours)
    # The first round's proposals name neighbours that no community report of the primer writes.
    selected = await search.prime()
    proposed = [f.query for f in search.follow_ups]
    reports = " ".join(c.text for c in search.communities)
    outside = [e.title for e in neighbours if e.title not in reports]
    assert outside and any(name in query for name in outside for query in proposed), (outside, proposed)
    assert selected and len({f.query for f in selected}) == len(selected)
    # Dedup by target entity: no two searched follow-ups target the same neighbourhood entity set.
    targets = [a.targets for a in search.asked if a.id != "question"]
    assert all(t for t in targets) and len(set(targets)) == len(targets)


async def test_a_query_reads_the_details_of_each_vector_candidate_once(
    search_settings, module_store, search_providers, graph_kb
) -> None:
    # A DRIFT query's vector searches keep finding the same chunks and entities: their details (text,
    # validity) are read once per query, also by the local searches a round runs at the same time.
    details = {search_cy.MATCH_ENABLED_CHUNKS: "chunk", search_cy.MATCH_VALID_ENTITIES: "entity"}
    reads: list[tuple[str, str]] = []

    class RecordingStore(Neo4jStore):
        async def read_value(self, query, **params):
            if query in details:
                reads.extend((details[query], node_id) for node_id in params["ids"])
            return await super().read_value(query, **params)

    store = RecordingStore(search_settings, module_store.driver)
    deps = query_deps(search_settings, neo4j_roles(store), search_providers, ScriptedChatModel())
    assert deps.settings.drift_num_workers > 1
    result, _ = await run_drift(deps, graph_kb)
    assert len([a for a in result.intermediate if a.depth >= 1]) >= 3
    assert {kind for kind, _ in reads} == {"chunk", "entity"}
    assert len(reads) == len(set(reads)), sorted(r for r in reads if reads.count(r) > 1)
