"""Weak-model answers (issue 34): the tolerant parser, its accounting, the fallbacks, the grounding check."""

from __future__ import annotations

import pytest

from driftrag.errors import ModelError
from driftrag.models.search import Source
from driftrag.offline.query.tasks import offline_query_tasks
from driftrag.prompts.examples import EXAMPLE_ORG, EXAMPLE_PERSON, example_names_in
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.handles import Handles
from driftrag.providers.json_answer import InvalidModelOutput, strip_wrappers
from driftrag.search.budget import BudgetedChat, BudgetExhausted, QueryBudget
from driftrag.search.drift.models import IntermediateAnswer
from driftrag.search.global_search.models import GlobalPoint, ReportBatch
from driftrag.search.grounding import ungrounded
from driftrag.search.llm_tasks import llm_query_tasks, parse_answer, parse_map, parse_reduced, prose_answer
from driftrag.settings import Settings
from tests.fakes.weak_model import WRONG_OBJECT, WeakChat
from tests.support.search_context import SOURCES, context_of

CITABLE = {"chunk-aaa1", "entity-bbb2"}


def weak_tasks(behaviours: dict[str, str], *, fallback: bool = True, chat=None):
    settings = Settings(_env_file=None)
    spare = offline_query_tasks(settings) if fallback else None
    return llm_query_tasks(chat or WeakChat(behaviours), PromptRegistry.load(), settings, spare)


def reasons(tasks) -> list[tuple[str, str]]:
    return [(item.step, item.reason) for item in tasks.degraded.items()]


# --- the parser -----------------------------------------------------------------------------------------


def test_think_blocks_and_fences_are_stripped_and_named() -> None:
    assert strip_wrappers('<think>I should answer {"no": 1}</think>\n{"answer": "a"}') == (
        '{"answer": "a"}',
        ["think_block"],
    )
    # A server that already dropped the opening tag leaves the reasoning and the closing tag.
    assert strip_wrappers('reasoning here</think>{"answer": "a"}') == ('{"answer": "a"}', ["think_block"])
    assert strip_wrappers('<think>\nokay\n</think>\n```json\n{"answer": "a"}\n```') == (
        '{"answer": "a"}',
        ["think_block", "code_fence"],
    )
    assert strip_wrappers('{"answer": "a"}') == ('{"answer": "a"}', [])


@pytest.mark.parametrize(
    ("raw", "score", "tolerated"),
    [
        ('{"answer": "Voss sailed [chunk-aaa1]."}', 50, ["missing_score"]),
        ('{"answer": "Voss sailed [chunk-aaa1].", "score": "high"}', 50, ["malformed_score"]),
        ('{"response": "Voss sailed [chunk-aaa1].", "score": 80}', 80, ["answer_key"]),
        ('{"Answer": "Voss sailed [chunk-aaa1].", "score": 80}', 80, ["answer_key"]),
        ('{"final_answer": "Voss sailed [chunk-aaa1].", "score": 80}', 80, ["answer_key"]),
        ('<think>hmm</think>```json\n{"text": "Voss sailed [chunk-aaa1]."}\n```', 50, None),
    ],
)
def test_an_answer_is_taken_from_what_weak_models_write(raw: str, score: int, tolerated: list[str] | None) -> None:
    payload = parse_answer(raw, CITABLE, 2)
    assert payload.answer == "Voss sailed [chunk-aaa1]." and payload.citations == ["chunk-aaa1"]
    assert payload.score == score
    expected = tolerated or ["think_block", "code_fence", "answer_key", "missing_score"]
    assert payload.tolerated == expected


def test_a_wrong_object_or_an_empty_answer_is_still_unusable() -> None:
    for raw in (WRONG_OBJECT, '{"answer": ""}', '{"answer": {"text": "nested"}}', "no json"):
        with pytest.raises(InvalidModelOutput):
            parse_answer(raw, CITABLE, 1)
    with pytest.raises(InvalidModelOutput):
        parse_reduced(WRONG_OBJECT, CITABLE)
    assert parse_answer('{"answer": 3, "score": 90}', CITABLE, 1).answer == "3"


def test_prose_is_an_answer_with_its_inline_citations_but_not_a_json_object() -> None:
    payload = prose_answer("<think>ok</think>The light failed in the storm [chunk-aaa1].", CITABLE)
    assert payload is not None and payload.answer == "The light failed in the storm [chunk-aaa1]."
    assert payload.citations == ["chunk-aaa1"] and payload.score == 50
    assert payload.tolerated == ["think_block", "prose_answer"]
    assert prose_answer(WRONG_OBJECT, CITABLE) is None
    assert prose_answer("   ", CITABLE) is None


def test_a_map_without_scores_gets_the_neutral_score_counted_once() -> None:
    raw = '{"points": [{"description": "a [S1]", "citations": ["S1"]}, {"description": "b", "citations": []}]}'
    payload = parse_map(raw, Handles(["community-0-1"]), 5)
    assert [p.score for p in payload.points] == [50, 50] and payload.tolerated == ["missing_score"]


# --- the grounding check --------------------------------------------------------------------------------


