"""`driftrag serve` and `driftrag api-key create` as a user runs them: subprocesses, real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from driftrag.settings import Settings
from tests.support.ports import free_port

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DRIFTRAG_API_", "OPENAI_"))}
    env.update(DRIFTRAG_HOME=str(tmp_path / "home"), DRIFTRAG_LLM_PROVIDER="offline", **extra)
    return env


def _driftrag(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "driftrag", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_serve_refuses_to_start_without_keys(tmp_path: Path) -> None:
    refused = _driftrag("serve", env=_env(tmp_path), cwd=tmp_path)

    assert refused.returncode == 1
    assert "no API keys configured" in refused.stderr and "Traceback" not in refused.stderr


def test_serve_without_auth_binds_to_loopback_only(tmp_path: Path) -> None:
    refused = _driftrag("serve", "--insecure-no-auth", "--host", "0.0.0.0", env=_env(tmp_path), cwd=tmp_path)

    assert refused.returncode == 1
    assert "binds only to 127.0.0.1" in " ".join(refused.stderr.split())


def test_serve_answers_with_a_created_key(tmp_path: Path, neo4j_settings: Settings) -> None:
    keys_file = tmp_path / "keys.json"
    env = _env(tmp_path, NEO4J_URI=neo4j_settings.bolt_uri)
    created = _driftrag(
        "api-key", "create", "--name", "ops", "--scopes", "read", "--kbs", "*", "--file", str(keys_file),
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("drk_") and key not in keys_file.read_text()

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "driftrag", "serve", "--port", str(port)],
        env={**env, "DRIFTRAG_API_KEYS_FILE": str(keys_file)},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v1/system"
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, server.stdout.read()
            try:
                response = httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer within 180 s"
                time.sleep(0.5)
        assert response.status_code == 200, response.text
        assert response.json()["graph_engine"] == "Neo4j" and response.json()["auth"] == "api-key"
        assert httpx.get(url, timeout=10).status_code == 401
    finally:
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=60)
    assert server.returncode == 0, output
    assert key not in output, "the key never reaches the log"


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_serve_with_two_workers_answers_from_two_processes(tmp_path: Path, neo4j_settings: Settings) -> None:
    keys_file = tmp_path / "keys.json"
    env = _env(tmp_path, NEO4J_URI=neo4j_settings.bolt_uri, DRIFTRAG_API_WORKERS="2")
    created = _driftrag(
        "api-key", "create", "--name", "ops", "--scopes", "read", "--kbs", "*", "--file", str(keys_file),
        env=env, cwd=tmp_path,
    )  # fmt: skip
    key = created.stdout.strip()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "driftrag", "serve", "--port", str(port)],
        env={**env, "DRIFTRAG_API_KEYS_FILE": str(keys_file)},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v1/system"
        headers = {"Authorization": f"Bearer {key}"}
        deadline = time.monotonic() + 240
        answered = 0
        # Both workers accept on the one socket; wait until both have started and connected.
        while answered < 20:
            assert server.poll() is None, server.stdout.read()
            try:
                response = httpx.get(url, headers=headers, timeout=10)
                assert response.status_code == 200, response.text
                answered += response.json()["graph_engine"] == "Neo4j"
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer within 240 s"
                time.sleep(0.5)
        assert httpx.get(url, timeout=10).status_code == 401  # every worker checks keys
        workers = [pid for pid in _children(server.pid) if "spawn" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(workers) == 2, workers
    finally:
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=90)
    assert server.returncode == 0, output
