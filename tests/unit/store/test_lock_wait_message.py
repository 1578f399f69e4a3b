"""What a writer that waits for a kb's lock says at once: the holder as stored, the expiry (seconds and time),
and whether the holder is a process of this host that is gone."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime

from driftrag.models.identifiers import lock_owner
from driftrag.store.locks import wait_message

NOW = datetime(2026, 12, 4, 21, 0, 0, tzinfo=UTC).timestamp()


def _gone_pid() -> int:
    """The pid of a process of this host that has ended."""
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(ended.stdout)


def test_the_message_names_the_holder_and_when_its_lock_expires() -> None:
    message = wait_message("alice", "elsewhere:4242:0badcafe", 37_400, now=NOW)
    assert message == (
        "knowledge base 'alice' is being written by another process (elsewhere:4242:0badcafe); waiting for it to "
        "finish (its lock expires in 37 s, at 21:00:37 UTC, unless renewed)"
    )


def test_a_holder_of_this_host_that_is_not_running_is_said_to_be_gone() -> None:
    pid = _gone_pid()
    holder = f"{socket.gethostname()}:{pid}:0badcafe"
    message = wait_message("alice", holder, 20_000, now=NOW)
    assert message.endswith(f"; process {pid} of this host holding it is not running: the wait ends when it expires")
    workers = wait_message("alice", f"1 ingestion worker(s), e.g. {holder}", 20_000, now=NOW)
    assert f"process {pid} of this host" in workers, "found inside a shared holder's description too"


def test_a_running_holder_or_one_of_another_host_is_not_called_gone() -> None:
    assert "not running" not in wait_message("alice", lock_owner(), 20_000, now=NOW)
    assert "not running" not in wait_message("alice", f"elsewhere:{_gone_pid()}:0badcafe", 20_000, now=NOW)
