"""A key removed from the keys file is refused by a running server within the reload interval, without a
restart; a key added is accepted as soon. Real uvicorn on 127.0.0.1, the test Neo4j, the keys `serve` loads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from driftrag.api import create_app
from driftrag.api.auth import create_key, revoke_key
from driftrag.api.server import BackgroundServer, load_keys
from driftrag.facade import DriftRAG
from driftrag.settings import Settings

RELOAD_S = 0.5
MARGIN_S = 5.0


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "keys.json"


@pytest.fixture
def watched(api_settings: Settings, keys_file: Path) -> Iterator[tuple[BackgroundServer, dict[str, str]]]:
    secrets = {name: create_key(keys_file, name=name, scopes=["read"], kbs=["*"])[0] for name in ("leaver", "stayer")}
    settings = api_settings.model_copy(update={"api_keys_file": keys_file, "api_keys_reload_s": RELOAD_S})
    app = create_app(DriftRAG(settings), load_keys(settings, insecure_no_auth=False))
    with BackgroundServer(app, settings=settings) as running:
        yield running, secrets


def _status(server: BackgroundServer, key: str, kb: str) -> int:
    response = httpx.post(
        f"{server.url}/api/v1/knowledge-bases/{kb}/graph-search",
        json={"query": "Captain"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=120,
    )
    return response.status_code


def _seconds_until(server: BackgroundServer, key: str, kb: str, status: int) -> float:
    started = time.monotonic()
    while _status(server, key, kb) != status:
        assert time.monotonic() - started < RELOAD_S + MARGIN_S, f"still not {status}"
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_revoked_key_is_refused_within_the_reload_interval(watched, keys_file: Path, corpus_kb: str) -> None:
    server, secrets = watched
    assert _status(server, secrets["leaver"], corpus_kb) == 200
    revoke_key(keys_file, "leaver")
    assert _seconds_until(server, secrets["leaver"], corpus_kb, 401) <= RELOAD_S + MARGIN_S
    assert _status(server, secrets["stayer"], corpus_kb) == 200, "the other key is untouched"


def test_a_key_added_to_the_file_is_accepted_without_a_restart(watched, keys_file: Path, corpus_kb: str) -> None:
    server, _ = watched
    newcomer, _ = create_key(keys_file, name="newcomer", scopes=["read"], kbs=[corpus_kb])
    assert _seconds_until(server, newcomer, corpus_kb, 200) <= RELOAD_S + MARGIN_S


def test_a_broken_keys_file_refuses_every_key(watched, keys_file: Path, corpus_kb: str) -> None:
    server, secrets = watched
    good = keys_file.read_text()
    keys_file.write_text("{ half an edit")
    _seconds_until(server, secrets["stayer"], corpus_kb, 401)
    keys_file.write_text(good)
    _seconds_until(server, secrets["stayer"], corpus_kb, 200)
