"""The resolved-runtime cache: manifest verification, missing Maven, no network."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from driftrag.errors import MissingPrerequisiteError
from driftrag.local_neo4j.resolver import JarEntry, RuntimeManifest, cached_runtime, resolve_runtime, runtime_root
from driftrag.settings import Settings

VERSION = "5.26.30"
# Nothing listens there: any attempt to use the network fails at once and the test would see it.
NO_NETWORK = "http://127.0.0.1:1/maven2"


def _settings(home: Path, version: str = VERSION) -> Settings:
    return Settings(_env_file=None, home=home, neo4j_version=version, neo4j_maven_repository=NO_NETWORK)


def _resolved_runtime(home: Path, version: str = VERSION) -> Path:
    """`<home>/neo4j/runtime/<version>/` as a Maven resolution leaves it: jars and their manifest."""
    settings = _settings(home, version)
    lib = runtime_root(settings) / version / "lib"
    lib.mkdir(parents=True)
    for name in (f"neo4j-kernel-{version}.jar", f"neo4j-bolt-{version}.jar", "netty-buffer-4.1.115.Final.jar"):
        (lib / name).write_bytes(os.urandom(4096) + name.encode())
    manifest = RuntimeManifest(
        version=version,
        requested=version,
        source="maven",
        repository=NO_NETWORK,
        resolved_at=datetime.now(UTC),
        jars=[
            JarEntry(name=jar.name, size=jar.stat().st_size, sha256=hashlib.sha256(jar.read_bytes()).hexdigest())
            for jar in sorted(lib.glob("*.jar"))
        ],
    )
    (lib.parent / "manifest.json").write_text(manifest.model_dump_json())
    return lib


def test_a_verified_runtime_is_served_from_the_cache_without_network(tmp_path) -> None:
    lib = _resolved_runtime(tmp_path)
    settings = _settings(tmp_path)

    runtime = resolve_runtime(settings)  # the repository is unreachable: only the cache can answer

    assert runtime.version == VERSION and runtime.lib_dir == lib and runtime.jar_count == 3
    assert cached_runtime(settings) == runtime


def test_a_runtime_of_another_version_is_not_used(tmp_path) -> None:
    _resolved_runtime(tmp_path, version="5.26.2")
    with pytest.raises(MissingPrerequisiteError):
        resolve_runtime(_settings(tmp_path))  # needs the network, which is unreachable here


def test_a_range_is_served_from_the_cache_by_its_newest_verified_version(tmp_path) -> None:
    _resolved_runtime(tmp_path, version="5.26.2")
    _resolved_runtime(tmp_path)

    runtime = cached_runtime(_settings(tmp_path, version="[5.26.0,5.27.0)"))

    assert runtime is not None and runtime.version == VERSION
    assert cached_runtime(_settings(tmp_path, version="[5.27.0,5.28.0)")) is None


@pytest.mark.parametrize("damage", ["changed", "missing", "extra", "manifest"])
def test_a_damaged_runtime_is_not_used(tmp_path, damage: str) -> None:
    lib = _resolved_runtime(tmp_path)
    settings = _settings(tmp_path)
    assert cached_runtime(settings) is not None
    bolt = lib / f"neo4j-bolt-{VERSION}.jar"
    if damage == "changed":
        data = bytearray(bolt.read_bytes())
        data[10] ^= 0xFF  # same size, other content: only the checksum sees it
        bolt.write_bytes(bytes(data))
    elif damage == "missing":
        bolt.unlink()
    elif damage == "extra":
        (lib / "stray-1.0.jar").write_bytes(b"x")
    else:
        (lib.parent / "manifest.json").write_text("{not json")

    assert cached_runtime(settings) is None
    with pytest.raises(MissingPrerequisiteError):
        resolve_runtime(settings)  # resolved again (here: no network), never started from damaged jars


def test_without_maven_and_without_a_cache_the_error_names_mvn_and_the_remedy(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    started = time.monotonic()
    with pytest.raises(MissingPrerequisiteError) as caught:
        resolve_runtime(_settings(tmp_path))
    assert time.monotonic() - started < 5
    assert "Maven (mvn) is not on PATH" in str(caught.value)
    assert "apt-get install maven" in str(caught.value)


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven on PATH")
def test_with_maven_but_no_network_the_error_names_the_repository_within_seconds(tmp_path) -> None:
    started = time.monotonic()
    with pytest.raises(MissingPrerequisiteError, match=r"cannot reach the Maven repository http://127\.0\.0\.1:1"):
        resolve_runtime(_settings(tmp_path))
    assert time.monotonic() - started < 20
    assert not (tmp_path / "neo4j" / "runtime").exists(), "nothing half-resolved is left behind"
