"""The one retry policy of query steps: transient failures only (Neo4j, the model), never an exhausted
budget, with exponential backoff. DRIFT applies it inside its phases; `SearchWorkflow` through
LlamaIndex's `retry_policy`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from driftrag.errors import BackendUnavailableError, ModelError
from driftrag.search.budget import BudgetExhausted

T = TypeVar("T")
RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 5.0


def is_transient(error: BaseException) -> bool:
    return isinstance(error, ModelError | BackendUnavailableError) and not isinstance(error, BudgetExhausted)


def retry_delay(failures: int) -> float:
    """Seconds to wait after the `failures`-th failure (1-based)."""
    return min(RETRY_DELAY_S * 2 ** (failures - 1), MAX_RETRY_DELAY_S)


async def retrying(call: Callable[[], Awaitable[T]], retries: int) -> T:
    """`call`, tried again up to `retries` times while it fails transiently."""
    for failures in range(retries + 1):
        try:
            return await call()
        except Exception as error:
            if not is_transient(error) or failures == retries:
                raise
        await asyncio.sleep(retry_delay(failures + 1))
    raise AssertionError("unreachable")
