"""`driftrag neo4j start|fetch` on a machine that lacks something: one clear message, exit code 5, fast."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _cli(home: Path, *args: str, path: str | None = None, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    environment = {k: v for k, v in os.environ.items() if k not in {"NEO4J_URI"} and not k.startswith("DRIFTRAG_")}
    environment |= {"DRIFTRAG_HOME": str(home), "COLUMNS": "400"} | env
    if path is not None:
        environment["PATH"] = path
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "driftrag", "neo4j", *args], capture_output=True, text=True, timeout=120, env=environment
    )
    return done, time.monotonic() - started


def _bin_with(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only the named tools (the interpreter is called by its full path)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"needs {tool} on PATH")
        (folder / tool).symlink_to(found)
    return str(folder)


def test_fetch_without_maven_exits_5_naming_mvn(tmp_path) -> None:
    done, seconds = _cli(tmp_path / "home", "fetch", path=_bin_with(tmp_path))
    assert done.returncode == 5, done.stderr
    assert "Maven (mvn) is not on PATH" in done.stderr
    assert "Traceback" not in done.stderr
    assert seconds < 30


def test_start_without_java_exits_5_naming_java(tmp_path) -> None:
    done, seconds = _cli(tmp_path / "home", "start", "--port", "17998", path=_bin_with(tmp_path, "mvn"))
    assert done.returncode == 5, done.stderr
    assert "java is not on PATH" in done.stderr
    assert "JDK 17 or 21" in done.stderr
    assert seconds < 30
    assert not (tmp_path / "home" / "neo4j" / "runtime").exists(), "nothing is downloaded before java is found"


def test_start_with_an_unreachable_repository_exits_5_within_seconds(tmp_path) -> None:
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("needs mvn and java on PATH")
    done, seconds = _cli(
        tmp_path / "home", "start", "--port", "17998", DRIFTRAG_NEO4J_MAVEN_REPOSITORY="http://127.0.0.1:1/maven2"
    )
    assert done.returncode == 5, done.stderr
    assert "cannot reach the Maven repository http://127.0.0.1:1/maven2" in done.stderr
    assert "driftrag neo4j fetch" in done.stderr
    assert seconds < 30


def test_an_unusable_version_setting_exits_1_with_an_example(tmp_path) -> None:
    done, _ = _cli(tmp_path / "home", "fetch", DRIFTRAG_NEO4J_VERSION="latest")
    assert done.returncode == 1
    assert "invalid DRIFTRAG_NEO4J_VERSION 'latest'" in done.stderr
