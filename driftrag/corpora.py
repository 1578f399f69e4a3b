"""Public-domain corpora by name: a pinned download, a local copy checked against it, or a shipped copy.

    driftrag data list
    driftrag data fetch alice                    # <DRIFTRAG_HOME>/corpora/alice_in_wonderland.txt
    driftrag data fetch alice --from ~/pg11.txt  # no network: check and copy a file you have
    corpus_file("alice", home=settings.home)     # the same copy, from Python (benchmarks, notebooks)

**What is kept is the story.** A Project Gutenberg file wraps the book in the publisher's header and
licence, marked by the standard `*** START OF THE PROJECT GUTENBERG EBOOK …` and `*** END OF …` lines
(older files: `*** START OF THIS …`, and an `End of Project Gutenberg's …` line before the end marker).
`fetch` keeps only what lies between them, byte for byte (line endings untouched), so the CLI, the
notebooks and the benchmarks all ingest the same text. An edition without a start line (Alice's) names
the first line of its story in the registry (`story_start`). A file with neither marker is kept whole.

**Two checksums per corpus.** `sha256` pins the publisher's file, as downloaded: it is checked before
anything is written, so a target is either absent or made from exactly the pinned edition. `text_sha256`
pins the stripped text, the file that is kept: a target that already has it is neither downloaded nor
copied again, and a stripped result that does not match it is refused (the stripping rule changed).
`--from PATH` accepts either file: the publisher's (stripped on the way in) or the stripped text itself.
An older copy left in place unstripped (the pinned publisher's file) is stripped where it is, without
any download. `expected_sha256` (`--sha256`) accepts another edition on purpose; its stripped text has
no pinned checksum, so it is fetched again on each call.

**Shipped copies.** A corpus may also ship its stripped text in the source tree (`shipped_text`, under
`data/`) so that tests and evaluations work without network: `fetch` copies that file (checked against
`text_sha256`) instead of downloading, unless a `url` is given. The sample corpus is a shipped folder.

The checksums pin an *edition*, not just a book: Project Gutenberg re-issues its texts (new headers,
typographic quotes), and the question sets in `data/questions/` quote their evidence verbatim from the
editions pinned here.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
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
# The publisher's marker lines, on bytes so that line endings survive as they are.
_START_LINE = re.compile(
    rb"^\*{3} ?START OF (?:THE|THIS) PROJECT GUTENBERG E(?:BOOK|TEXT)\b[^\n]*(?:\n|$)", re.I | re.M
)
_END_LINE = re.compile(rb"^(?:\*{3} ?)?END OF (?:THE |THIS )?PROJECT GUTENBERG\b", re.I | re.M)


class Corpus(BaseModel):
    """One registered corpus: a pinned download (`url` + `sha256`) or a folder shipped in `data/`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    license: str
    edition: str = Field(default="", description="Which edition the checksum pins.")
    url: str | None = None
    sha256: str | None = Field(default=None, description="SHA-256 of the publisher's file (hex).")
    size: int | None = Field(default=None, description="Bytes of the publisher's file.")
    text_sha256: str | None = Field(default=None, description="SHA-256 of the stripped text that is kept.")
    text_size: int | None = Field(default=None, description="Bytes of the stripped text.")
    story_start: str | None = Field(
        default=None, description="The story's first line, for an edition without a `*** START OF` line."
    )
    filename: str | None = Field(default=None, description="File name under the destination folder.")
    shipped_text: str | None = Field(default=None, description="The stripped text shipped under data/ (a file).")
    bundled: str | None = Field(default=None, description="Folder under the source tree's data/ (no download).")

    @property
    def shipped_path(self) -> Path | None:
        return DATA_DIR / self.bundled if self.bundled else None

    @property
    def shipped_text_path(self) -> Path | None:
        return DATA_DIR / self.shipped_text if self.shipped_text else None

    def describe_source(self) -> str:
        if self.bundled:
            return f"shipped: data/{self.bundled}/"
        shipped = f" (stripped copy shipped: data/{self.shipped_text})" if self.shipped_text else ""
        return (self.url or "") + shipped


class Stripped(BaseModel):
    """The story cut out of a publisher's file, and which markers were found."""

    model_config = ConfigDict(extra="forbid")

    text: bytes
    start_found: bool
    end_found: bool

    @property
    def removed(self) -> bool:
        return self.start_found or self.end_found


