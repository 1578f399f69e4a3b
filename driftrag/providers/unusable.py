"""A model server's answer that cannot be read (broken JSON, a body of the wrong shape) is a transient
failure, like a 500: it is asked again with backoff, and only then is it an error.

The openai client retries 408/409/429/5xx, connection errors and time-outs itself, but a 200 whose body
does not parse reaches the caller at once; `retry_unusable` is the one extra layer for exactly that.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

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


async def retry_unusable(
    call: Callable[[], Awaitable[T]], retries: int, *, on_retry: Callable[[], None] | None = None
) -> T:
    """`call`, asked again up to `retries` times while its answer is unreadable (waits 0.5, 1, 2, 4, 8, 8… s);
    other errors pass through. `on_retry` counts each new ask."""

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.info("unreadable model response (%s), asking again", type(error).__name__)
        if on_retry is not None:
            on_retry()

    async for attempt in AsyncRetrying(
        stop=stop_after_attempt(retries + 1),
        wait=wait_exponential(multiplier=BACKOFF_S, max=MAX_BACKOFF_S),
        retry=retry_if_exception(is_unusable_response),
        before_sleep=before_sleep,
        reraise=True,
    ):
        with attempt:  # a lambda returning a coroutine: tenacity would not await it when called directly
            return await call()
    raise AssertionError("unreachable")  # reraise=True: the last failure propagates
