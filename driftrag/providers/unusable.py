"""A model server's answer that cannot be read (broken JSON, a body of the wrong shape) is a transient
failure, like a 500: it is asked again with backoff, and only then is it an error.

The openai client retries 408/409/429/5xx, connection errors and time-outs itself, but a 200 whose body
does not parse reaches the caller at once; `retry_unusable` is the one extra layer for exactly that.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import openai

T = TypeVar("T")
log = logging.getLogger(__name__)

BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0


def is_unusable_response(exc: BaseException) -> bool:
    """A body that is not JSON, or JSON that is not the expected object (missing `choices`, `data`…)."""
    return isinstance(
        exc,
        json.JSONDecodeError | openai.APIResponseValidationError | AttributeError | TypeError | KeyError | IndexError,
    )


def backoff_s(failures: int) -> float:
    """Seconds to wait after the `failures`-th failure (1-based): 0.5, 1, 2, 4, 8, 8…"""
    return min(BACKOFF_S * 2 ** (failures - 1), MAX_BACKOFF_S)


async def retry_unusable(
    call: Callable[[], Awaitable[T]], retries: int, *, on_retry: Callable[[], None] | None = None
) -> T:
    """`call`, asked again up to `retries` times while its answer is unreadable; other errors pass through."""
    for failures in range(retries + 1):
        try:
            return await call()
        except Exception as exc:
            if not is_unusable_response(exc) or failures == retries:
                raise
            log.info("unreadable model response (%s), asking again", type(exc).__name__)
            if on_retry is not None:
                on_retry()
        await asyncio.sleep(backoff_s(failures + 1))
    raise AssertionError("unreachable")
