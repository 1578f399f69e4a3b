"""The app factory `driftrag serve` sends to its worker processes."""

import pickle
from pathlib import Path

from fastapi import FastAPI

from driftrag.api.auth import ApiKeys
from driftrag.api.protocol import GuardedH11Protocol, ReadLimits
from driftrag.api.server import AppFactory, connection_limits
from driftrag.settings import Settings


def test_the_app_factory_survives_pickling_and_builds_the_app(tmp_path: Path) -> None:
    factory = AppFactory(Settings(_env_file=None, home=tmp_path, api_workers=2), ApiKeys.insecure_no_auth())
    copy = pickle.loads(pickle.dumps(factory))  # what spawning a worker process does
    assert copy.settings.api_workers == 2 and copy.settings.home == tmp_path
    app = copy()
    assert isinstance(app, FastAPI)
    assert any(path.endswith("/graph-search") for path in app.openapi()["paths"])


def test_the_connection_limits_follow_the_settings_and_reach_worker_processes() -> None:
    settings = Settings(
        _env_file=None,
        api_header_timeout_s=3,
        api_body_timeout_s=7,
        api_body_min_rate_kib_s=8,
        api_keep_alive_s=2,
        api_max_connections=40,
        api_max_header_kb=8,
    )
    limits = pickle.loads(pickle.dumps(connection_limits(settings)))  # the config is sent to each worker
    assert limits["http"].func is GuardedH11Protocol
    assert limits["http"].keywords["limits"] == ReadLimits(
        header_timeout_s=3, body_timeout_s=7, body_min_rate=8192, max_header_bytes=8 * 1024
    )
    assert limits["timeout_keep_alive"] == 2 and limits["h11_max_incomplete_event_size"] == 8 * 1024
    # uvicorn counts the asking connection among the open ones.
    assert limits["limit_concurrency"] == 41
