"""Start, stop and inspect the project's local Neo4j (development, tests, CI).

One instance per Bolt port, under `<home>/neo4j/instances/<port>/` (data, `neo4j.log`, `neo4j.pid`,
`start.lock`). Starts of the same instance are serialised by that lock: a second `start` waits for the
first and then reports the server it started. The JVM runs `Neo4jLauncher` (compiled once, see
`launcher.py`), detached from the caller so that `driftrag neo4j start` can return.
Process management is synchronous on purpose: it runs at the CLI or fixture edge, never inside a
workflow step.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from driftrag.errors import ConfigurationError, LocalNeo4jError, MissingPrerequisiteError
from driftrag.local_neo4j.class_archive import ClassArchive, promote_recorded
from driftrag.local_neo4j.launcher import MAIN_CLASS, compiled_launcher, launcher_arguments
from driftrag.local_neo4j.locking import exclusive_lock
from driftrag.local_neo4j.resolver import Report, ResolvedRuntime, resolve_runtime, runtime_root
from driftrag.settings import Settings

_HOST = "127.0.0.1"
_STOP_TIMEOUT_S = 60.0


class LocalNeo4jStatus(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: Literal["running", "stopped"]
    bolt_uri: str
    pid: int | None = None
    version: str | None = None
    home: Path
    log_file: Path
    resident_mib: float | None = None
    message: str = ""


class LocalNeo4j:
    """A local Neo4j Community server on 127.0.0.1, as configured by `Settings`."""

    def __init__(self, settings: Settings, *, port: int | None = None) -> None:
        if settings.neo4j_uri:
            raise ConfigurationError(
                f"NEO4J_URI is set ({settings.neo4j_uri}); driftrag uses that server and never starts one"
            )
        self._settings = settings
        self.port = port or settings.neo4j_port
        self.home = settings.neo4j_runtime_dir / "instances" / str(self.port)
        self.log_file = self.home / "neo4j.log"
        self.pid_file = self.home / "neo4j.pid"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://{_HOST}:{self.port}"

    def status(self) -> LocalNeo4jStatus:
        pid = self._live_pid()
        if pid is None:
            return self._status("stopped")
        return self._status("running", pid=pid)

    def start(self, *, report: Report | None = None) -> LocalNeo4jStatus:
        """Start the server and wait until Bolt answers; a running one is reported, not restarted.

        Resolves the jars first if they are not cached (see `resolver`); `report` receives progress
        lines (resolution, waiting for another process).
        """
        say = report or (lambda _message: None)
        lock = self.home / "start.lock"
        timeout = self._settings.neo4j_resolve_timeout_s + self._settings.neo4j_start_timeout_s + 60
        with exclusive_lock(
            lock,
            timeout_s=timeout,
            on_wait=lambda: say(f"another driftrag process is starting Neo4j on port {self.port}; waiting"),
        ):
            return self._start_locked(report)

    def _start_locked(self, report: Report | None) -> LocalNeo4jStatus:
        pid = self._live_pid()
        if pid is not None:
            return self._status("running", pid=pid, message=f"already running (pid {pid})")
        if _port_open(self.port):
            raise LocalNeo4jError(
                f"port {self.port} on {_HOST} is taken by another process; "
                "choose another with DRIFTRAG_NEO4J_PORT or stop that process"
            )
        java = shutil.which("java")
        if java is None:
            raise MissingPrerequisiteError(
                "java is not on PATH; the local Neo4j 5.26 needs a JDK 17 or 21 (it compiles its small "
                "launcher; e.g. `apt-get install openjdk-17-jdk-headless`), or set NEO4J_URI to use your own server"
            )

        runtime = resolve_runtime(self._settings, report=report)
        jar = compiled_launcher(java, runtime)
        archive = ClassArchive.for_launcher(java, runtime.lib_dir, jar) if jar is not None else None
        archive_options, recording = archive.jvm_options(self._is_launcher) if archive else ([], None)
        command = self._command(java, runtime, jar, archive_options)
        started = time.monotonic()
        with self.log_file.open("ab") as log:
            log.write(f"\n--- starting {runtime.version}: {' '.join(command)}\n".encode())
            log.flush()
            log_offset = log.tell()
            try:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # survives the CLI process that started it
                    cwd=self.home,
                )
            except OSError:
                if archive and recording:
                    archive.abandon(recording)
                raise
        if archive and recording:
            archive.recording_by(recording, process.pid)
        self.pid_file.write_text(str(process.pid))
        self._wait_ready(process, log_offset, runtime)
        elapsed = time.monotonic() - started
        return self._status("running", pid=process.pid, message=f"started in {elapsed:.1f} s")

    def stop(self) -> LocalNeo4jStatus:
        """Stop with SIGTERM (Neo4j shuts down cleanly), SIGKILL only if it does not exit in time."""
        pid = self._live_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return self._status("stopped", message="not running")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        message = "stopped"
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            message = f"did not stop within {_STOP_TIMEOUT_S:.0f} s; killed"
        self.pid_file.unlink(missing_ok=True)
        # The JVM wrote its class archive on exit (if it recorded one): make it usable now.
        for folder in runtime_root(self._settings).glob("*/cds"):
            promote_recorded(folder, self._is_launcher)
        return self._status("stopped", message=message)

    def _command(self, java: str, runtime: ResolvedRuntime, jar: Path | None, archive_options: list[str]) -> list[str]:
        heap = f"{self._settings.neo4j_heap_mb}m"
        return [
            java,
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Dfile.encoding=UTF-8",
            *archive_options,
            *launcher_arguments(java, runtime, jar),
            "--home",
            str(self.home / "dbms"),
            "--host",
            _HOST,
            "--port",
            str(self.port),
            "--pagecache-mib",
            str(self._settings.neo4j_pagecache_mb),
        ]

    def _wait_ready(self, process: subprocess.Popen[bytes], log_offset: int, runtime: ResolvedRuntime) -> None:
        deadline = time.monotonic() + self._settings.neo4j_start_timeout_s
        while time.monotonic() < deadline:
            output = self._log_since(log_offset)
            if "READY bolt://" in output and _port_open(self.port):
                (self.home / "version").write_text(runtime.version)
                return
            if process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise LocalNeo4jError(
                    f"Neo4j exited with code {process.returncode} during start-up; "
                    f"log {self.log_file}:\n{output[-3000:]}"
                )
            time.sleep(0.25)
        process.terminate()
        self.pid_file.unlink(missing_ok=True)
        raise LocalNeo4jError(
            f"Neo4j was not ready within {self._settings.neo4j_start_timeout_s:.0f} s "
            f"(DRIFTRAG_NEO4J_START_TIMEOUT_S); log {self.log_file}"
        )

    def _log_since(self, offset: int) -> str:
        with self.log_file.open("rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", errors="replace")

    def _live_pid(self) -> int | None:
        """The pid from the pid file if that process is our launcher; a stale file is removed."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if self._is_launcher(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    @staticmethod
    def _is_launcher(pid: int) -> bool:
        return _alive(pid) and MAIN_CLASS.encode() in _cmdline(pid)

    def _status(self, state: Literal["running", "stopped"], *, pid: int | None = None, message: str = ""):
        version_file = self.home / "version"
        return LocalNeo4jStatus(
            state=state,
            bolt_uri=self.bolt_uri,
            pid=pid,
            version=version_file.read_text().strip() if version_file.is_file() else None,
            home=self.home,
            log_file=self.log_file,
            resident_mib=_resident_mib(pid) if pid else None,
            message=message,
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child (exited, not yet reaped) still answers signal 0.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _resident_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((_HOST, port)) == 0
