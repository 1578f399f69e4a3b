"""Running the API: `driftrag serve` (uvicorn in the foreground) and `BackgroundServer` (tests, benchmarks,
notebooks: uvicorn in a thread on a free port).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from driftrag.api.auth import ApiKeys
from driftrag.api.protocol import GuardedH11Protocol, ReadLimits
from driftrag.api.redaction import uvicorn_log_config
from driftrag.errors import ConfigurationError
from driftrag.settings import Settings

log = logging.getLogger("driftrag.api")
WORKER_HEALTHCHECK_S = 120


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name could resolve anywhere


def load_keys(settings: Settings, *, insecure_no_auth: bool) -> ApiKeys:
    """The keys of `settings.api_keys_file`; without any, only `--insecure-no-auth` lets the server start."""
    if insecure_no_auth:
        if settings.api_keys_file is not None:
            log.warning("--insecure-no-auth: the keys in %s are ignored", settings.api_keys_file)
        return ApiKeys.insecure_no_auth()
    if settings.api_keys_file is None:
        raise ConfigurationError(
            "no API keys configured, so the server does not start: create a key with "
            "`driftrag api-key create --name NAME --scopes read --kbs '*' --file keys.json`, set "
            "DRIFTRAG_API_KEYS_FILE=keys.json, or pass --insecure-no-auth for a local experiment"
        )
    return ApiKeys.from_file(settings.api_keys_file, reload_s=settings.api_keys_reload_s)


def check_bind(host: str, *, insecure_no_auth: bool) -> None:
    """Without authentication the server may only listen on the loopback interface."""
    if insecure_no_auth and not _is_loopback(host):
        raise ConfigurationError(
            f"--insecure-no-auth binds only to 127.0.0.1 (or another loopback address), not {host!r}; "
            "configure API keys to listen on other interfaces"
        )


def connection_limits(settings: Settings) -> dict[str, Any]:
    """uvicorn options against slow and greedy clients (`docs/http-hardening.md`), for every server we run."""
    return {
        "http": functools.partial(GuardedH11Protocol, limits=ReadLimits.from_settings(settings)),
        "ws": "none",  # no WebSocket routes: an upgrade request is served as plain HTTP
        "timeout_keep_alive": settings.api_keep_alive_s,
        # uvicorn counts the asking connection itself among the open ones, so N allowed means a limit of N + 1.
        "limit_concurrency": settings.api_max_connections + 1,
        "h11_max_incomplete_event_size": settings.api_max_header_kb * 1024,
    }


@dataclass(frozen=True)
class AppFactory:
    """Builds the app in the process that serves it; plain data, so it is sent to each worker process."""

    settings: Settings
    keys: ApiKeys

    def __call__(self) -> FastAPI:
        from driftrag.api.app import create_app
        from driftrag.facade import DriftRAG

        # A lost Neo4j is logged once by the store's health state; the driver would add lines per connection.
        logging.getLogger("neo4j").setLevel(logging.CRITICAL)
        logging.getLogger("driftrag.store.health").setLevel(logging.WARNING)
        return create_app(DriftRAG(self.settings), self.keys, owns_process=True)


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    insecure_no_auth: bool,
    workers: int | None = None,
    log_level: str = "info",
) -> None:
    """Check keys and address, then run uvicorn until interrupted (the lifespan connects to Neo4j).

    With more than one worker (`workers`, else `settings.api_workers`) the port is bound once here and
    served by that many processes, each with its own app, Neo4j driver and event loop: one Python process
    keeps one core busy at most (JSON, Bolt decoding and validation all hold the GIL).
    """
    workers = workers or settings.api_workers
    if workers < 1:
        raise ConfigurationError(f"the server needs at least 1 worker, got {workers}")
    keys = load_keys(settings, insecure_no_auth=insecure_no_auth)
    check_bind(host, insecure_no_auth=insecure_no_auth)
    if insecure_no_auth:
        log.warning("serving WITHOUT authentication on %s:%d (--insecure-no-auth)", host, port)
    config = uvicorn.Config(
        AppFactory(settings, keys),
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        log_config=uvicorn_log_config(),  # the access log redacts keys sent in a URL
        server_header=False,
        proxy_headers=False,
        # A worker answers the supervisor's pings only once its imports are done (seconds on a busy
        # machine); uvicorn's 5 s default killed and respawned starting workers in a loop.
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        **connection_limits(settings),
    )
    # What `uvicorn.run` does (which insists on an import string for workers): the app here is built
    # from the settings and keys this process read and checked. Ctrl-C is a clean stop, as there.
    try:
        if workers == 1:
            uvicorn.Server(config).run()
        else:
            Multiprocess(config, sockets=[config.bind_socket()]).run()
    except KeyboardInterrupt:
        pass


class BackgroundServer:
    """uvicorn serving `app` in a thread on 127.0.0.1 (a free port by default); a context manager.

    with BackgroundServer(create_app(rag, keys), settings=settings) as server:
        httpx.get(f"{server.url}/api/v1/system", headers=...)

    `settings` gives the connection limits (`api_header_timeout_s`, `api_max_connections`…), as
    `driftrag serve` applies them; without it, their defaults.
    """

    def __init__(
        self,
        app: FastAPI,
        *,
        settings: Settings | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout_s: float = 120.0,
        log_level: str = "warning",
    ) -> None:
        # model_construct: the defaults, without reading the environment.
        limits = connection_limits(settings or Settings.model_construct())
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            log_config=uvicorn_log_config(),
            lifespan="on",
            server_header=False,
            **limits,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="driftrag-api", daemon=True)
        self._host = host
        self._start_timeout_s = start_timeout_s
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    def start(self) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + self._start_timeout_s
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the API server stopped during start-up (see the log)")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the API server did not start within {self._start_timeout_s:g} s")
            time.sleep(0.02)
        # With port 0 the system chose one: read it from the listening socket.
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
