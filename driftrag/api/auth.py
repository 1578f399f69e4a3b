"""API keys: scopes, per-key knowledge-base allow-lists, and the file that stores only their hashes.

A key is shown once, when `driftrag api-key create` makes it; the keys file (`DRIFTRAG_API_KEYS_FILE`)
keeps its SHA-256 and what it may do:

    {"keys": [{"name": "notebooks", "key_sha256": "<64 hex>", "scopes": ["read"], "kbs": ["alice"]}]}

`read` lets a key search and query; `manage` (which implies `read`) lets it ingest, delete and switch
chunks or the graph. `kbs` lists the knowledge bases the key may touch, `"*"` meaning all of them.
Keys are high-entropy random strings, so one unsalted SHA-256 is enough to make a leaked file useless.

A running server re-reads the file when it changes (checked at most every `api_keys_reload_s`), so a
revoked key is refused within seconds; a file that turns unreadable or invalid refuses every key until
it is fixed (a broken file must not keep revoked keys alive).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from driftrag.errors import ConfigurationError
from driftrag.models.identifiers import validate_kb_id

log = logging.getLogger("driftrag.api")

Scope = Literal["read", "manage"]
ALL_KBS = "*"
KEY_PREFIX = "drk_"
_HEX64 = r"^[0-9a-f]{64}$"


def hash_key(key: str) -> str:
    """The SHA-256 (hex) of a key, as stored in the keys file."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def generate_key() -> str:
    """A new random key: the `drk_` prefix (recognisable in a leak scan) and 256 bits of randomness."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


class ApiKeyEntry(BaseModel):
    """One line of the keys file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")
    key_sha256: str = Field(pattern=_HEX64)
    scopes: list[Scope] = Field(min_length=1)
    kbs: list[str] = Field(min_length=1, description='Knowledge bases the key may use; "*" for all.')

    @field_validator("kbs")
    @classmethod
    def _valid_kbs(cls, kbs: list[str]) -> list[str]:
        for kb in kbs:
            if kb != ALL_KBS:
                validate_kb_id(kb)
        return list(dict.fromkeys(kbs))

    @field_validator("scopes")
    @classmethod
    def _distinct_scopes(cls, scopes: list[Scope]) -> list[Scope]:
        return list(dict.fromkeys(scopes))


class ApiKeysFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[ApiKeyEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> ApiKeysFile:
        names = [entry.name for entry in self.keys]
        hashes = [entry.key_sha256 for entry in self.keys]
        if len(set(names)) != len(names):
            raise ValueError("key names must be unique")
        if len(set(hashes)) != len(hashes):
            raise ValueError("the same key appears twice")
        return self


class Principal(BaseModel):
    """Who is calling, once authenticated, and what the key allows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    scopes: frozenset[Scope]
    kbs: frozenset[str]

    def has_scope(self, scope: Scope) -> bool:
        return scope in self.scopes or (scope == "read" and "manage" in self.scopes)

    def may_use(self, kb: str) -> bool:
        return ALL_KBS in self.kbs or kb in self.kbs


class ApiKeys:
    """The keys a server accepts. `ApiKeys.insecure()` accepts any request (local experiments only)."""

    def __init__(self, entries: Iterable[ApiKeyEntry], *, insecure: bool = False) -> None:
        self._entries = list(ApiKeysFile(keys=list(entries)).keys)
        self.insecure = insecure
        self._watch: KeysFileWatch | None = None
        if not self._entries and not insecure:
            raise ConfigurationError(
                "no API keys configured: create one with `driftrag api-key create` and set "
                "DRIFTRAG_API_KEYS_FILE, or pass --insecure-no-auth for a local experiment"
            )

    @classmethod
    def insecure_no_auth(cls) -> ApiKeys:
        return cls([], insecure=True)

    @classmethod
    def from_file(cls, path: Path, *, reload_s: float | None = None) -> ApiKeys:
        """The keys of `path`; with `reload_s`, re-read whenever the file changes (checked that often at most)."""
        watch = KeysFileWatch(path, reload_s) if reload_s is not None else None
        keys = cls(read_keys_file(path).keys)
        keys._watch = watch
        return keys

    def _current(self) -> list[ApiKeyEntry]:
        if self._watch is not None:
            reloaded = self._watch.poll()
            if reloaded is not None:
                self._entries = reloaded
        return self._entries

    @property
    def names(self) -> list[str]:
        return [entry.name for entry in self._current()]

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal of a presented key, or None when it is missing or unknown."""
        if self.insecure:
            return Principal(name="insecure-no-auth", scopes=frozenset({"manage"}), kbs=frozenset({ALL_KBS}))
        entries = self._current()
        if not presented:
            return None
        digest = hash_key(presented)
        found: ApiKeyEntry | None = None
        # Every entry is compared (constant time each), so the time taken does not depend on which matched.
        for entry in entries:
            if hmac.compare_digest(digest, entry.key_sha256):
                found = entry
        if found is None:
            return None
        return Principal(name=found.name, scopes=frozenset(found.scopes), kbs=frozenset(found.kbs))


class KeysFileWatch:
    """Notices a changed keys file: its inode, size and times are compared at most every `interval_s`.

    Plain data (no lock, no thread), so the keys pickle into worker processes; each process watches on its
    own. The check runs on the request path: one `stat` per interval, one small read per change.
    """

    def __init__(self, path: Path, interval_s: float) -> None:
        self.path = path
        self.interval_s = interval_s
        self._signature = _signature(path)  # taken before the first read, so a change during it is seen
        self._next_check = time.monotonic() + interval_s
        self._broken = False

    def poll(self) -> list[ApiKeyEntry] | None:
        """The new entries when the file changed (none at all when it is broken), else None."""
        now = time.monotonic()
        if now < self._next_check:
            return None
        self._next_check = now + self.interval_s
        signature = _signature(self.path)
        # A broken file is read again at every check: an edit in the same clock tick must not go unseen.
        if signature == self._signature and not self._broken:
            return None
        self._signature = signature
        try:
            content = read_keys_file(self.path)
        except ConfigurationError as exc:
            if not self._broken:
                log.error("%s; every API key is refused until the file is fixed", exc)
            self._broken = True
            return []
        if self._broken:
            log.warning("the API keys file %s is valid again", self.path)
        self._broken = False
        log.info("API keys reloaded from %s: %d key(s)", self.path, len(content.keys))
        return list(content.keys)


def _signature(path: Path) -> tuple[int, ...] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    # os.replace (how the file is written) gives a new inode; an edit in place changes size or times.
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


# --- the keys file ----------------------------------------------------------------------------------


def read_keys_file(path: Path) -> ApiKeysFile:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"API keys file {str(path)!r} does not exist") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot read the API keys file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        return ApiKeysFile.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ConfigurationError(f"API keys file {str(path)!r} is not valid: {exc}") from None


def write_keys_file(path: Path, content: ApiKeysFile) -> None:
    """Write the file atomically, readable by its owner only (hashes, but still nobody else's business)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(content.model_dump_json(indent=2) + "\n")
    os.replace(temporary, path)


def parse_scopes(text: str) -> list[Scope]:
    """`read`, `manage` or `read,manage` (manage implies read)."""
    scopes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [scope for scope in scopes if scope not in ("read", "manage")]
    if not scopes or unknown:
        raise ValueError(f"scopes must be read and/or manage, got {text!r}")
    return list(dict.fromkeys(scopes))  # type: ignore[arg-type]


def parse_kbs(text: str) -> list[str]:
    """Comma-separated kb ids, or `*` for all."""
    kbs = [part.strip() for part in text.split(",") if part.strip()]
    if not kbs:
        raise ValueError("give at least one knowledge base, or * for all")
    for kb in kbs:
        if kb != ALL_KBS:
            validate_kb_id(kb)
    return list(dict.fromkeys(kbs))


def create_key(path: Path, *, name: str, scopes: Sequence[Scope], kbs: Sequence[str]) -> tuple[str, ApiKeyEntry]:
    """Add a new key to the file (created if missing); returns the key, which is stored nowhere."""
    content = read_keys_file(path) if path.exists() else ApiKeysFile()
    if any(entry.name == name for entry in content.keys):
        raise ConfigurationError(f"a key named {name!r} already exists in {str(path)!r}; revoke it first")
    key = generate_key()
    try:
        entry = ApiKeyEntry(name=name, key_sha256=hash_key(key), scopes=list(scopes), kbs=list(kbs))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid key: {problems}") from None
    write_keys_file(path, ApiKeysFile(keys=[*content.keys, entry]))
    return key, entry


def revoke_key(path: Path, name: str) -> None:
    content = read_keys_file(path)
    kept = [entry for entry in content.keys if entry.name != name]
    if len(kept) == len(content.keys):
        raise ConfigurationError(f"no key named {name!r} in {str(path)!r}")
    write_keys_file(path, ApiKeysFile(keys=kept))
