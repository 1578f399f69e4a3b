"""Resolve the Neo4j Community jars from Maven Central into the driftrag cache.

The jars land in `<home>/neo4j/lib`, with `resolved.json` recording which version Maven picked, so
later starts need no network. Maven (the machine's `mvn`) does the resolution: it already knows
version ranges, mirrors and the local repository cache.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from driftrag.errors import LocalNeo4jError

_KERNEL_JAR = re.compile(r"^neo4j-kernel-(\d+\.\d+\.\d+)\.jar$")
_RANGE = re.compile(r"^[\[\(][0-9.]*,[0-9.]*[\]\)]$|^\d+\.\d+\.\d+$")
_MAVEN_TIMEOUT_S = 900


class ResolvedRuntime(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    version_range: str
    lib_dir: Path
    jar_count: int


def _marker(runtime_dir: Path) -> Path:
    return runtime_dir / "resolved.json"


def cached_runtime(runtime_dir: Path, version_range: str) -> ResolvedRuntime | None:
    """The runtime resolved earlier for this range, if its jars are still there."""
    marker = _marker(runtime_dir)
    if not marker.is_file():
        return None
    try:
        runtime = ResolvedRuntime.model_validate_json(marker.read_text())
    except ValueError:
        return None
    if runtime.version_range != version_range or not runtime.lib_dir.is_dir():
        return None
    if len(list(runtime.lib_dir.glob("*.jar"))) != runtime.jar_count:
        return None
    return runtime


def resolve_runtime(runtime_dir: Path, version_range: str) -> ResolvedRuntime:
    """Return the cached runtime, or resolve it with Maven (newest version in the range)."""
    if not _RANGE.match(version_range):
        raise LocalNeo4jError(f"invalid Maven version range {version_range!r}, expected e.g. [5.26.0,5.27.0)")
    cached = cached_runtime(runtime_dir, version_range)
    if cached is not None:
        return cached
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LocalNeo4jError("Maven (mvn) is not on PATH; it is needed once to fetch the Neo4j jars")

    runtime_dir.mkdir(parents=True, exist_ok=True)
    pom = runtime_dir / "pom.xml"
    pom.write_text(resources.files("driftrag.local_neo4j").joinpath("runtime-pom.xml").read_text())
    staging = runtime_dir / "lib.partial"
    shutil.rmtree(staging, ignore_errors=True)
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-Dneo4j.range={version_range}",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_MAVEN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LocalNeo4jError(f"Maven did not resolve Neo4j within {_MAVEN_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise LocalNeo4jError(f"Maven could not resolve org.neo4j:neo4j {version_range}:\n{tail}")

    version = _kernel_version(staging)
    lib_dir = runtime_dir / "lib"
    shutil.rmtree(lib_dir, ignore_errors=True)
    staging.rename(lib_dir)
    runtime = ResolvedRuntime(
        version=version,
        version_range=version_range,
        lib_dir=lib_dir,
        jar_count=len(list(lib_dir.glob("*.jar"))),
    )
    _marker(runtime_dir).write_text(json.dumps(runtime.model_dump(mode="json"), indent=2))
    return runtime


def _kernel_version(lib_dir: Path) -> str:
    for jar in lib_dir.glob("neo4j-kernel-*.jar"):
        found = _KERNEL_JAR.match(jar.name)
        if found:
            return found.group(1)
    raise LocalNeo4jError(f"Maven finished but no neo4j-kernel jar is in {lib_dir}")
