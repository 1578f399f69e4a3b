"""The resolved-runtime cache: manifest verification, the earlier layout, missing Maven."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from driftrag.errors import MissingPrerequisiteError
from driftrag.local_neo4j.resolver import RuntimeManifest, cached_runtime, resolve_runtime, runtime_root
from driftrag.settings import Settings

VERSION = "5.26.30"
# Nothing listens there: any attempt to use the network fails at once and the test would see it.
NO_NETWORK = "http://127.0.0.1:1/maven2"


def _settings(home: Path, version: str = VERSION) -> Settings:
    return Settings(_env_file=None, home=home, neo4j_version=version, neo4j_maven_repository=NO_NETWORK)


def _legacy_cache(home: Path, version: str = VERSION) -> Path:
    """`<home>/neo4j/lib` + `resolved.json`, as written by the earlier launcher."""
    lib = home / "neo4j" / "lib"
    lib.mkdir(parents=True)
    for name in (f"neo4j-kernel-{version}.jar", f"neo4j-bolt-{version}.jar", "netty-buffer-4.1.115.Final.jar"):
        (lib / name).write_bytes(os.urandom(4096) + name.encode())
    marker = {"version": version, "version_range": "[5.26.0,5.27.0)", "lib_dir": str(lib), "jar_count": 3}
    (home / "neo4j" / "resolved.json").write_text(json.dumps(marker))
    return lib


def test_a_cache_of_the_earlier_layout_is_adopted_without_network_and_left_in_place(tmp_path) -> None:
    legacy = _legacy_cache(tmp_path)
    settings = _settings(tmp_path)

    runtime = resolve_runtime(settings)

    assert runtime.version == VERSION
    assert runtime.lib_dir == runtime_root(settings) / VERSION / "lib"
    assert sorted(jar.name for jar in runtime.lib_dir.glob("*.jar")) == sorted(jar.name for jar in legacy.iterdir())
    manifest = RuntimeManifest.model_validate_json(runtime.manifest_file.read_text())
    assert manifest.source == "adopted" and len(manifest.jars) == 3
    assert all(len(entry.sha256) == 64 for entry in manifest.jars)
    assert len(list(legacy.glob("*.jar"))) == 3, "a server still running from the old folder keeps its jars"
    assert not (tmp_path / "neo4j" / "staging").exists() or not any((tmp_path / "neo4j" / "staging").iterdir())
    assert cached_runtime(settings) == runtime


def test_a_legacy_cache_of_another_version_is_not_adopted(tmp_path) -> None:
    _legacy_cache(tmp_path, version="5.26.2")
    with pytest.raises(MissingPrerequisiteError):
        resolve_runtime(_settings(tmp_path))  # needs the network, which is unreachable here


def test_a_range_is_served_from_the_cache_by_its_newest_verified_version(tmp_path) -> None:
    _legacy_cache(tmp_path)
    resolve_runtime(_settings(tmp_path))

    runtime = cached_runtime(_settings(tmp_path, version="[5.26.0,5.27.0)"))

    assert runtime is not None and runtime.version == VERSION
    assert cached_runtime(_settings(tmp_path, version="[5.27.0,5.28.0)")) is None


@pytest.mark.parametrize("damage", ["changed", "missing", "extra", "manifest"])
def test_a_damaged_runtime_is_not_used(tmp_path, damage: str) -> None:
    _legacy_cache(tmp_path)
    settings = _settings(tmp_path)
    runtime = resolve_runtime(settings)
    bolt = runtime.lib_dir / f"neo4j-bolt-{VERSION}.jar"
    if damage == "changed":
        data = bytearray(bolt.read_bytes())
        data[10] ^= 0xFF  # same size, other content: only the checksum sees it
        bolt.unlink()  # a hard link to the legacy jar: write a new file, not through the link
        bolt.write_bytes(bytes(data))
    elif damage == "missing":
        bolt.unlink()
    elif damage == "extra":
        (runtime.lib_dir / "stray-1.0.jar").write_bytes(b"x")
    else:
        runtime.manifest_file.write_text("{not json")

    assert cached_runtime(settings) is None
    # The legacy folder is intact, so resolving again repairs the runtime without network.
    repaired = resolve_runtime(settings)
    assert cached_runtime(settings) == repaired


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
