"""A Neo4j address that does not answer fails a command within seconds, with the address in the error.

Two dead addresses, both made here and deterministic: a closed port (the connection is refused at once),
and a socket that listens but never answers (the kernel completes the TCP handshake, the Bolt handshake
gets no reply: a hung or firewalled server). The default settings are used: the connect budget
(`neo4j_connect_timeout_s`, 8 s) bounds the retries and the driver's waits. The bounds are loose (the
machine is shared); the point is seconds, not the driver's default minute.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftrag.errors import BackendUnavailableError
from driftrag.settings import Settings
from driftrag.store import Neo4jStore

BOUND_S = 15.0


@pytest.fixture
def closed_port() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"bolt://127.0.0.1:{port}"


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """Accepts TCP connections (its backlog) and never reads or answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield f"bolt://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("address", ["closed_port", "silent_listener"])
async def test_connect_fails_within_the_budget_naming_the_address(
    address: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    uri = request.getfixturevalue(address)
    settings = Settings(_env_file=None, neo4j_uri=uri, home=tmp_path)
    store = Neo4jStore.from_settings(settings)
    started = time.monotonic()
    try:
        with pytest.raises(BackendUnavailableError) as raised:
            await store.connect()
    finally:
        await store.close()
    assert time.monotonic() - started < BOUND_S
    assert f"Neo4j at {uri} is unreachable" in str(raised.value)


@pytest.mark.parametrize("address", ["closed_port", "silent_listener"])
def test_a_cli_command_exits_3_within_seconds_naming_the_address(
    address: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    uri = request.getfixturevalue(address)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_", "NEO4J_"))}
    env |= {"NEO4J_URI": uri, "DRIFTRAG_HOME": str(tmp_path)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "driftrag", "stats", "--kb", "anykb"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 3, done.stderr[-2000:]
    # Rich wraps the error box: compare without line breaks.
    flat = " ".join(done.stderr.replace("│", " ").split())
    assert uri in flat and "unreachable" in flat, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert elapsed < BOUND_S + 5.0, f"{elapsed:.1f} s (the CLI's start-up included)"
