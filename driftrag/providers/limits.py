"""How many model calls run at once and how long one may take: from the settings, the provider and the
server's own report.

- Concurrency: `llm_concurrency` when it is set; for the local provider its server's slots (the same
  setting, `LOCAL_DEFAULT_SLOTS` unless set); else the default, lowered to the slots an OpenAI-compatible
  server reports (llama.cpp's `/props` `total_slots`, asked once at the first call): calls past a
  server's slots only wait in its queue, and their time-outs run while they wait.
- Call time-out: `local_timeout_s` for the local provider, the LlamaIndex LLM's own `timeout` (or
  Ollama's `request_timeout`) for one given to the engine, else `llm_timeout_s`.

The query time-out that follows from them is the query's own (`driftrag.search.deadline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from driftrag.providers.window import ServerReport
from driftrag.settings import Settings

CONCURRENCY_SETTING = "DRIFTRAG_LLM_CONCURRENCY"
DEFAULT_SOURCE = f"the {CONCURRENCY_SETTING} default"


@dataclass(frozen=True)
class CallLimits:
    """The model calls' limits in force, and where each came from (for `driftrag info` and errors)."""

    concurrency: int
    concurrency_source: str
    timeout_s: float | None  # None: the LLM's own, unknown to driftrag
    timeout_source: str

    def describe(self) -> str:
        timeout = f"{self.timeout_s:g} s" if self.timeout_s is not None else "no time-out known"
        return (
            f"{self.concurrency} call(s) at once ({self.concurrency_source}), "
            f"{timeout} per call ({self.timeout_source})"
        )


def concurrency_is_set(settings: Settings) -> bool:
    return "llm_concurrency" in settings.model_fields_set


def follows_server_slots(settings: Settings, *, local: bool) -> bool:
    """Whether the concurrency is the server's slots to decide (not set, not the local provider's own)."""
    return not local and not concurrency_is_set(settings)


def concurrency(settings: Settings, *, local: bool, report: ServerReport | None = None) -> tuple[int, str]:
    """The calls in flight at once and where that comes from; `report` is the server's, None when it is
    not asked (OpenAI's own API, a LlamaIndex LLM of another protocol)."""
    if concurrency_is_set(settings):
        return settings.llm_concurrency, CONCURRENCY_SETTING
    if local:
        return settings.local_slots(), "the local server's slots"
    if report is None:
        return settings.llm_concurrency, DEFAULT_SOURCE
    return within_slots(settings.llm_concurrency, report.slots)


def within_slots(default: int, server_slots: int | None) -> tuple[int, str]:
    """The default concurrency, lowered to the server's slots when it reports fewer."""
    if server_slots is None:
        return default, f"{DEFAULT_SOURCE}; the server reports no slots"
    if server_slots < default:
        return server_slots, f"the server's {server_slots} slot(s), GET /props"
    return default, f"{DEFAULT_SOURCE}, within the server's {server_slots} slot(s)"


def call_timeout(settings: Settings, *, local: bool, llm: Any = None) -> tuple[float, str]:
    """The time-out of one model call and where it comes from (see the module docstring)."""
    if local:
        return settings.local_timeout_s, "DRIFTRAG_LOCAL_TIMEOUT_S"
    if llm is not None:
        for name in ("timeout", "request_timeout"):
            value = getattr(llm, name, None)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                return float(value), f"the LLM's {name}"
    return settings.llm_timeout_s, "DRIFTRAG_LLM_TIMEOUT_S"
