"""The local Neo4j launcher, driven through the CLI as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftrag.local_neo4j import LocalNeo4j, cached_runtime
from driftrag.settings import Settings
from tests.conftest import TEST_NEO4J_PORT

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NEO4J_URI"}
    return subprocess.run(
        [sys.executable, "-m", "driftrag", *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_status_reports_the_running_server_and_its_bolt_uri(neo4j_uri: str) -> None:
    if "NEO4J_URI" in os.environ:
        return  # an external server: the launcher is not in charge
    done = _cli("neo4j", "status", "--port", str(TEST_NEO4J_PORT), "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["state"] == "running"
    assert status["bolt_uri"] == f"bolt://127.0.0.1:{TEST_NEO4J_PORT}"
    assert status["version"].startswith("5.26.")
    assert status["resident_mib"] > 50


def test_a_second_start_says_it_already_runs(neo4j_uri: str) -> None:
    if "NEO4J_URI" in os.environ:
        return
    done = _cli("neo4j", "start", "--port", str(TEST_NEO4J_PORT))
    assert done.returncode == 0, done.stderr
    assert "already running" in done.stdout
    assert f"bolt://127.0.0.1:{TEST_NEO4J_PORT}" in done.stdout


def test_status_of_a_stopped_port_exits_3_and_handles_a_stale_pid_file(tmp_path) -> None:
    settings = Settings(_env_file=None, home=tmp_path)
    server = LocalNeo4j(settings, port=17999)
    server.home.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    server.pid_file.write_text(str(dead.pid))

    status = server.status()

    assert status.state == "stopped"
    assert not server.pid_file.exists(), "a stale pid file is removed"
    env = {k: v for k, v in os.environ.items() if k != "NEO4J_URI"} | {"DRIFTRAG_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "driftrag", "neo4j", "status", "--port", "17999"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 3
    assert "stopped" in done.stdout


def test_the_launcher_refuses_to_run_when_neo4j_uri_is_set(tmp_path) -> None:
    env = dict(os.environ) | {"NEO4J_URI": "bolt://example.invalid:7687", "DRIFTRAG_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "driftrag", "neo4j", "start"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert "NEO4J_URI is set" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_session_server_runs_the_compiled_launcher_from_a_verified_runtime(neo4j_uri: str) -> None:
    if "NEO4J_URI" in os.environ:
        return
    runtime = cached_runtime(Settings())
    assert runtime is not None, "the jars match their manifest"
    status = LocalNeo4j(Settings(), port=TEST_NEO4J_PORT).status()
    assert status.version == runtime.version
    command = Path(f"/proc/{status.pid}/cmdline").read_bytes().split(b"\0")
    if shutil.which("javac") is not None:
        assert b"Neo4jLauncher" in command and not any(part.endswith(b".java") for part in command)
        # Compiled once per runtime into a jar (a class-data archive can map classes from jars only).
        jars = list((runtime.lib_dir.parent / "launcher").glob("*/Neo4jLauncher.jar"))
        assert jars and any(str(jar).encode() in part for jar in jars for part in command)
