"""Resolve the Neo4j Community jars into the driftrag cache: once, verified, safe under concurrency.

Layout under `<home>/neo4j/` (`Settings.neo4j_runtime_dir`):

- `runtime/<version>/lib/*.jar` and `runtime/<version>/manifest.json` (version, every jar with its
  size and sha256): one resolved version. A start verifies the manifest and needs no network.
- `m2/`: Maven's local repository. Always passed to Maven, so nothing is read from or written to the
  user's `~/.m2` (Java takes `user.home` from the password database, not from `$HOME`).
- `staging/<version>-<pid>-<token>/`: a resolution in progress, private to one process, renamed
  into `runtime/` in one step when complete.
- `resolve.lock`: held while resolving, so concurrent starts resolve once and the others reuse.

Maven (the machine's `mvn`) copies the dependencies of one exact version; a range is turned into a
version first (see `versions.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape

from pydantic import BaseModel, ConfigDict, ValidationError

from driftrag.errors import LocalNeo4jError, MissingPrerequisiteError
from driftrag.local_neo4j.locking import exclusive_lock
from driftrag.local_neo4j.versions import (
    VersionSpec,
    choose_version,
    parse_version_spec,
    published_versions,
    version_key,
)
from driftrag.settings import Settings

Report = Callable[[str], None]

_MANIFEST = "manifest.json"
# Fully qualified: no plugin-prefix or plugin-version look-ups, the same plugin on every machine.
_COPY_GOAL = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies"
_DOWNLOAD_THREADS = 8
_READ_TIMEOUT_MS = 60_000


class JarEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    size: int
    sha256: str


class RuntimeManifest(BaseModel):
    """What was resolved; written last, so a runtime folder with a manifest is complete."""

    model_config = ConfigDict(extra="forbid")

    version: str
    requested: str
    source: Literal["maven"]
    repository: str
    resolved_at: datetime
    jars: list[JarEntry]


class ResolvedRuntime(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    lib_dir: Path
    manifest_file: Path
    jar_count: int


def runtime_root(settings: Settings) -> Path:
    return settings.neo4j_runtime_dir / "runtime"


def maven_repository_dir(settings: Settings) -> Path:
    return settings.neo4j_runtime_dir / "m2"


def cached_runtime(settings: Settings) -> ResolvedRuntime | None:
    """The newest verified runtime that satisfies `neo4j_version`; no network, no lock."""
    spec = parse_version_spec(settings.neo4j_version)
    root = runtime_root(settings)
    if not root.is_dir():
        return None
    candidates = sorted(
        (folder for folder in root.iterdir() if folder.is_dir() and spec.contains(folder.name)),
        key=lambda folder: version_key(folder.name),
        reverse=True,
    )
    for folder in candidates:
        runtime = verify_runtime(folder)
        if runtime is not None:
            return runtime
    return None


def verify_runtime(folder: Path) -> ResolvedRuntime | None:
    """The runtime in `folder` if its jars are exactly those of its manifest (names, sizes, sha256)."""
    try:
        manifest = RuntimeManifest.model_validate_json((folder / _MANIFEST).read_text())
    except (OSError, ValidationError):
        return None
    lib_dir = folder / "lib"
    try:
        present = {jar.name for jar in lib_dir.glob("*.jar")}
    except OSError:
        return None
    if manifest.version != folder.name or present != {entry.name for entry in manifest.jars}:
        return None
    try:
        for entry in manifest.jars:
            jar = lib_dir / entry.name
            if jar.stat().st_size != entry.size or _sha256(jar) != entry.sha256:
                return None
    except OSError:
        return None
    return ResolvedRuntime(
        version=manifest.version, lib_dir=lib_dir, manifest_file=folder / _MANIFEST, jar_count=len(manifest.jars)
    )


def resolve_runtime(settings: Settings, *, report: Report | None = None) -> ResolvedRuntime:
    """Return the cached runtime, or resolve it (one process at a time) and cache it."""
    say = report or (lambda _message: None)
    spec = parse_version_spec(settings.neo4j_version)
    cached = cached_runtime(settings)
    if cached is not None:
        return cached
    home = settings.neo4j_runtime_dir
    lock = home / "resolve.lock"
    with exclusive_lock(
        lock,
        timeout_s=settings.neo4j_resolve_timeout_s + 60,
        on_wait=lambda: say(f"waiting for another driftrag process resolving Neo4j ({lock})"),
    ):
        cached = cached_runtime(settings)  # the process we waited for may have resolved it
        if cached is not None:
            return cached
        staging_root = home / "staging"
        shutil.rmtree(staging_root, ignore_errors=True)  # under the lock, any staging folder is stale
        staging = staging_root / f"{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir(parents=True)
        try:
            return _resolve_with_maven(settings, spec, staging, say)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            with contextlib.suppress(OSError):
                staging_root.rmdir()  # only when empty


def _resolve_with_maven(settings: Settings, spec: VersionSpec, staging: Path, say: Report) -> ResolvedRuntime:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingPrerequisiteError(
            f"Maven (mvn) is not on PATH, and Neo4j {spec.text} is not cached in {runtime_root(settings)}. "
            "Install Maven once (e.g. `apt-get install maven`), or run `driftrag neo4j fetch` on a machine "
            "with Maven and copy its `<DRIFTRAG_HOME>/neo4j/runtime` folder here"
        )
    repository = settings.neo4j_maven_repository
    m2 = maven_repository_dir(settings)
    version = spec.exact
    if version is not None and _maven_has(m2, version):
        say(f"copying Neo4j {version} from the Maven cache {m2} (offline)")
        if _run_maven(mvn, settings, version, staging, offline=True).returncode == 0:
            return _install(settings, staging, version, spec.text)
        shutil.rmtree(staging / "lib", ignore_errors=True)  # something is missing from the cache: go online
    # One small request before Maven runs: picks the version of a range, checks that the version is
    # published, and fails in seconds without network (Maven itself would retry for minutes).
    version = choose_version(spec, published_versions(repository), repository)
    say(f"resolving Neo4j {version} with Maven from {repository} (first time only, about 2 minutes)")
    done = _run_maven(mvn, settings, version, staging, offline=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise LocalNeo4jError(f"Maven could not resolve org.neo4j:neo4j {version} from {repository}:\n{tail}")
    return _install(settings, staging, version, spec.text)


def _run_maven(
    mvn: str, settings: Settings, version: str, staging: Path, *, offline: bool
) -> subprocess.CompletedProcess[str]:
    pom = staging / "pom.xml"
    pom.write_text(resources.files("driftrag.local_neo4j").joinpath("runtime-pom.xml").read_text())
    maven_settings = staging / "maven-settings.xml"
    # Our own settings file: every download goes to the configured repository, the user's
    # ~/.m2/settings.xml is not read, the local repository is the driftrag one.
    maven_settings.write_text(
        "<settings>\n"
        f"  <localRepository>{escape(str(maven_repository_dir(settings)))}</localRepository>\n"
        "  <mirrors><mirror><id>driftrag-neo4j</id><mirrorOf>*</mirrorOf>"
        f"<url>{escape(settings.neo4j_maven_repository)}</url></mirror></mirrors>\n"
        "</settings>\n"
    )
    command = [
        mvn,
        "-B",
        "-q",
        *(["-o"] if offline else []),
        "-s",
        str(maven_settings),
        f"-Dmaven.repo.local={maven_repository_dir(settings)}",
        f"-Daether.connector.basic.threads={_DOWNLOAD_THREADS}",
        f"-Dmaven.wagon.rto={_READ_TIMEOUT_MS}",
        "-f",
        str(pom),
        _COPY_GOAL,
        f"-Dneo4j.version={version}",
        f"-DoutputDirectory={staging / 'lib'}",
        "-DincludeScope=runtime",
    ]
    timeout = settings.neo4j_resolve_timeout_s
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise LocalNeo4jError(
            f"Maven did not resolve Neo4j {version} within {timeout:.0f} s (DRIFTRAG_NEO4J_RESOLVE_TIMEOUT_S); "
            f"is {settings.neo4j_maven_repository} slow or unreachable?"
        ) from exc


def _maven_has(m2: Path, version: str) -> bool:
    return (m2 / "org" / "neo4j" / "neo4j" / version / f"neo4j-{version}.pom").is_file()


def _install(settings: Settings, staging: Path, version: str, requested: str) -> ResolvedRuntime:
    """Write the manifest, then move the staging folder into place in one rename."""
    lib_dir = staging / "lib"
    found = _kernel_version(lib_dir)
    if found != version:
        raise LocalNeo4jError(f"expected neo4j-kernel {version} in {lib_dir}, found {found}")
    jars = [
        JarEntry(name=jar.name, size=jar.stat().st_size, sha256=_sha256(jar)) for jar in sorted(lib_dir.glob("*.jar"))
    ]
    manifest = RuntimeManifest(
        version=version,
        requested=requested,
        source="maven",
        repository=settings.neo4j_maven_repository,
        resolved_at=datetime.now(UTC),
        jars=jars,
    )
    (staging / _MANIFEST).write_text(manifest.model_dump_json(indent=2))
    for leftover in ("pom.xml", "maven-settings.xml"):
        (staging / leftover).unlink(missing_ok=True)
    target = runtime_root(settings) / version
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)  # failed verification (we hold the lock): replace it
    staging.rename(target)
    runtime = verify_runtime(target)
    if runtime is None:
        raise LocalNeo4jError(f"the runtime just written to {target} does not match its manifest")
    return runtime


def _kernel_version(lib_dir: Path) -> str:
    prefix = "neo4j-kernel-"
    for jar in lib_dir.glob(f"{prefix}*.jar"):
        version = jar.name.removeprefix(prefix).removesuffix(".jar")
        if version and all(part.isdigit() for part in version.split(".")):
            return version
    raise LocalNeo4jError(f"no neo4j-kernel jar in {lib_dir}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
