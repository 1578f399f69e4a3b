"""A Neo4j that dies (kill -9) is reported quickly and clearly: a DRIFT query raises, HTTP answers 503 at once
while it is known down and 200 again once it is back, an ingestion exits 3 with one error line.

A throwaway local Neo4j of its own (the test port + 20) is killed and started again; the time bounds are
generous (the shared machine is noisy): `benchmarks/neo4j_loss.py` measures the real figures.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from driftrag.api import ApiKeys, create_app
from driftrag.api.server import BackgroundServer
from driftrag.corpora import DATA_DIR
from driftrag.errors import BackendUnavailableError
from driftrag.facade import DriftRAG
from driftrag.local_neo4j import LocalNeo4j
from driftrag.settings import Settings
from tests.conftest import TEST_NEO4J_PORT
from tests.support.api import CORPUS
from tests.support.cli import CLI

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

PORT = TEST_NEO4J_PORT + 20
GENEROUS_S = 20.0


@pytest.fixture(scope="module")
def throwaway() -> Iterator[LocalNeo4j]:
    server = LocalNeo4j(Settings(_env_file=None), port=PORT)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def loss_settings(throwaway: LocalNeo4j, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        _env_file=None,
        neo4j_uri=throwaway.bolt_uri,
        home=tmp_path_factory.mktemp("loss-home"),
        llm_provider="offline",
        connect_retries=2,
        connect_retry_delay_s=0.5,
        neo4j_health_probe_s=2.0,
        chunk_size=60,
        chunk_overlap=0,
    )


@pytest.fixture(scope="module")
async def loss_kb(loss_settings: Settings) -> AsyncIterator[str]:
    kb = f"test-loss-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(loss_settings) as rag:
        await rag.ingest(kb, texts=CORPUS)
    yield kb


def _kill(server: LocalNeo4j) -> float:
    pid = server.status().pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    while server.status().state == "running":
        time.sleep(0.01)
    return time.monotonic()


def _connected(pid: int) -> bool:
    out = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"( dport = :{PORT} )"], capture_output=True, text=True
    ).stdout
    return f"pid={pid}," in out


async def test_a_drift_query_that_loses_neo4j_raises(throwaway: LocalNeo4j, loss_settings: Settings, loss_kb: str):
    throwaway.start()
    killed: list[float] = []

    def kill_after_hyde(event) -> None:
        if event.phase == "hyde" and not killed:
            killed.append(_kill(throwaway))

    async with DriftRAG(loss_settings) as rag:
        with pytest.raises(BackendUnavailableError, match="unreachable"):
            await rag.drift(loss_kb, "Who keeps the Glass Lighthouse?", on_progress=kill_after_hyde)
        assert killed, "Neo4j was killed mid-query"
        assert time.monotonic() - killed[0] < GENEROUS_S
        # Known down: the next query fails from the health state ("next check in"), without waiting on the driver.
        with pytest.raises(BackendUnavailableError, match=r"Neo4j is unreachable \(down for .*next check in"):
            await rag.local(loss_kb, "Who keeps the Glass Lighthouse?")


def test_http_answers_503_while_neo4j_is_down_and_200_once_it_is_back(
    throwaway: LocalNeo4j, loss_settings: Settings, loss_kb: str
) -> None:
    throwaway.start()
    app = create_app(DriftRAG(loss_settings), ApiKeys.insecure_no_auth())
    with BackgroundServer(app) as api, httpx.Client(base_url=f"{api.url}/api/v1", timeout=120) as client:
        stats = f"/knowledge-bases/{loss_kb}/stats"
        assert client.get(stats).status_code == 200
        killed = _kill(throwaway)
        first = client.get(stats)
        assert first.status_code == 503 and first.json()["code"] == "backend_unavailable"
        assert int(first.headers["retry-after"]) > 0
        assert time.monotonic() - killed < GENEROUS_S
        for _ in range(5):
            # From the known-down state: far below the driver's own wait for a dead server (60 s).
            started = time.monotonic()
            again = client.post(f"/knowledge-bases/{loss_kb}/graph-search", json={"query": "Captain"})
            assert again.status_code == 503
            assert time.monotonic() - started < 10.0, "answered from the known-down state"
        throwaway.start()
        deadline = time.monotonic() + GENEROUS_S
        while client.get(stats).status_code != 200:
            assert time.monotonic() < deadline, "the API did not recover once Neo4j was back"
            time.sleep(0.2)


def test_an_ingestion_that_loses_neo4j_exits_3_with_one_error(
    throwaway: LocalNeo4j, loss_settings: Settings, tmp_path: Path
) -> None:
    throwaway.start()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_"))}
    env |= {"NEO4J_URI": throwaway.bolt_uri, "DRIFTRAG_HOME": str(tmp_path), "DRIFTRAG_CONNECT_RETRIES": "2"}
    kb = f"test-loss-ingest-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen(
        [str(CLI), "ingest", str(DATA_DIR / "sample"), "--kb", kb],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _connected(process.pid):
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(2.0)
        assert process.poll() is None, "the ingestion ended before Neo4j was killed"
        killed = _kill(throwaway)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 3, stderr
    assert time.monotonic() - killed < GENEROUS_S
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: Neo4j") and "unreachable" in lines[-1]
    assert len(lines) <= 3, stderr
    assert "Transaction failed and will be retried" not in stderr
