"""Several driftrag processes at once on one cache folder: all succeed, the cache stays consistent.

Real subprocesses, real Maven, real Neo4j. The concurrent resolutions use an empty runtime folder;
their Maven repository is a copy of the test session's one when that exists (CI resolved it for
the session a minute earlier), so the test costs seconds there. When the session's cache has no
Maven repository, the test downloads everything itself, about two minutes, and leaves its repository
to the session's cache for the next run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftrag.local_neo4j import LocalNeo4j, cached_runtime
from driftrag.local_neo4j.resolver import maven_repository_dir, runtime_root
from driftrag.settings import Settings
from tests.support.ports import free_port

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow


def _environment(home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NEO4J_URI"} | {"COLUMNS": "400"}
    if home is not None:
        env["DRIFTRAG_HOME"] = str(home)
    return env


def _spawn(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "driftrag", "neo4j", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven on PATH")
def test_three_concurrent_fetches_on_an_empty_cache_all_succeed_and_resolve_once(tmp_path, neo4j_uri: str) -> None:
    home = tmp_path / "home"
    session_m2 = maven_repository_dir(Settings())
    seeded = session_m2.is_dir()
    if seeded:
        shutil.copytree(session_m2, maven_repository_dir(Settings(_env_file=None, home=home)), symlinks=True)
    env = _environment(home)

    processes = [_spawn(env, "fetch", "--json") for _ in range(3)]
    results = [(process.communicate(timeout=1200), process.returncode) for process in processes]

    for (_, err), code in results:
        assert code == 0, err
    versions = {json.loads(out)["version"] for (out, _), _ in results}
    assert len(versions) == 1
    settings = Settings(_env_file=None, home=home)
    runtime = cached_runtime(settings)
    assert runtime is not None, "the manifest matches the jars (names, sizes, sha256)"
    assert [folder.name for folder in runtime_root(settings).iterdir()] == [runtime.version]
    assert not (home / "neo4j" / "staging").exists(), "no staging folder is left behind"
    ran_maven = [err for (_, err), _ in results if "Maven" in err]
    assert len(ran_maven) == 1, [err for (_, err), _ in results]
    if not seeded:
        _hand_over(maven_repository_dir(settings), session_m2)


def _hand_over(m2: Path, session_m2: Path) -> None:
    """Give the session's cache this Maven repository (copy, then one rename; a concurrent run may win)."""
    private = session_m2.with_name(f"{session_m2.name}.{os.getpid()}")
    try:
        shutil.copytree(m2, private, symlinks=True)
        private.rename(session_m2)
    except OSError:
        pass
    finally:
        shutil.rmtree(private, ignore_errors=True)


def test_two_starts_on_one_port_start_one_server_and_both_report_it(neo4j_uri: str) -> None:
    if "NEO4J_URI" in os.environ:
        pytest.skip("an external server: the launcher is not in charge")
    port = free_port()
    env = _environment()
    server = LocalNeo4j(Settings(), port=port)
    try:
        processes = [_spawn(env, "start", "--port", str(port), "--json") for _ in range(2)]
        results = [(process.communicate(timeout=600), process.returncode) for process in processes]
        for (_, err), code in results:
            assert code == 0, err
        statuses = [json.loads(out) for (out, _), _ in results]
        assert {status["state"] for status in statuses} == {"running"}
        assert len({status["pid"] for status in statuses}) == 1, "one server, reported to both"
        assert sorted("already running" in status["message"] for status in statuses) == [False, True]
    finally:
        server.stop()
        shutil.rmtree(server.home, ignore_errors=True)
