"""llama.cpp's OpenAI-compatible server inside this process (`xllamacpp`), for `llm_provider=local`.

`LocalModelServer(settings)` does no I/O; `start()` (or `astart()` from async code) reads the model's GGUF
header, loads it and serves it on a free port of 127.0.0.1, and `stop()` ends it (the engine's `close`).

Sharing with the other processes of the host, as the local Neo4j is shared: the server that runs writes
`<home>/local-model/server.json` (pid, port, model, context, slots); a process that starts the same model
with the same context and slots while that one answers its health check uses it instead of loading the
model again. Unlike the detached Neo4j, this server lives inside the process that started it, so it ends
with that process's engine: a process that borrowed it then gets connection errors on its next calls,
and its next engine starts its own. Starts are serialised by `<home>/local-model/start.lock`.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from driftrag.errors import LocalModelError, OptionalDependencyError
from driftrag.local_llm.gguf import GgufInfo, read_gguf_info
from driftrag.local_neo4j.locking import exclusive_lock
from driftrag.settings import Settings

HOST = "127.0.0.1"
# The default context when neither the setting nor the model says: long prompts cost a CPU model dearly.
DEFAULT_CONTEXT = 8192
# llama.cpp keeps recent prompts in host memory for reuse, 8 GiB by default: a small cache is plenty here.
_PROMPT_CACHE_MIB = 128
# llama.cpp's log level: errors only (why a model did not load), not its per-request lines.
_LOG_ERRORS_ONLY = 1


class LocalModelStatus(BaseModel):
    """The server this engine talks to: its model, address and shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: GgufInfo
    base_url: str
    pid: int
    context: int
    slots: int
    threads: int
    owned: bool

    def describe(self) -> str:
        whose = "in this process" if self.owned else f"shared with process {self.pid}"
        return (
            f"llama.cpp at {self.base_url} ({whose}): {self.model.describe()}; context {self.context:,} tokens "
            f"per slot, {self.slots} slot(s), {self.threads} thread(s)"
        )


class _State(BaseModel):
    """`server.json`: the running server and what it serves."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    port: int
    model: str
    model_bytes: int
    model_mtime_ns: int
    context: int
    slots: int
    threads: int


def served_context(settings: Settings, model: GgufInfo) -> int:
    """`local_context`, else the model's trained context capped at DEFAULT_CONTEXT."""
    if settings.local_context is not None:
        return settings.local_context
    return min(model.trained_context or DEFAULT_CONTEXT, DEFAULT_CONTEXT)


