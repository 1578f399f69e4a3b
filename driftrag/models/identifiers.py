"""Validation of identifiers before they reach a query, and the owner id of a lock or job.

Values always travel as Cypher parameters; these checks exist so that hostile ids are refused with a
clear error before any query runs, and so that ids stay portable (file names, URLs, log lines).
"""

from __future__ import annotations

import os
import re
import socket
import uuid

from driftrag.errors import InvalidIdentifierError

KB_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
NODE_ID_PATTERN = re.compile(r"^(document|chunk|entity|relationship|community)-[A-Za-z0-9_-]{1,128}$")
JOB_ID_PATTERN = re.compile(r"^job-[0-9a-f]{32}$")


# Ids longer than this, or with characters outside the id alphabet, are not repeated in error messages:
# the messages reach HTTP answers and logs, and an echoed hostile value (markup, 500 characters) helps nobody.
_SHOWN_MAX_CHARS = 64
_SHOWABLE = re.compile(r"^[A-Za-z0-9_.-]*$")


def _shown(value: object) -> str:
    if isinstance(value, str) and len(value) <= _SHOWN_MAX_CHARS and _SHOWABLE.fullmatch(value):
        return f" {value!r}"
    length = f" of {len(value)} characters" if isinstance(value, str) else ""
    return f" (not shown{length})"


def validate_kb_id(kb: str) -> str:
    """Return `kb` if it is 1-64 letters, digits, `_` or `-` (starting with a letter or digit)."""
    if not isinstance(kb, str) or not KB_ID_PATTERN.fullmatch(kb):
        raise InvalidIdentifierError(
            f"invalid knowledge base id{_shown(kb)}: use 1-64 characters from A-Z a-z 0-9 _ - "
            "starting with a letter or digit"
        )
    return kb


def validate_node_id(node_id: str) -> str:
    """Return `node_id` if it has the project's `<kind>-<token>` shape."""
    if not isinstance(node_id, str) or not NODE_ID_PATTERN.fullmatch(node_id):
        raise InvalidIdentifierError(
            f"invalid id{_shown(node_id)}: expected document-…, chunk-…, entity-…, relationship-… or community-…"
        )
    return node_id


def validate_job_id(job_id: str) -> str:
    """Return `job_id` if it is an ingestion job's id (`job-` and 32 hex digits)."""
    if not isinstance(job_id, str) or not JOB_ID_PATTERN.fullmatch(job_id):
        raise InvalidIdentifierError("not a job id (job- and 32 hex digits)")
    return job_id


def lock_owner() -> str:
    """Who holds a lock: host, process and a random part (one process may hold locks of several kbs)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
