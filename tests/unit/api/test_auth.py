"""API keys: hashing, scopes, kb allow-lists, the keys file, and the server's refusals to start."""

from __future__ import annotations

import hashlib
import json
import pickle
import stat
from pathlib import Path

import pytest

from driftrag.api.auth import (
    ApiKeyEntry,
    ApiKeys,
    create_key,
    generate_key,
    hash_key,
    parse_kbs,
    parse_scopes,
    read_keys_file,
    revoke_key,
)
from driftrag.api.server import check_bind, load_keys
from driftrag.errors import ConfigurationError, InvalidIdentifierError
from driftrag.settings import Settings


def _keys(**entries: tuple[list[str], list[str]]) -> tuple[ApiKeys, dict[str, str]]:
    secrets = {name: generate_key() for name in entries}
    keys = ApiKeys(
        ApiKeyEntry(name=name, key_sha256=hash_key(secrets[name]), scopes=scopes, kbs=kbs)
        for name, (scopes, kbs) in entries.items()
    )
    return keys, secrets


def test_keys_are_random_and_stored_as_sha256() -> None:
    key = generate_key()
    assert key.startswith("drk_") and len(key) > 40 and key != generate_key()
    assert hash_key(key) == hashlib.sha256(key.encode()).hexdigest()


def test_only_a_known_key_authenticates() -> None:
    keys, secrets = _keys(alice=(["read"], ["alice"]), admin=(["manage"], ["*"]))

    assert keys.authenticate(secrets["alice"]).name == "alice"
    assert keys.authenticate(secrets["admin"]).name == "admin"
    assert keys.authenticate(secrets["alice"] + "x") is None
    assert keys.authenticate(hash_key(secrets["alice"])) is None, "the stored hash is not a key"
    assert keys.authenticate("") is None and keys.authenticate(None) is None


def test_manage_implies_read_but_not_the_reverse() -> None:
    keys, secrets = _keys(reader=(["read"], ["*"]), manager=(["manage"], ["*"]))

    reader, manager = keys.authenticate(secrets["reader"]), keys.authenticate(secrets["manager"])
    assert reader.has_scope("read") and not reader.has_scope("manage")
    assert manager.has_scope("read") and manager.has_scope("manage")


def test_the_kb_allow_list() -> None:
    keys, secrets = _keys(some=(["read"], ["alice", "bob"]), every=(["read"], ["*"]))

    some, every = keys.authenticate(secrets["some"]), keys.authenticate(secrets["every"])
    assert some.may_use("alice") and some.may_use("bob")
    assert not some.may_use("carol") and not some.may_use("Alice") and not some.may_use("*x")
    assert every.may_use("carol")


def test_insecure_mode_lets_everyone_manage_everything() -> None:
    principal = ApiKeys.insecure_no_auth().authenticate(None)
    assert principal.has_scope("manage") and principal.may_use("any-kb")


def test_no_keys_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no API keys"):
        ApiKeys([])


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "x", "key_sha256": "abc", "scopes": ["read"], "kbs": ["*"]},
        {"name": "x", "key_sha256": "a" * 64, "scopes": ["admin"], "kbs": ["*"]},
        {"name": "x", "key_sha256": "a" * 64, "scopes": [], "kbs": ["*"]},
        {"name": "x", "key_sha256": "a" * 64, "scopes": ["read"], "kbs": []},
        {"name": "x", "key_sha256": "a" * 64, "scopes": ["read"], "kbs": ["bad kb"]},
        {"name": "x", "key_sha256": "a" * 64, "scopes": ["read"], "kbs": ["*"], "key": "plain"},
    ],
    ids=["short-hash", "unknown-scope", "no-scope", "no-kb", "bad-kb", "plain-key-field"],
)
def test_a_bad_entry_is_refused(entry: dict) -> None:
    with pytest.raises(ValueError):
        ApiKeyEntry.model_validate(entry)


def test_create_list_and_revoke_in_the_keys_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "keys.json"
    key, entry = create_key(path, name="notebook", scopes=["read"], kbs=["alice"])
    second, _ = create_key(path, name="ops", scopes=["read", "manage"], kbs=["*"])

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert key not in path.read_text() and second not in path.read_text()
    assert [e.name for e in read_keys_file(path).keys] == ["notebook", "ops"]
    keys = ApiKeys.from_file(path)
    assert keys.authenticate(key) is not None and keys.authenticate(key).kbs == frozenset({"alice"})
    with pytest.raises(ConfigurationError, match="already exists"):
        create_key(path, name="notebook", scopes=["read"], kbs=["*"])

    revoke_key(path, "notebook")
    assert ApiKeys.from_file(path).authenticate(key) is None
    assert ApiKeys.from_file(path).authenticate(second).name == "ops"
    with pytest.raises(ConfigurationError, match="no key named"):
        revoke_key(path, "notebook")
    assert entry.name == "notebook"


