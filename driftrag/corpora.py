"""Public-domain corpora by name: a pinned download, a local copy checked against it, or a shipped folder.

    driftrag data list
    driftrag data fetch alice                    # <DRIFTRAG_HOME>/corpora/alice_in_wonderland.txt
    driftrag data fetch alice --from ~/pg11.txt  # no network: check and copy a file you have
    corpus_file("alice", home=settings.home)     # the same copy, from Python (benchmarks, notebooks)

A download streams into a temporary file beside its target, hashed as it arrives, and is renamed into
place only when its SHA-256 is the pinned one: a target is either absent or exactly the pinned edition.
A target that already has the pinned checksum is neither downloaded nor copied again.

The checksum pins an *edition*, not just a book: Project Gutenberg re-issues its texts (new headers,
typographic quotes), and the question set `data/questions/alice.jsonl` quotes its evidence verbatim
from the edition pinned here. `expected_sha256` (`--sha256`) accepts another edition on purpose.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from driftrag import __version__
from driftrag.errors import ChecksumMismatchError, ConfigurationError, DownloadUnavailableError, UnknownCorpusError

# The source tree's data/ folder: the shipped corpora live there, beside the package, not inside it.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
DOWNLOAD_TIMEOUT_S = 30.0
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024  # far above any registered text; stops a wrong URL filling the disk
_BLOCK = 64 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


class Corpus(BaseModel):
    """One registered corpus: a pinned download (`url` + `sha256`) or a folder shipped in `data/`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    license: str
    edition: str = Field(default="", description="Which edition the checksum pins.")
    url: str | None = None
    sha256: str | None = Field(default=None, description="SHA-256 of the pinned file (hex).")
    size: int | None = Field(default=None, description="Bytes of the pinned file.")
    filename: str | None = Field(default=None, description="File name under the destination folder.")
    bundled: str | None = Field(default=None, description="Folder under the source tree's data/ (no download).")

    @property
    def shipped_path(self) -> Path | None:
        return DATA_DIR / self.bundled if self.bundled else None

    def describe_source(self) -> str:
        return self.url or f"shipped: data/{self.bundled}/"


class FetchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    path: Path = Field(description="The file (or, for a shipped corpus, the folder) to ingest.")
    action: Literal["downloaded", "copied", "present", "shipped"]
    sha256: str | None = None
    bytes: int = 0
    source: str = Field(description="The URL or local path it came from.")

    def describe(self) -> str:
        what = {
            "downloaded": f"downloaded {self.bytes:,} bytes from {self.source}",
            "copied": f"copied {self.bytes:,} bytes from {self.source}",
            "present": "already present with the pinned checksum; nothing downloaded",
            "shipped": "shipped with driftrag",
        }[self.action]
        checked = " (SHA-256 verified)" if self.sha256 and self.action != "shipped" else ""
        return f"{self.name}: {what}{checked}: {self.path}"


CORPORA: tuple[Corpus, ...] = (
    Corpus(
        name="alice",
        title="Alice's Adventures in Wonderland, Lewis Carroll (Project Gutenberg #11)",
        license="Public domain in the USA (Project Gutenberg License for the file)",
        edition="Posting Date June 25, 2008, last updated December 20, 2011; ASCII, CRLF line endings",
        url="https://www.gutenberg.org/cache/epub/11/pg11.txt",
        sha256="949bd0aa3dc86972bdc20cbbf8929c3e8738b8a0d39a14270ffd0803323a60dc",
        size=167_088,
        filename="alice_in_wonderland.txt",
    ),
    Corpus(
        name="sample",
        title='"The Lantern Charter", an original four-chapter story written for driftrag',
        license="CC0 1.0 (public domain dedication)",
        bundled="sample",
    ),
)


def corpus_names() -> list[str]:
    return [corpus.name for corpus in CORPORA]


def get_corpus(name: str) -> Corpus:
    for corpus in CORPORA:
        if corpus.name == name:
            return corpus
    raise UnknownCorpusError(f"no corpus named {name!r}; known: {', '.join(corpus_names())}")


def default_dest(home: Path) -> Path:
    """`<DRIFTRAG_HOME>/corpora`: pass `Settings().home`."""
    return home / "corpora"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(
    corpus: Corpus | str,
    *,
    dest: Path,
    source: Path | None = None,
    url: str | None = None,
    expected_sha256: str | None = None,
    timeout_s: float = DOWNLOAD_TIMEOUT_S,
) -> FetchResult:
    """Make the corpus available under `dest` and say where it is.

    - a shipped corpus: its folder in the source tree, used where it is (`dest` is ignored; `copy_shipped`
      copies it);
    - `source`: that local file is checked against the checksum and copied (no network);
    - otherwise `url` (default: the registry's) is downloaded, streamed, checked and renamed into place.

    Raises UnknownCorpusError, ChecksumMismatchError, DownloadUnavailableError, ConfigurationError
    (a shipped folder missing, or `source`/`expected_sha256` given for a shipped corpus).
    """
    corpus = get_corpus(corpus) if isinstance(corpus, str) else corpus
    if corpus.bundled is not None:
        if source is not None or url is not None or expected_sha256 is not None:
            raise ConfigurationError(f"{corpus.name} ships with driftrag: --from, --url and --sha256 do not apply")
        return _shipped(corpus)
    if corpus.filename is None or corpus.sha256 is None:
        raise ConfigurationError(f"corpus {corpus.name!r} has no file name or checksum")
    expected = (expected_sha256 or corpus.sha256).lower()
    if not _SHA256.fullmatch(expected):
        raise ConfigurationError(f"not a SHA-256 (64 hex digits): {expected!r}")
    target = dest / corpus.filename
    if source is not None:  # a file the caller names is always checked, even when the target is fine
        return _copy(corpus, source, target, expected)
    if target.is_file() and sha256_file(target) == expected:
        return FetchResult(
            name=corpus.name,
            path=target,
            action="present",
            sha256=expected,
            bytes=target.stat().st_size,
            source=str(target),
        )
    return _download(corpus, url or corpus.url or "", target, expected, timeout_s)


