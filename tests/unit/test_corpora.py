"""The corpus registry and `fetch`: pinned checksums, atomic writes, idempotence, no network, `--from`.

Downloads go to a small HTTP server on 127.0.0.1 run by the test; nothing here reaches the internet.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from driftrag import corpora
from driftrag.corpora import Corpus
from driftrag.errors import ChecksumMismatchError, ConfigurationError, DownloadUnavailableError, UnknownCorpusError

BOOK = b"CHAPTER I. Down the Rabbit-Hole\r\n\r\nAlice was beginning to get very tired.\r\n" * 50


@dataclass
class FileServer:
    """Serves `files` (path -> bytes) over HTTP on 127.0.0.1 and counts the GET requests."""

    port: int
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def server() -> Iterator[FileServer]:
    state = FileServer(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def book_corpus(url: str, content: bytes = BOOK) -> Corpus:
    return Corpus(
        name="book",
        title="A test book",
        license="CC0",
        url=url,
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        filename="book.txt",
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part")) if folder.exists() else []


# --- the registry ------------------------------------------------------------------------------------------


def test_registry_names_alice_and_the_shipped_sample() -> None:
    alice = corpora.get_corpus("alice")
    assert alice.url == "https://www.gutenberg.org/cache/epub/11/pg11.txt"
    assert alice.sha256 is not None and len(alice.sha256) == 64
    assert corpora.get_corpus("sample").bundled == "sample"
    assert corpora.corpus_names() == ["alice", "sample"]
    with pytest.raises(UnknownCorpusError, match="known: alice, sample"):
        corpora.get_corpus("bob")


def test_alice_checksum_pins_the_gutenberg_file_the_question_set_quotes(alice_book: Path) -> None:
    alice = corpora.get_corpus("alice")
    assert corpora.sha256_file(alice_book) == alice.sha256
    assert alice_book.stat().st_size == alice.size
    head = alice_book.read_bytes()[:1000].decode("ascii")
    assert head.startswith("Project Gutenberg's Alice's Adventures in Wonderland, by Lewis Carroll\r\n")
    assert "[EBook #11]" in head
    assert "[Last updated: December 20, 2011]" in head


def test_default_destination_is_under_the_home_folder(tmp_path: Path) -> None:
    assert corpora.default_dest(tmp_path) == tmp_path / "corpora"


# --- downloads ---------------------------------------------------------------------------------------------


def test_download_verifies_the_checksum_and_is_not_repeated(server: FileServer, tmp_path: Path) -> None:
    server.files["/book.txt"] = BOOK
    corpus = book_corpus(server.url("/book.txt"))

    first = corpora.fetch(corpus, dest=tmp_path / "corpora")
    assert first.action == "downloaded"
    assert first.path == tmp_path / "corpora" / "book.txt"
    assert first.path.read_bytes() == BOOK
    assert first.bytes == len(BOOK) and first.sha256 == corpus.sha256

    second = corpora.fetch(corpus, dest=tmp_path / "corpora")
    assert second.action == "present"
    assert server.requests == ["/book.txt"]  # one download, not two
    assert leftovers(tmp_path / "corpora") == []


def test_checksum_mismatch_writes_nothing(server: FileServer, tmp_path: Path) -> None:
    server.files["/book.txt"] = BOOK + b"a newer edition\r\n"
    corpus = book_corpus(server.url("/book.txt"))

    with pytest.raises(ChecksumMismatchError) as caught:
        corpora.fetch(corpus, dest=tmp_path)
    message = str(caught.value)
    actual = hashlib.sha256(server.files["/book.txt"]).hexdigest()
    assert corpus.sha256 in message and actual in message
    assert f"--sha256 {actual}" in message  # how to accept that edition on purpose
    assert not (tmp_path / "book.txt").exists()
    assert leftovers(tmp_path) == []


def test_an_accepted_other_edition_is_kept(server: FileServer, tmp_path: Path) -> None:
    newer = BOOK + b"a newer edition\r\n"
    server.files["/book.txt"] = newer
    corpus = book_corpus(server.url("/book.txt"))
    result = corpora.fetch(corpus, dest=tmp_path, expected_sha256=hashlib.sha256(newer).hexdigest().upper())
    assert result.action == "downloaded" and result.path.read_bytes() == newer


def test_a_wrong_file_in_place_is_replaced(server: FileServer, tmp_path: Path) -> None:
    server.files["/book.txt"] = BOOK
    (tmp_path / "book.txt").write_bytes(b"truncated")
    result = corpora.fetch(book_corpus(server.url("/book.txt")), dest=tmp_path)
    assert result.action == "downloaded"
    assert (tmp_path / "book.txt").read_bytes() == BOOK


def test_a_mirror_url_overrides_the_registry(server: FileServer, tmp_path: Path) -> None:
    server.files["/mirror/book.txt"] = BOOK
    corpus = book_corpus(server.url("/gone.txt"))
    result = corpora.fetch(corpus, dest=tmp_path, url=server.url("/mirror/book.txt"))
    assert result.action == "downloaded" and result.source.endswith("/mirror/book.txt")


def test_no_network_says_so_with_the_url_and_the_way_round_it(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/pg11.txt"
    with pytest.raises(DownloadUnavailableError) as caught:
        corpora.fetch("alice", dest=tmp_path, url=url)
    message = str(caught.value)
    assert "cannot download alice: no connection to 127.0.0.1" in message
    assert f"URL: {url}" in message
    assert "driftrag data fetch alice --from PATH" in message
    assert not (tmp_path / "alice_in_wonderland.txt").exists()
    assert leftovers(tmp_path) == []


def test_a_silent_server_times_out(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/pg11.txt"
        with pytest.raises(DownloadUnavailableError, match="timed out"):
            corpora.fetch("alice", dest=tmp_path, url=url, timeout_s=0.3)
    assert leftovers(tmp_path) == []


def test_an_http_error_is_reported_with_the_status(server: FileServer, tmp_path: Path) -> None:
    with pytest.raises(DownloadUnavailableError, match="answered HTTP 404"):
        corpora.fetch(book_corpus(server.url("/missing.txt")), dest=tmp_path)


# --- --from ------------------------------------------------------------------------------------------------


def test_from_a_local_file_checks_and_copies(tmp_path: Path) -> None:
    local = tmp_path / "downloads" / "pg11.txt"
    local.parent.mkdir()
    local.write_bytes(BOOK)
    corpus = book_corpus("http://127.0.0.1:9/never-used")

    result = corpora.fetch(corpus, dest=tmp_path / "corpora", source=local)
    assert result.action == "copied" and result.source == str(local)
    assert (tmp_path / "corpora" / "book.txt").read_bytes() == BOOK


def test_from_a_wrong_file_is_refused_even_when_the_target_is_fine(tmp_path: Path) -> None:
    corpus = book_corpus("http://127.0.0.1:9/never-used")
    (tmp_path / "book.txt").write_bytes(BOOK)
    wrong = tmp_path / "other.txt"
    wrong.write_bytes(b"another book")
    with pytest.raises(ChecksumMismatchError, match="is not the pinned edition of book"):
        corpora.fetch(corpus, dest=tmp_path, source=wrong)
    assert (tmp_path / "book.txt").read_bytes() == BOOK
    assert leftovers(tmp_path) == []


def test_from_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file"):
        corpora.fetch("alice", dest=tmp_path, source=tmp_path / "nope.txt")


def test_alice_from_a_local_copy(tmp_path: Path, alice_book: Path) -> None:
    result = corpora.fetch("alice", dest=tmp_path, source=alice_book)
    assert result.path == tmp_path / "alice_in_wonderland.txt"
    assert result.path.read_bytes() == alice_book.read_bytes()
    assert corpora.fetch("alice", dest=tmp_path).action == "present"  # and no network needed for that


# --- the shipped sample ------------------------------------------------------------------------------------


def test_the_sample_is_the_shipped_folder(tmp_path: Path) -> None:
    result = corpora.fetch("sample", dest=tmp_path)
    assert result.action == "shipped"
    assert sorted(p.name for p in result.path.glob("*.md")) == [
        "01-the-dark-lamp.md",
        "02-the-lodestone-in-the-lid.md",
        "03-the-empty-chest.md",
        "04-the-light-returns.md",
    ]
    assert list(tmp_path.iterdir()) == []  # nothing copied
    with pytest.raises(ConfigurationError, match="ships with driftrag"):
        corpora.fetch("sample", dest=tmp_path, source=tmp_path / "x.txt")


def test_the_sample_can_be_copied(tmp_path: Path) -> None:
    copied = corpora.copy_shipped("sample", tmp_path)
    (copied.path / "01-the-dark-lamp.md").write_text("edited", encoding="utf-8")
    (copied.path / "notes.txt").write_text("mine", encoding="utf-8")
    again = corpora.copy_shipped("sample", tmp_path)
    assert copied.path == again.path == tmp_path / "sample"
    assert len(list(copied.path.glob("*.md"))) == 4
    assert (copied.path / "01-the-dark-lamp.md").read_text(encoding="utf-8") != "edited"  # refreshed
    assert (copied.path / "notes.txt").read_text(encoding="utf-8") == "mine"  # never deletes the user's files
    assert sorted(p.name for p in copied.path.iterdir() if p.name.endswith(".part")) == []


# --- corpus_file: what scripts, benchmarks and notebooks call ------------------------------------------------


def test_corpus_file_prefers_the_given_path_and_refuses_a_missing_one(tmp_path: Path) -> None:
    given = tmp_path / "mine.txt"
    given.write_text("any text", encoding="utf-8")
    assert corpora.corpus_file("alice", home=tmp_path / "home", path=given) == given
    with pytest.raises(ConfigurationError, match="no such file"):
        corpora.corpus_file("alice", home=tmp_path / "home", path=tmp_path / "nope.txt")


def test_corpus_file_reads_the_copy_data_fetch_keeps(tmp_path: Path, alice_book: Path) -> None:
    home = tmp_path / "home"
    corpora.fetch("alice", dest=corpora.default_dest(home), source=alice_book)  # `driftrag data fetch alice --from`
    assert corpora.corpus_file("alice", home=home) == home / "corpora" / "alice_in_wonderland.txt"
