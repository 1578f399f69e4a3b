"""The lock file that serialises resolutions and starts across processes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from driftrag.errors import LocalNeo4jError
from driftrag.local_neo4j.locking import exclusive_lock

HOLDER = """
import sys, time
from pathlib import Path
from driftrag.local_neo4j.locking import exclusive_lock
with exclusive_lock(Path(sys.argv[1]), timeout_s=5):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold(path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_process_waits_until_the_first_releases(tmp_path) -> None:
    lock = tmp_path / "sub" / "resolve.lock"
    holder = _hold(lock, 1.5)
    waits: list[str] = []
    started = time.monotonic()
    with exclusive_lock(lock, timeout_s=30, on_wait=lambda: waits.append("busy")):
        waited = time.monotonic() - started
    holder.wait(timeout=30)
    assert waits == ["busy"], "the caller is told once that it waits"
    assert waited > 0.5


def test_waiting_is_bounded_and_names_the_lock(tmp_path) -> None:
    lock = tmp_path / "resolve.lock"
    holder = _hold(lock, 10)
    try:
        with pytest.raises(LocalNeo4jError, match=r"resolve\.lock is still locked by another driftrag process"):
            with exclusive_lock(lock, timeout_s=0.5):
                pass
    finally:
        holder.kill()
        holder.wait()


def test_a_crashed_holder_leaves_no_stuck_lock(tmp_path) -> None:
    lock = tmp_path / "resolve.lock"
    holder = _hold(lock, 60)
    holder.kill()
    holder.wait()
    with exclusive_lock(lock, timeout_s=2):
        pass