def server_threads(settings: Settings) -> int:
    """`local_threads`, or with 0 the CPU cores this process may run on."""
    if settings.local_threads:
        return settings.local_threads
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class LocalModelServer:
    """The local model server of `settings` (started on first `start`, once)."""

    def __init__(self, settings: Settings) -> None:
        if settings.local_model is None:
            raise LocalModelError("llm_provider=local needs DRIFTRAG_LOCAL_MODEL: the path of a .gguf chat model")
        self._settings = settings
        self.model_path = Path(settings.local_model).expanduser()
        self._state_file = settings.local_model_dir / "server.json"
        self._guard = threading.Lock()  # concurrent first calls start it once
        self._server: Any = None
        self._status: LocalModelStatus | None = None

    @property
    def status(self) -> LocalModelStatus | None:
        """The server in use once started, else None."""
        return self._status

    async def astart(self) -> LocalModelStatus:
        """`start` off the event loop (loading a model takes seconds)."""
        import asyncio

        if self._status is not None:
            return self._status
        return await asyncio.to_thread(self.start)

    def start(self) -> LocalModelStatus:
        """Serve the model (or use the host's server of it); LocalModelError naming the file when it cannot."""
        with self._guard:
            if self._status is None:
                self._status = self._start()
            return self._status

    def stop(self) -> None:
        """End the server this process started (a borrowed one is left to its process)."""
        with self._guard:
            status, server, self._server, self._status = self._status, self._server, None, None
            if server is None or status is None:
                return
            del server  # xllamacpp stops its HTTP loop and frees the model when the object goes
            state = self._read_state()
            if state is not None and state.pid == os.getpid() and status.base_url.endswith(f":{state.port}/v1"):
                self._state_file.unlink(missing_ok=True)

    def _start(self) -> LocalModelStatus:
        model = read_gguf_info(self.model_path)
        context, slots = served_context(self._settings, model), self._settings.local_slots()
        threads = server_threads(self._settings)
        lock = self._settings.local_model_dir / "start.lock"
        with exclusive_lock(lock, timeout_s=self._settings.local_start_timeout_s + 60, error=LocalModelError):
            shared = self._shared(model, context, slots)
            if shared is not None:
                return shared
            port = self._serve(model, context, slots, threads)
            self._wait_healthy(port)
            stat = self.model_path.stat()
            state = _State(
                pid=os.getpid(),
                port=port,
                model=str(self.model_path.resolve()),
                model_bytes=stat.st_size,
                model_mtime_ns=stat.st_mtime_ns,
                context=context,
                slots=slots,
                threads=threads,
            )
            self._state_file.write_text(state.model_dump_json())
        return LocalModelStatus(
            model=model,
            base_url=_base_url(port),
            pid=os.getpid(),
            context=context,
            slots=slots,
            threads=threads,
            owned=True,
        )

    def _serve(self, model: GgufInfo, context: int, slots: int, threads: int) -> int:
        try:
            import xllamacpp
        except ImportError as exc:
            raise OptionalDependencyError(
                "llm_provider=local needs llama.cpp's Python server: pip install 'driftrag[local]' (xllamacpp)"
            ) from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        # Each slot gets the whole context (llama.cpp splits n_ctx between the slots).
        params.n_ctx = context * slots
        params.n_parallel = slots
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.hostnames = [HOST]
        params.port = 0  # the system picks a free one; the server reports it
        params.cache_ram_mib = _PROMPT_CACHE_MIB
        params.verbosity = _LOG_ERRORS_ONLY
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as exc:
            name = model.name or model.architecture or "unnamed"
            raise LocalModelError(
                f"local model {self.model_path} ({name}, GGUF) could not be loaded by llama.cpp: {exc} "
                "(its reason is logged above); check the file is a whole chat model that this llama.cpp "
                "supports, and that the context fits in memory (DRIFTRAG_LOCAL_CONTEXT, DRIFTRAG_LLM_CONCURRENCY)"
            ) from exc
        return int(str(self._server.listening_address).rsplit(":", 1)[1].strip("/"))

    def _wait_healthy(self, port: int) -> None:
        deadline = time.monotonic() + self._settings.local_start_timeout_s
        while not _healthy(port):
            if time.monotonic() > deadline:
                server, self._server = self._server, None
                del server
                raise LocalModelError(
                    f"the llama.cpp server of {self.model_path} did not answer its health check within "
                    f"{self._settings.local_start_timeout_s:g} s (DRIFTRAG_LOCAL_START_TIMEOUT_S)"
                )
            time.sleep(0.1)

    def _shared(self, model: GgufInfo, context: int, slots: int) -> LocalModelStatus | None:
        """The host's running server when it serves this model file as asked and answers."""
        state = self._read_state()
        if state is None or not _alive(state.pid):
            return None
        stat = self.model_path.stat()
        same = (state.model, state.model_bytes, state.model_mtime_ns, state.context, state.slots) == (
            str(self.model_path.resolve()),
            stat.st_size,
            stat.st_mtime_ns,
            context,
            slots,
        )
        if not same or not _healthy(state.port):
            return None
        return LocalModelStatus(
            model=model,
            base_url=_base_url(state.port),
            pid=state.pid,
            context=state.context,
            slots=state.slots,
            threads=state.threads,
            owned=False,
        )

    def _read_state(self) -> _State | None:
        try:
            return _State.model_validate_json(self._state_file.read_text())
        except (OSError, ValidationError):
            return None


def _base_url(port: int) -> str:
    return f"http://{HOST}:{port}/v1"


def _healthy(port: int) -> bool:
    """llama.cpp answers `/health` with 200 once its model is loaded (503 while loading)."""
    try:
        return httpx.get(f"http://{HOST}:{port}/health", timeout=2.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