def strip_boilerplate(data: bytes, story_start: str | None = None) -> Stripped:
    """Only what lies between the publisher's start and end lines, byte for byte.

    The kept text begins after the `*** START OF …` line (or at the `story_start` line when the file has
    no start line) and ends before the first end line at or after it (`*** END OF …`, or the older
    `End of Project Gutenberg's …` that precedes it). A missing marker leaves that side as it is: a file
    with neither marker (already stripped, or not from Project Gutenberg) is returned whole.
    """
    begin, start_found = 0, False
    found = _START_LINE.search(data)
    if found:
        begin, start_found = found.end(), True
    elif story_start:
        line = re.compile(rb"^" + re.escape(story_start.encode("utf-8")) + rb"[ \t]*\r?$", re.M)
        at = line.search(data)
        if at:
            begin, start_found = at.start(), True
    end = _END_LINE.search(data, begin)
    return Stripped(text=data[begin : end.start() if end else len(data)], start_found=start_found, end_found=bool(end))


class FetchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    path: Path = Field(description="The file (or, for a shipped corpus, the folder) to ingest.")
    action: Literal["downloaded", "copied", "present", "stripped", "shipped"]
    sha256: str | None = Field(default=None, description="SHA-256 of the kept file at `path`.")
    source_sha256: str | None = Field(default=None, description="SHA-256 of the file it was made from.")
    bytes: int = Field(default=0, description="Bytes of the kept file.")
    removed_bytes: int = Field(default=0, description="Bytes of publisher's header and licence stripped.")
    source: str = Field(description="The URL or local path it came from.")

    def describe(self) -> str:
        what = {
            "downloaded": f"downloaded from {self.source}",
            "copied": f"copied from {self.source}",
            "present": "already present with the pinned checksum; nothing downloaded",
            "stripped": "the publisher's file already there, stripped in place; nothing downloaded",
            "shipped": "shipped with driftrag",
        }[self.action]
        if self.action in ("present", "shipped"):
            return f"{self.name}: {what}: {self.path}"
        checked = " (SHA-256 verified)" if self.source_sha256 else ""
        stripped = f", {self.removed_bytes:,} bytes of header and licence removed" if self.removed_bytes else ""
        return f"{self.name}: {what}{checked}: {self.bytes:,} bytes of text{stripped}: {self.path}"


