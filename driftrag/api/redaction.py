"""Keys never reach the server's log: uvicorn's access log prints each request's URL with its query string,
and `GET …/query/stream?api_key=…` (`driftrag.api.limits`) carries a key there.

`uvicorn_log_config()` is uvicorn's own logging configuration with `RedactQueryKeys` on the access
logger; `driftrag serve` and `BackgroundServer` pass it to uvicorn. A key sent in the URL of any route
(refused there, but sent all the same) is redacted too.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from uvicorn.config import LOGGING_CONFIG

from driftrag.api.limits import QUERY_KEY_PARAM

REDACTED = "[redacted]"
# The name as sent, also percent-encoded (`api%5Fkey` is the same parameter to the server).
_NAME = "".join(re.escape(char) if char != "_" else "(?:_|%5f)" for char in QUERY_KEY_PARAM)
_KEY_IN_URL = re.compile(rf"([?&]{_NAME}=)[^&#\s\"]*", re.IGNORECASE)


def redact_url(text: str) -> str:
    return _KEY_IN_URL.sub(rf"\g<1>{REDACTED}", text)


class RedactQueryKeys(logging.Filter):
    """Rewrites the `api_key=` values of a record's message and arguments (uvicorn passes the URL as one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_url(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_url(arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


def uvicorn_log_config() -> dict[str, Any]:
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_query_keys"] = {"()": RedactQueryKeys}
    config["loggers"]["uvicorn.access"]["filters"] = ["redact_query_keys"]
    return config
