"""A class-data-sharing archive of the local Neo4j's classes, so a warm start loads them faster.

Most of a warm start is the JVM loading and verifying thousands of classes from the runtime's jars.
The JDK can record them once in an AppCDS archive (`-XX:ArchiveClassesAtExit`, written when the JVM
exits, i.e. on `neo4j stop`) and map that archive at later starts (`-XX:SharedArchiveFile`). Without
`-Xshare:on`: an archive the JVM cannot use (another JDK, a damaged file) is ignored (at most a
warning in neo4j.log), never a failed start.

Layout: `runtime/<version>/cds/<key>.jsa`, the key a digest of `java -version` and the class path.
Only one start records it: that start creates `<key>.claim` (exclusive create) and its JVM writes
`<key>.<token>.partial`; once that JVM has exited, the next start or stop renames the partial to
`<key>.jsa` (atomic) and removes the claim. Concurrent starts on other ports skip recording.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

_VERSION_TIMEOUT_S = 60
_STALE_CLAIM_S = 24 * 3600  # a claim without a JVM pid this old: its start crashed before the JVM ran


class ClassArchive:
    """The archive of one runtime, launcher jar and JDK."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder = folder
        self.path = folder / f"{key}.jsa"
        self._claim = folder / f"{key}.claim"
        self._key = key

    @classmethod
    def for_launcher(cls, java: str, lib_dir: Path, launcher_jar: Path) -> ClassArchive | None:
        """None when `java -version` does not answer (no archive then, a plain start)."""
        try:
            done = subprocess.run([java, "-version"], capture_output=True, timeout=_VERSION_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
        identity = done.stderr + done.stdout + f"\n{lib_dir}\n{launcher_jar}".encode()
        return cls(lib_dir.parent / "cds", hashlib.sha256(identity).hexdigest()[:16])

    def jvm_options(self, jvm_running: Callable[[int], bool]) -> tuple[list[str], str | None]:
        """JVM options: use the archive, else record it (with the claim token), else none."""
        promote_recorded(self.folder, jvm_running)
        if self.path.is_file():
            return [f"-XX:SharedArchiveFile={self.path}"], None
        token = secrets.token_hex(6)
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self._claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return [], None  # another start records it
        with os.fdopen(fd, "w") as claim:
            claim.write(token)
        # The dump lists every class it skips (signed jars, generated classes): not for neo4j.log.
        return [f"-XX:ArchiveClassesAtExit={self._partial(token)}", "-Xlog:cds=off,cds+dynamic=off"], token

    def recording_by(self, token: str, pid: int) -> None:
        """The JVM `pid` records the archive: a later start or stop promotes it once `pid` exited."""
        self._claim.write_text(f"{token} {pid}")

    def abandon(self, token: str) -> None:
        """The recording JVM did not start: let a later start record."""
        self._partial(token).unlink(missing_ok=True)
        self._claim.unlink(missing_ok=True)

    def _partial(self, token: str) -> Path:
        return self.folder / f"{self._key}.{token}.partial"


def promote_recorded(folder: Path, jvm_running: Callable[[int], bool]) -> None:
    """Rename the archives recorded by JVMs that have exited; drop claims whose JVM wrote nothing."""
    for claim in folder.glob("*.claim") if folder.is_dir() else ():
        key = claim.name.removesuffix(".claim")
        try:
            fields = claim.read_text().split()
            age_s = time.time() - claim.stat().st_mtime
        except FileNotFoundError:
            continue  # promoted by another process meanwhile
        if len(fields) < 2:
            if age_s > _STALE_CLAIM_S:
                claim.unlink(missing_ok=True)
            continue  # its JVM is being started
        token, pid = fields[0], fields[1]
        if not pid.isdigit() or jvm_running(int(pid)):
            continue
        partial = folder / f"{key}.{token}.partial"
        try:
            if partial.is_file() and partial.stat().st_size > 0:
                partial.rename(folder / f"{key}.jsa")
        except OSError:
            pass  # another process promoted it first
        partial.unlink(missing_ok=True)
        claim.unlink(missing_ok=True)