def corpus_file(name: str, *, home: Path, path: Path | None = None) -> Path:
    """The file of a registered corpus for a script, a benchmark or a notebook.

    `path` (a `--corpus` argument) when given, else what `driftrag data fetch NAME` keeps under
    `<home>/corpora` (checksum verified; downloaded only when it is not there). Raises
    ConfigurationError for a `path` that is not a file, DownloadUnavailableError when it is not there
    and cannot be downloaded (the message says to run `driftrag data fetch NAME --from PATH`).
    """
    if path is not None:
        if not path.is_file():
            raise ConfigurationError(f"{path}: no such file")
        return path
    return fetch(name, dest=default_dest(home)).path


def copy_shipped(corpus: Corpus | str, dest: Path) -> FetchResult:
    """Copy a shipped corpus's files into `dest/<name>/`; same-named files are replaced, others left alone."""
    found = _shipped(get_corpus(corpus) if isinstance(corpus, str) else corpus)
    target = _ensure_dir(dest / found.name)
    size = 0
    for path in sorted(found.path.iterdir()):
        if path.is_file():
            data = path.read_bytes()
            size += _write_verified([data], target / path.name, hashlib.sha256(data).hexdigest(), ChecksumMismatchError)
    return FetchResult(name=found.name, path=target, action="copied", bytes=size, source=str(found.path))


# --- the three ways in ---------------------------------------------------------------------------------


def _shipped(corpus: Corpus) -> FetchResult:
    folder = corpus.shipped_path
    if folder is None or not folder.is_dir():
        raise ConfigurationError(
            f"the {corpus.name} corpus ships in the source tree (data/{corpus.bundled}/), which this installation "
            f"does not have ({folder}); install driftrag from a clone of its repository"
        )
    return FetchResult(name=corpus.name, path=folder, action="shipped", source=str(folder))


def _copy(corpus: Corpus, source: Path, target: Path, expected: str) -> FetchResult:
    if not source.is_file():
        raise ConfigurationError(f"--from {source}: no such file")

    def blocks() -> Iterator[bytes]:
        with source.open("rb") as stream:
            yield from iter(lambda: stream.read(_BLOCK), b"")

    size = _write_verified(blocks(), target, expected, lambda actual: _mismatch(corpus, str(source), expected, actual))
    return FetchResult(name=corpus.name, path=target, action="copied", sha256=expected, bytes=size, source=str(source))


def _download(corpus: Corpus, url: str, target: Path, expected: str, timeout_s: float) -> FetchResult:
    def blocks() -> Iterator[bytes]:
        headers = {"User-Agent": f"driftrag/{__version__} (corpus download)"}
        try:
            with httpx.stream(
                "GET", url, timeout=httpx.Timeout(timeout_s), follow_redirects=True, headers=headers
            ) as response:
                if response.status_code != 200:
                    raise DownloadUnavailableError(
                        f"cannot download {corpus.name}: {url} answered HTTP {response.status_code}.\n"
                        + _offline_hint(corpus)
                    )
                received = 0
                for block in response.iter_bytes(_BLOCK):
                    received += len(block)
                    if received > MAX_DOWNLOAD_BYTES:
                        raise DownloadUnavailableError(
                            f"cannot download {corpus.name}: {url} sent more than {MAX_DOWNLOAD_BYTES:,} bytes; stopped"
                        )
                    yield block
        except httpx.TransportError as exc:
            raise DownloadUnavailableError(_no_network(corpus, url, exc)) from exc

    size = _write_verified(blocks(), target, expected, lambda actual: _mismatch(corpus, url, expected, actual))
    return FetchResult(name=corpus.name, path=target, action="downloaded", sha256=expected, bytes=size, source=url)


def _write_verified(blocks: Iterable[bytes], target: Path, expected: str, mismatch) -> int:
    """Write blocks to a temporary file beside `target`, then rename it into place if the SHA-256 matches."""
    descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=_ensure_dir(target.parent))
    temporary = Path(name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(descriptor, "wb") as out:
            for block in blocks:
                digest.update(block)
                out.write(block)
                size += len(block)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != expected:
            raise mismatch(actual)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return size


def _ensure_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- messages ------------------------------------------------------------------------------------------


def _offline_hint(corpus: Corpus) -> str:
    return (
        "Download that URL some other way (a browser, another machine), then check and copy the file with:\n"
        f"  driftrag data fetch {corpus.name} --from PATH"
    )


def _no_network(corpus: Corpus, url: str, exc: httpx.TransportError) -> str:
    host = urlsplit(url).hostname or url
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "no connection"
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return (
        f"cannot download {corpus.name}: {kind} to {host} ({reason}). Is this machine offline?\n"
        f"URL: {url}\n" + _offline_hint(corpus)
    )


def _mismatch(corpus: Corpus, origin: str, expected: str, actual: str) -> ChecksumMismatchError:
    pinned = f" ({corpus.edition})" if corpus.edition and expected == corpus.sha256 else ""
    return ChecksumMismatchError(
        f"{origin} is not the pinned edition of {corpus.name}: SHA-256 {actual}, expected {expected}{pinned}. "
        "Nothing was written. Project Gutenberg re-issues its texts, and driftrag's question sets quote the "
        f"pinned edition word for word. To use this file anyway, run again with --sha256 {actual}"
    )