CORPORA: tuple[Corpus, ...] = (
    Corpus(
        name="alice",
        title="Alice's Adventures in Wonderland, Lewis Carroll (Project Gutenberg #11)",
        license="Public domain in the USA (Project Gutenberg License for the file)",
        edition="Posting Date June 25, 2008, last updated December 20, 2011; ASCII, CRLF line endings",
        url="https://www.gutenberg.org/cache/epub/11/pg11.txt",
        sha256="949bd0aa3dc86972bdc20cbbf8929c3e8738b8a0d39a14270ffd0803323a60dc",
        size=167_088,
        text_sha256="22b364f246d2c1093d7bfe3cc1d4cab838080a6416ff3cddb1e4b4a6744b3690",
        text_size=147_448,
        story_start="ALICE'S ADVENTURES IN WONDERLAND",
        filename="alice_in_wonderland.txt",
    ),
    Corpus(
        name="verne",
        title="Vingt mille lieues sous les mers, Jules Verne (Project Gutenberg #5097, in French)",
        license="Public domain in the USA (Project Gutenberg License for the file; the shipped text is the story only)",
        edition="Release April 24, 2002, most recently updated June 7, 2022; UTF-8 with BOM, CRLF line endings",
        url="https://www.gutenberg.org/cache/epub/5097/pg5097.txt",
        sha256="db110d217097e4626360fafd26c44def792b54702a1d6e1444570948ce50544e",
        size=942_377,
        text_sha256="da939af15652281c9d6f433cfc5f9d3fc883e9ff3ec169e55ebe5cc915e0f177",
        text_size=922_765,
        filename="vingt_mille_lieues_sous_les_mers.txt",
        shipped_text="corpora/vingt_mille_lieues_sous_les_mers.txt",
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
    """Make the corpus's story available under `dest` and say where it is.

    - a shipped folder (the sample): used where it is (`dest` is ignored; `copy_shipped` copies it);
    - `source`: that local file (the publisher's, or its stripped text) is checked and its story kept;
    - a target already holding the pinned stripped text: nothing to do; one holding the pinned
      publisher's file (an older copy): stripped in place;
    - a shipped stripped text (no `url` given): checked and copied, no network;
    - otherwise `url` (default: the registry's) is downloaded, checked, stripped and renamed into place.

    Raises UnknownCorpusError, ChecksumMismatchError, DownloadUnavailableError, ConfigurationError
    (a shipped folder missing, or `source`/`expected_sha256` given for a shipped folder).
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
    # The stripped text's checksum is known only for the pinned edition.
    text_expected = corpus.text_sha256 if expected == corpus.sha256 else None
    target = dest / corpus.filename
    if source is not None:  # a file the caller names is always checked, even when the target is fine
        if not source.is_file():
            raise ConfigurationError(f"--from {source}: no such file")
        return _keep(corpus, _read_local(source), target, expected, text_expected, "copied", str(source))
    if target.is_file():
        actual = sha256_file(target)
        if text_expected is not None and actual == text_expected:
            return FetchResult(
                name=corpus.name,
                path=target,
                action="present",
                sha256=actual,
                bytes=target.stat().st_size,
                source=str(target),
            )
        if actual == expected:
            return _keep(corpus, target.read_bytes(), target, expected, text_expected, "stripped", str(target))
    shipped = corpus.shipped_text_path
    if url is None and text_expected is not None and shipped is not None and shipped.is_file():
        return _keep(corpus, shipped.read_bytes(), target, expected, text_expected, "copied", str(shipped))
    address = url or corpus.url or ""
    return _keep(corpus, _download(corpus, address, timeout_s), target, expected, text_expected, "downloaded", address)


def corpus_file(name: str, *, home: Path, path: Path | None = None) -> Path:
    """The story file of a registered corpus for a script, a benchmark or a notebook.

    `path` (a `--corpus` argument) when given, else what `driftrag data fetch NAME` keeps under
    `<home>/corpora` (checksum verified; the publisher's boilerplate stripped; downloaded only when it
    is neither there nor shipped). Raises ConfigurationError for a `path` that is not a file,
    DownloadUnavailableError when it cannot be had (the message says to run
    `driftrag data fetch NAME --from PATH`).
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
            _write_atomic(data, target / path.name)
            size += len(data)
    return FetchResult(name=found.name, path=target, action="copied", bytes=size, source=str(found.path))


# --- the ways in ---------------------------------------------------------------------------------------


def _shipped(corpus: Corpus) -> FetchResult:
    folder = corpus.shipped_path
    if folder is None or not folder.is_dir():
        raise ConfigurationError(
            f"the {corpus.name} corpus ships in the source tree (data/{corpus.bundled}/), which this installation "
            f"does not have ({folder}); install driftrag from a clone of its repository"
        )
    return FetchResult(name=corpus.name, path=folder, action="shipped", source=str(folder))


def _read_local(source: Path) -> bytes:
    if source.stat().st_size > MAX_DOWNLOAD_BYTES:
        raise ChecksumMismatchError(f"{source} holds more than {MAX_DOWNLOAD_BYTES:,} bytes: not a registered text")
    return source.read_bytes()


def _keep(
    corpus: Corpus,
    data: bytes,
    target: Path,
    expected: str,
    text_expected: str | None,
    action: Literal["downloaded", "copied", "stripped"],
    origin: str,
) -> FetchResult:
    """Check `data` (the publisher's file, or the pinned stripped text), strip it, write it atomically."""
    actual = hashlib.sha256(data).hexdigest()
    if actual == expected:
        kept = strip_boilerplate(data, corpus.story_start).text
        kept_sha = hashlib.sha256(kept).hexdigest()
        if text_expected is not None and kept_sha != text_expected:
            raise ChecksumMismatchError(
                f"{origin}: the stripped text of {corpus.name} has SHA-256 {kept_sha}, expected {text_expected}; "
                "nothing was written (the stripping rule and the pinned text disagree)"
            )
    elif text_expected is not None and actual == text_expected:
        kept, kept_sha = data, actual  # already the stripped text of the pinned edition
    else:
        raise _mismatch(corpus, origin, expected, actual)
    _write_atomic(kept, target)
    return FetchResult(
        name=corpus.name,
        path=target,
        action=action,
        sha256=kept_sha,
        source_sha256=actual,
        bytes=len(kept),
        removed_bytes=len(data) - len(kept),
        source=origin,
    )


def _download(corpus: Corpus, url: str, timeout_s: float) -> bytes:
    """The whole response body (at most MAX_DOWNLOAD_BYTES); checked by the caller before anything is written."""
    headers = {"User-Agent": f"driftrag/{__version__} (corpus download)"}
    blocks: list[bytes] = []
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
                blocks.append(block)
    except httpx.TransportError as exc:
        raise DownloadUnavailableError(_no_network(corpus, url, exc)) from exc
    return b"".join(blocks)


def _write_atomic(data: bytes, target: Path) -> None:
    """Write to a temporary file beside `target`, then rename it into place: never a half-written target."""
    descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=_ensure_dir(target.parent))
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


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
