"""The class-data-sharing archive of the local Neo4j, with a real JVM on a private copy of the runtime."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from driftrag.local_neo4j import LocalNeo4j, cached_runtime
from driftrag.settings import Settings
from tests.support.ports import free_port

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow


@pytest.fixture
def private_home(tmp_path: Path, neo4j_uri: str) -> Path:
    """A driftrag home holding the session's runtime (hard links): its own launcher jar and archive."""
    if "NEO4J_URI" in os.environ:
        pytest.skip("an external server: the launcher is not in charge")
    runtime = cached_runtime(Settings())
    assert runtime is not None, "the test session starts the local Neo4j, so its runtime is cached"
    folder = tmp_path / "neo4j" / "runtime" / runtime.version
    (folder / "lib").mkdir(parents=True)
    shutil.copy2(runtime.manifest_file, folder / runtime.manifest_file.name)
    for jar in runtime.lib_dir.glob("*.jar"):
        try:
            os.link(jar, folder / "lib" / jar.name)
        except OSError:
            shutil.copy2(jar, folder / "lib" / jar.name)
    return tmp_path


def _archives(home: Path) -> list[Path]:
    return sorted(home.glob("neo4j/runtime/*/cds/*"))


def test_the_first_start_records_the_archive_the_next_uses_it_and_a_damaged_one_costs_nothing(
    private_home: Path,
) -> None:
    # One test for the archive's life: recording it is the slow part (a JVM dumping the classes at exit).
    server = LocalNeo4j(Settings(_env_file=None, home=private_home), port=free_port())
    try:
        server.start()
        recording = [path.suffix for path in _archives(private_home)]
        assert sorted(recording) == [".claim"], "the JVM writes the archive only when it exits"

        server.stop()
        [archive] = _archives(private_home)
        assert archive.suffix == ".jsa"
        assert archive.stat().st_size > 10 * 2**20, "the Neo4j classes, not an empty file"

        assert server.start().state == "running"
        assert f"-XX:SharedArchiveFile={archive}" in _last_start(server).splitlines()[0]
        server.stop()

        archive.chmod(0o644)
        archive.write_bytes(b"not a class archive" * 1000)
        status = server.start()

        assert status.state == "running", "a damaged archive costs the JVM's warning, not the start"
        assert f"-XX:SharedArchiveFile={archive}" in _last_start(server)
    finally:
        server.stop()


def _last_start(server: LocalNeo4j) -> str:
    return server.log_file.read_text().rsplit("--- starting", 1)[1]
