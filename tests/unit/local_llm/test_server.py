"""The local model server's start: one clear error naming the file when it cannot serve it, and the host's
running server of the same model used instead of loading it again."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from driftrag.errors import LocalModelError
from driftrag.local_llm.server import LocalModelServer
from driftrag.settings import Settings
from tests.support.gguf_files import write_gguf


def _settings(tmp_path: Path, model: Path | None, **fields: object) -> Settings:
    return Settings(_env_file=None, home=tmp_path / "home", llm_provider="local", local_model=model, **fields)


def test_the_local_provider_needs_a_model_file(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="DRIFTRAG_LOCAL_MODEL"):
        LocalModelServer(_settings(tmp_path, None))


def test_a_missing_model_is_named_on_start(tmp_path: Path) -> None:
    missing = tmp_path / "gone.gguf"
    server = LocalModelServer(_settings(tmp_path, missing))  # no I/O until started
    with pytest.raises(LocalModelError, match=rf"local model {missing} does not exist"):
        server.start()
    assert server.status is None


def test_a_file_that_is_not_gguf_is_named_on_start(tmp_path: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("# my notes\n")
    with pytest.raises(LocalModelError, match=rf"local model {text} is not a GGUF file"):
        LocalModelServer(_settings(tmp_path, text)).start()


def test_a_gguf_header_that_cannot_load_is_named_on_start(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp", reason="loading needs the `local` extra")
    hollow = write_gguf(tmp_path / "hollow.gguf", metadata={"general.architecture": "llama", "general.name": "Hollow"})
    with pytest.raises(
        LocalModelError, match=rf"local model {hollow} \(Hollow, GGUF\) could not be loaded by llama.cpp"
    ):
        LocalModelServer(_settings(tmp_path, hollow, local_threads=1, llm_concurrency=1, local_context=256)).start()


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def healthy_port() -> Iterator[int]:
    """A server that answers `/health` as llama.cpp's does once its model is loaded."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_the_hosts_server_of_the_same_model_is_used_not_loaded_again(tmp_path: Path, healthy_port: int) -> None:
    model = write_gguf(tmp_path / "tiny.gguf", metadata={"general.architecture": "llama", "llama.context_length": 4096})
    settings = _settings(tmp_path, model, llm_concurrency=2)
    stat = model.stat()
    state = {
        "pid": os.getpid(),  # a live process serving it
        "port": healthy_port,
        "model": str(model.resolve()),
        "model_bytes": stat.st_size,
        "model_mtime_ns": stat.st_mtime_ns,
        "context": 4096,  # the model's context, under the 8192 cap
        "slots": 2,
        "threads": 1,
    }
    settings.local_model_dir.mkdir(parents=True)
    state_file = settings.local_model_dir / "server.json"
    state_file.write_text(json.dumps(state))

    server = LocalModelServer(settings)
    status = server.start()
    assert not status.owned and status.base_url == f"http://127.0.0.1:{healthy_port}/v1"
    assert (status.context, status.slots) == (4096, 2)
    server.stop()
    assert state_file.is_file(), "a borrowed server is left to the process that runs it"


def test_a_server_of_another_shape_or_a_dead_one_is_not_used(tmp_path: Path, healthy_port: int) -> None:
    pytest.importorskip("xllamacpp", reason="the fallback loads the model itself")
    model = write_gguf(tmp_path / "tiny.gguf", metadata={"general.architecture": "llama"})
    settings = _settings(tmp_path, model, llm_concurrency=1, local_context=512, local_threads=1)
    stat = model.stat()
    settings.local_model_dir.mkdir(parents=True)
    base = {"model": str(model.resolve()), "model_bytes": stat.st_size, "model_mtime_ns": stat.st_mtime_ns}
    for state in (
        {**base, "pid": os.getpid(), "port": healthy_port, "context": 1024, "slots": 1, "threads": 1},
        {**base, "pid": 2**22 + 1, "port": healthy_port, "context": 512, "slots": 1, "threads": 1},
    ):
        (settings.local_model_dir / "server.json").write_text(json.dumps(state))
        # Not reused, so this process loads the (hollow) model itself, and says why it cannot.
        with pytest.raises(LocalModelError, match="could not be loaded"):
            LocalModelServer(settings).start()
