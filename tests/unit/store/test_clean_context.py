"""`in_clean_context`: a driver call runs without the caller's context, and is cancelled with its caller."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from driftrag.store.neo4j_store import in_clean_context

step: contextvars.ContextVar[str] = contextvars.ContextVar("step", default="none")


async def test_the_call_sees_an_empty_context_and_the_caller_keeps_its_own() -> None:
    async def seen() -> str:
        value = step.get()
        step.set("changed inside")
        return value

    step.set("a query's step")
    assert await in_clean_context(seen()) == "none"
    assert step.get() == "a query's step"


async def test_cancelling_the_caller_cancels_the_call() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    caller = asyncio.create_task(in_clean_context(slow()))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert cancelled.is_set()


async def test_the_call_s_error_reaches_the_caller() -> None:
    async def failing() -> None:
        raise ValueError("from the driver")

    with pytest.raises(ValueError, match="from the driver"):
        await in_clean_context(failing())
