"""The per-query budget refuses calls before they are sent, and counts what the provider reports."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import pytest

from driftrag.search.budget import BudgetedChat, BudgetExhausted, QueryBudget


@dataclass
class Reply:
    text: str = "ok"
    prompt_tokens: int = 0
    completion_tokens: int = 3
    cached: bool = False


class CountingChat:
    """TEST DOUBLE of the chat model: answers at once and counts the calls that reached it."""

    def __init__(self, reply: Reply | None = None) -> None:
        self.calls = 0
        self.reply = reply or Reply()

    async def chat(self, messages, *, json_mode=False, max_tokens=None, schema=None):
        self.calls += 1
        return self.reply


def messages(words: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": " ".join(["word"] * words)}]


async def test_calls_past_the_cap_never_reach_the_model() -> None:
    chat = CountingChat()
    budget = QueryBudget(max_calls=2, max_prompt_tokens=10_000)
    budgeted = BudgetedChat(chat, budget)
    await budgeted.chat(messages(5))
    await budgeted.chat(messages(5))
    with pytest.raises(BudgetExhausted, match="2/2 calls"):
        await budgeted.chat(messages(5))
    assert chat.calls == 2 and budget.calls == 2 and budget.refused == 1
    assert budget.completion_tokens == 6


async def test_a_prompt_over_the_token_budget_is_refused_before_sending() -> None:
    chat = CountingChat()
    budget = QueryBudget(max_calls=10, max_prompt_tokens=50)
    with pytest.raises(BudgetExhausted):
        await BudgetedChat(chat, budget).chat(messages(200))
    assert chat.calls == 0 and budget.prompt_tokens == 0


async def test_held_capacity_is_kept_for_a_later_step_until_released() -> None:
    chat = CountingChat()
    budget = QueryBudget(max_calls=2, max_prompt_tokens=10_000)
    budget.hold(calls=1, tokens=100)
    budgeted = BudgetedChat(chat, budget)
    await budgeted.chat(messages(3))
    with pytest.raises(BudgetExhausted):
        await budgeted.chat(messages(3))
    budget.release()
    await budgeted.chat(messages(3))
    assert chat.calls == 2


async def test_cache_hits_cost_nothing_and_reported_tokens_replace_the_estimate() -> None:
    budget = QueryBudget(max_calls=1, max_prompt_tokens=10_000)
    await BudgetedChat(CountingChat(Reply(cached=True)), budget).chat(messages(5))
    assert budget.calls == 0 and budget.cache_hits == 1 and budget.prompt_tokens == 0
    await BudgetedChat(CountingChat(Reply(prompt_tokens=77)), budget).chat(messages(5))
    assert budget.calls == 1 and budget.prompt_tokens == 77


async def test_prompts_are_counted_off_the_event_loop_and_reserved_before_the_call() -> None:
    # Counting a long prompt holds whoever counts it: not the loop, where a DRIFT round's other searches run.
    counted_on: list[int] = []

    def count(text: str) -> list[int]:
        counted_on.append(threading.get_ident())
        return [0] * len(text.split())

    budget = QueryBudget(max_calls=3, max_prompt_tokens=30, _count_tokens=count)
    budgeted = BudgetedChat(CountingChat(), budget)
    await asyncio.gather(budgeted.chat(messages(10)), budgeted.chat(messages(10)))
    assert counted_on and threading.get_ident() not in counted_on
    # Two concurrent calls reserved 2 x 14 of 30 tokens: a third of the same size is refused unsent.
    with pytest.raises(BudgetExhausted):
        await budgeted.chat(messages(10))
