"""The app factory `driftrag serve` sends to its worker processes."""

import pickle
from pathlib import Path

from fastapi import FastAPI

from driftrag.api.auth import ApiKeys
from driftrag.api.server import AppFactory
from driftrag.settings import Settings


def test_the_app_factory_survives_pickling_and_builds_the_app(tmp_path: Path) -> None:
    factory = AppFactory(Settings(_env_file=None, home=tmp_path, api_workers=2), ApiKeys.insecure_no_auth())
    copy = pickle.loads(pickle.dumps(factory))  # what spawning a worker process does
    assert copy.settings.api_workers == 2 and copy.settings.home == tmp_path
    app = copy()
    assert isinstance(app, FastAPI)
    assert any(path.endswith("/graph-search") for path in app.openapi()["paths"])
