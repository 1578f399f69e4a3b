"""The corpus registry and `fetch`: pinned checksums, stripped boilerplate, atomic writes, idempotence,
no network, `--from`, the shipped French text.

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
from driftrag.corpora import Corpus, strip_boilerplate
from driftrag.errors import ChecksumMismatchError, ConfigurationError, DownloadUnavailableError, UnknownCorpusError
from tests.support.ports import free_port

STORY = b"CHAPTER I. Down the Rabbit-Hole\r\n\r\nAlice was beginning to get very tired.\r\n" * 50
HEADER = (
    b"\xef\xbb\xbfThe Project Gutenberg eBook of A Test Book\r\n\r\nRelease Date: [eBook #99999]\r\n\r\n"
    b"*** START OF THE PROJECT GUTENBERG EBOOK A TEST BOOK ***\r\n"
)
LICENCE = b"*** END OF THE PROJECT GUTENBERG EBOOK A TEST BOOK ***\r\n\r\nSection 1. General Terms of Use\r\n" * 3
BOOK = HEADER + STORY + LICENCE  # the publisher's file, as downloaded


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


def book_corpus(url: str, content: bytes = BOOK, story: bytes = STORY) -> Corpus:
    return Corpus(
        name="book",
        title="A test book",
        license="CC0",
        url=url,
        sha256=hashlib.sha256(content).hexdigest(),
        size=len(content),
        text_sha256=hashlib.sha256(story).hexdigest(),
        text_size=len(story),
        filename="book.txt",
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part")) if folder.exists() else []


# --- the registry ------------------------------------------------------------------------------------------


def test_registry_names_alice_the_french_novel_and_the_shipped_sample() -> None:
    alice = corpora.get_corpus("alice")
    assert alice.url == "https://www.gutenberg.org/cache/epub/11/pg11.txt"
    assert alice.sha256 is not None and len(alice.sha256) == 64
    assert alice.text_sha256 is not None and alice.text_sha256 != alice.sha256
    verne = corpora.get_corpus("verne")
    assert verne.url == "https://www.gutenberg.org/cache/epub/5097/pg5097.txt"
    assert verne.shipped_text_path is not None and verne.shipped_text_path.is_file()
    assert corpora.get_corpus("sample").bundled == "sample"
    assert corpora.corpus_names() == ["alice", "verne", "sample"]
    with pytest.raises(UnknownCorpusError, match="known: alice, verne, sample"):
        corpora.get_corpus("bob")


def test_alice_is_kept_as_its_story_the_question_set_quotes(alice_book: Path) -> None:
    alice = corpora.get_corpus("alice")
    assert corpora.sha256_file(alice_book) == alice.text_sha256
    assert alice_book.stat().st_size == alice.text_size
    text = alice_book.read_bytes().decode("ascii")
    assert text.startswith("ALICE'S ADVENTURES IN WONDERLAND\r\n\r\nLewis Carroll\r\n")
    assert "CHAPTER I. Down the Rabbit-Hole\r\n" in text
    assert text.rstrip().endswith("THE END")
    assert "Gutenberg" not in text  # neither the header nor the licence


def test_the_shipped_french_text_is_the_stripped_pinned_edition() -> None:
    verne = corpora.get_corpus("verne")
    shipped = verne.shipped_text_path
    assert shipped is not None
    assert corpora.sha256_file(shipped) == verne.text_sha256
    assert shipped.stat().st_size == verne.text_size
    text = shipped.read_bytes().decode("utf-8")
    assert "\r\n" in text and "\ufeff" not in text  # CRLF kept as published; the BOM was in the header
    assert "UN ÉCUEIL FUYANT" in text and text.rstrip().endswith("FIN DE LA SECONDE PARTIE")
    assert "Gutenberg" not in text


def test_default_destination_is_under_the_home_folder(tmp_path: Path) -> None:
    assert corpora.default_dest(tmp_path) == tmp_path / "corpora"


# --- the publisher's boilerplate -----------------------------------------------------------------------------


def test_markers_are_removed_and_the_story_kept_byte_for_byte() -> None:
    stripped = strip_boilerplate(BOOK)
    assert stripped.text == STORY
    assert stripped.start_found and stripped.end_found


def test_the_older_marker_lines_are_recognised_and_lf_endings_kept() -> None:
    story = b"Chapter 1\n\nThe story, *** with stars *** inside.\n\n  THE END\n\n"
    old = (
        b"Project Gutenberg's A Book, by Someone\n\n*** START OF THIS PROJECT GUTENBERG EBOOK A BOOK ***\n"
        + story
        + b"End of Project Gutenberg's A Book, by Someone\n\n*** END OF THIS PROJECT GUTENBERG EBOOK A BOOK ***\n"
        + b"licence text\n"
    )
    assert strip_boilerplate(old).text == story


def test_an_edition_without_a_start_line_names_its_first_line() -> None:
    raw = (
        b"Project Gutenberg's A Book\r\n\r\nCharacter set encoding: ASCII\r\n\r\n\r\nA BOOK\r\n\r\nChapter 1\r\n"
        b"END OF THIS PROJECT GUTENBERG EBOOK A BOOK\r\nlicence\r\n"
    )
    assert strip_boilerplate(raw, story_start="A BOOK").text == b"A BOOK\r\n\r\nChapter 1\r\n"
    assert strip_boilerplate(raw).text == raw[: raw.index(b"END OF THIS")]  # without it, only the end is cut


def test_a_file_without_markers_is_kept_whole() -> None:
    stripped = strip_boilerplate(STORY)
    assert stripped.text == STORY
    assert not stripped.removed


def test_a_text_without_markers_is_kept_whole_by_fetch(server: FileServer, tmp_path: Path) -> None:
    server.files["/plain.txt"] = STORY
    result = corpora.fetch(book_corpus(server.url("/plain.txt"), content=STORY), dest=tmp_path)
    assert result.path.read_bytes() == STORY and result.removed_bytes == 0


def test_a_stripped_text_that_disagrees_with_its_pinned_checksum_is_refused(server: FileServer, tmp_path: Path) -> None:
    server.files["/book.txt"] = BOOK
    corpus = book_corpus(server.url("/book.txt"), story=STORY + b"a different stripping\r\n")
    with pytest.raises(ChecksumMismatchError, match="stripped text of book"):
        corpora.fetch(corpus, dest=tmp_path)
    assert not (tmp_path / "book.txt").exists()
    assert leftovers(tmp_path) == []


def test_an_unstripped_copy_already_there_is_stripped_in_place_without_network(tmp_path: Path) -> None:
    corpus = book_corpus(f"http://127.0.0.1:{free_port()}/book.txt")
    (tmp_path / "book.txt").write_bytes(BOOK)  # what an older driftrag kept
    result = corpora.fetch(corpus, dest=tmp_path)
    assert result.action == "stripped"
    assert (tmp_path / "book.txt").read_bytes() == STORY
    assert corpora.fetch(corpus, dest=tmp_path).action == "present"


def test_from_accepts_the_stripped_text_too(tmp_path: Path) -> None:
    local = tmp_path / "story.txt"
    local.write_bytes(STORY)
    result = corpora.fetch(book_corpus("http://127.0.0.1:9/never-used"), dest=tmp_path / "corpora", source=local)
    assert result.action == "copied" and result.removed_bytes == 0
    assert result.path.read_bytes() == STORY


# --- downloads ---------------------------------------------------------------------------------------------


def test_download_verifies_the_checksum_and_is_not_repeated(server: FileServer, tmp_path: Path) -> None:
    server.files["/book.txt"] = BOOK
    corpus = book_corpus(server.url("/book.txt"))

    first = corpora.fetch(corpus, dest=tmp_path / "corpora")
    assert first.action == "downloaded"
    assert first.path == tmp_path / "corpora" / "book.txt"
    assert first.path.read_bytes() == STORY  # header and licence stripped
    assert first.bytes == len(STORY) and first.removed_bytes == len(BOOK) - len(STORY)
    assert first.source_sha256 == corpus.sha256 and first.sha256 == corpus.text_sha256

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
    assert result.action == "downloaded" and result.path.read_bytes() == STORY


def test_a_wrong_file_in_place_is_replaced(server: FileServer, tmp_path: Path) -> None:
    server.files["/book.txt"] = BOOK
    (tmp_path / "book.txt").write_bytes(b"truncated")
    result = corpora.fetch(book_corpus(server.url("/book.txt")), dest=tmp_path)
    assert result.action == "downloaded"
    assert (tmp_path / "book.txt").read_bytes() == STORY


def test_a_mirror_url_overrides_the_registry(server: FileServer, tmp_path: Path) -> None:
    server.files["/mirror/book.txt"] = BOOK
    corpus = book_corpus(server.url("/gone.txt"))
    result = corpora.fetch(corpus, dest=tmp_path, url=server.url("/mirror/book.txt"))
    assert result.action == "downloaded" and result.source.endswith("/mirror/book.txt")


def test_no_network_says_so_with_the_url_and_the_way_round_it(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/pg11.txt"
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
    assert (tmp_path / "corpora" / "book.txt").read_bytes() == STORY


def test_from_a_wrong_file_is_refused_even_when_the_target_is_fine(tmp_path: Path) -> None:
    corpus = book_corpus("http://127.0.0.1:9/never-used")
    (tmp_path / "book.txt").write_bytes(STORY)
    wrong = tmp_path / "other.txt"
    wrong.write_bytes(b"another book")
    with pytest.raises(ChecksumMismatchError, match="is not the pinned edition of book"):
        corpora.fetch(corpus, dest=tmp_path, source=wrong)
    assert (tmp_path / "book.txt").read_bytes() == STORY
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


def test_the_french_novel_is_copied_from_its_shipped_text_without_network(tmp_path: Path) -> None:
    verne = corpora.get_corpus("verne")
    result = corpora.fetch("verne", dest=tmp_path)
    assert result.action == "copied" and result.source == str(verne.shipped_text_path)
    assert result.path == tmp_path / "vingt_mille_lieues_sous_les_mers.txt"
    assert corpora.sha256_file(result.path) == verne.text_sha256
    assert corpora.fetch("verne", dest=tmp_path).action == "present"


def test_a_url_for_the_french_novel_downloads_instead(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/pg5097.txt"
    with pytest.raises(DownloadUnavailableError, match="cannot download verne"):
        corpora.fetch("verne", dest=tmp_path, url=url)


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