def test_an_answer_repeating_the_example_or_citing_only_unknown_sources_is_ungrounded() -> None:
    copied = f"{EXAMPLE_PERSON} runs the guild [S1]."
    assert example_names_in(copied) == [EXAMPLE_PERSON, "Placeholder"]
    chunk = Source(id="chunk-aaa1", kind="chunk", title="light.txt", text="the light")
    [flag] = ungrounded(copied, step="answer", cited=["chunk-aaa1"], unknown_citations=0, questions=[], sources=[chunk])
    assert flag.reason == "ungrounded" and EXAMPLE_PERSON in flag.detail
    # A corpus whose documents do name it is answered from, not copied; so is a question that names it.
    real = chunk.model_copy(update={"text": f"{EXAMPLE_PERSON} is real"})
    assert ungrounded(copied, step="answer", cited=[], unknown_citations=0, questions=[], sources=[real]) == []
    asked = [f"Who is {EXAMPLE_PERSON}?"]
    assert ungrounded(copied, step="answer", cited=[], unknown_citations=0, questions=asked, sources=[]) == []
    [unknown] = ungrounded("The keeper [S9].", step="reduce", cited=[], unknown_citations=3, questions=[], sources=[])
    assert "all 3 citation(s)" in unknown.detail
    assert ungrounded("The keeper.", step="answer", cited=[], unknown_citations=0, questions=[], sources=[]) == []


def test_an_example_name_is_flagged_even_when_a_report_or_summary_holds_it() -> None:
    """A report or an entity summary was written by a model: a copied one is how an example's names got
    into a knowledge base's sources (issue 52), so only a document's own chunk vouches for them."""
    copied = f"{EXAMPLE_PERSON} runs the {EXAMPLE_ORG} [S1]."
    written = [
        Source(
            id="community-0-1", kind="community", title="Guild", text=f"# {EXAMPLE_ORG}\n\n{EXAMPLE_PERSON} runs it."
        ),
        Source(id="entity-1", kind="entity", title=EXAMPLE_PERSON, text=f"{EXAMPLE_PERSON}: runs the {EXAMPLE_ORG}."),
    ]
    [flag] = ungrounded(
        copied, step="global reduce", cited=["community-0-1"], unknown_citations=0, questions=["Who?"], sources=written
    )
    assert flag.reason == "ungrounded" and EXAMPLE_PERSON in flag.detail and EXAMPLE_ORG in flag.detail


# --- the tasks: accounting and fallbacks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("missing_score", ("answer", "missing_score")),
        ("response_key", ("answer", "answer_key")),
        ("think", ("answer", "think_block")),
        ("fenced", ("answer", "code_fence")),
        ("prose", ("answer", "prose_answer")),
        ("wrong_object", ("answer", "fallback")),
    ],
)
async def test_every_weak_answer_gives_an_answer_and_says_how(behaviour: str, expected: tuple[str, str]) -> None:
    tasks = weak_tasks({"answer": behaviour})
    payload = await tasks.answerer.answer("When did the Amber Lantern leave Harbor Town?", context_of(SOURCES))
    assert payload.answer.strip()
    assert expected in reasons(tasks)


async def test_without_a_fallback_an_unusable_answer_stays_an_error() -> None:
    tasks = weak_tasks({"answer": "wrong_object"}, fallback=False)
    with pytest.raises(ModelError, match="invalid output after 2 attempt"):
        await tasks.answerer.answer("Who sailed?", context_of(SOURCES))


async def test_a_drift_follow_up_is_dropped_and_the_primer_falls_back_to_no_answer() -> None:
    tasks = weak_tasks({"answer": "wrong_object", "primer": "wrong_object"})
    with pytest.raises(InvalidModelOutput):
        await tasks.answerer.answer("Who is Jonas Pell?", context_of(SOURCES), user_question="Why did Voss sail?")
    primer = await tasks.primer.prime("Who keeps the tide tables?", context_of([SOURCES[2]]), max_follow_ups=2)
    assert primer.answer == "" and primer.follow_up_queries == []
    assert reasons(tasks) == [("follow-up", "dropped"), ("primer", "fallback")]


async def test_reduces_map_and_names_fall_back_to_the_extractive_steps() -> None:
    tasks = weak_tasks({k: "wrong_object" for k in ("reduce", "global_map", "global_reduce", "names")})
    answers = [IntermediateAnswer(id="primer", depth=0, query="q", answer="Voss sails at dawn.", score=60)]
    assert (await tasks.reducer.reduce("When does Voss sail?", answers)).answer.strip()
    batch = ReportBatch(index=0, first_rank=0, context=context_of([SOURCES[2]]))
    mapped = await tasks.global_mapper.map("Who keeps the tide tables?", batch, max_points=3)
    point = GlobalPoint(id="b1-p1", batch=0, description="Hale keeps tide tables.", score=70, report_ids=["c-1"])
    assert (await tasks.global_reducer.reduce("Who keeps the tide tables?", [point])).answer.strip()
    assert mapped.points
    assert await tasks.namer.entity_names("Who is Jonas Pell?") == ["Jonas Pell"]
    steps = [step for step, reason in reasons(tasks) if reason == "fallback"]
    assert steps == ["reduce", "global map", "global reduce", "query entities"]


async def test_the_budget_is_never_a_fallback() -> None:
    budget = QueryBudget(max_calls=1, max_prompt_tokens=100_000)
    tasks = weak_tasks({}, chat=BudgetedChat(WeakChat({"answer": "wrong_object"}), budget))
    with pytest.raises(BudgetExhausted):
        await tasks.answerer.answer("Who sailed?", context_of(SOURCES))
    assert reasons(tasks) == []