def test_a_broken_keys_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        ApiKeys.from_file(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigurationError, match="not valid"):
        ApiKeys.from_file(broken)
    duplicated = tmp_path / "duplicated.json"
    entry = {"name": "a", "key_sha256": "a" * 64, "scopes": ["read"], "kbs": ["*"]}
    duplicated.write_text(json.dumps({"keys": [entry, {**entry, "name": "b"}]}))
    with pytest.raises(ConfigurationError, match="twice"):
        ApiKeys.from_file(duplicated)


def test_scope_and_kb_options() -> None:
    assert parse_scopes("read") == ["read"] and parse_scopes("read, manage") == ["read", "manage"]
    assert parse_kbs("alice,bob,alice") == ["alice", "bob"] and parse_kbs("*") == ["*"]
    for bad in ("", "write", "read,admin"):
        with pytest.raises(ValueError):
            parse_scopes(bad)
    with pytest.raises(InvalidIdentifierError):
        parse_kbs("alice,b b")


def test_the_server_needs_keys_unless_told_otherwise(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no API keys configured"):
        load_keys(Settings(_env_file=None), insecure_no_auth=False)
    assert load_keys(Settings(_env_file=None), insecure_no_auth=True).insecure
    path = tmp_path / "keys.json"
    create_key(path, name="n", scopes=["read"], kbs=["*"])
    assert not load_keys(Settings(_env_file=None, api_keys_file=path), insecure_no_auth=False).insecure


def test_without_auth_the_server_binds_to_loopback_only() -> None:
    check_bind("127.0.0.1", insecure_no_auth=True)
    check_bind("::1", insecure_no_auth=True)
    check_bind("0.0.0.0", insecure_no_auth=False)
    for host in ("0.0.0.0", "192.168.1.5", "localhost.example.com", "::"):
        with pytest.raises(ConfigurationError, match=r"127\.0\.0\.1"):
            check_bind(host, insecure_no_auth=True)


# --- a running server's view of the keys file ------------------------------------------------------------


def test_a_watched_keys_file_revokes_and_adds_keys_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    first, _ = create_key(path, name="first", scopes=["read"], kbs=["*"])
    second, _ = create_key(path, name="second", scopes=["manage"], kbs=["*"])
    keys = ApiKeys.from_file(path, reload_s=0)  # checked at every call
    assert keys.authenticate(first).name == "first"

    revoke_key(path, "first")
    assert keys.authenticate(first) is None
    assert keys.authenticate(second).name == "second"
    third, _ = create_key(path, name="third", scopes=["read"], kbs=["alice"])
    assert keys.authenticate(third).kbs == frozenset({"alice"})
    assert keys.names == ["second", "third"]


def test_the_watch_survives_pickling_into_a_worker_process(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    key, _ = create_key(path, name="k", scopes=["read"], kbs=["*"])
    create_key(path, name="other", scopes=["read"], kbs=["*"])
    copy = pickle.loads(pickle.dumps(ApiKeys.from_file(path, reload_s=0)))
    assert copy.authenticate(key) is not None
    revoke_key(path, "k")
    assert copy.authenticate(key) is None


def test_the_file_is_checked_at_most_every_interval(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    key, _ = create_key(path, name="k", scopes=["read"], kbs=["*"])
    create_key(path, name="other", scopes=["read"], kbs=["*"])
    keys = ApiKeys.from_file(path, reload_s=3600)
    revoke_key(path, "k")
    assert keys.authenticate(key) is not None, "no stat before the interval has passed"
    unwatched = ApiKeys.from_file(path)
    create_key(path, name="late", scopes=["read"], kbs=["*"])
    assert [entry.name for entry in read_keys_file(path).keys] == ["other", "late"]
    assert unwatched.names == ["other"], "without reload_s the keys are read once"


@pytest.mark.parametrize("damage", ["invalid", "deleted", "empty"])
def test_a_broken_watched_file_refuses_every_key_until_it_is_fixed(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "keys.json"
    key, _ = create_key(path, name="k", scopes=["read"], kbs=["*"])
    keys = ApiKeys.from_file(path, reload_s=0)
    good = path.read_text()
    if damage == "invalid":
        path.write_text('{"keys": [{"name": "k"')  # an edit caught half-way
    elif damage == "deleted":
        path.unlink()
    else:
        path.write_text('{"keys": []}')  # the last key revoked
    assert keys.authenticate(key) is None
    assert keys.authenticate(key) is None, "still refused at the next check"
    path.write_text(good)
    assert keys.authenticate(key).name == "k"
