import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from driftrag.providers.cache import CachedResponse, ResponseCache, cache_key

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
PARAMS = {"temperature": 0.0, "max_tokens": None, "response_format": None}


def _key(**overrides: object) -> str:
    request: dict = {"provider": "openai", "model": "gpt-4o-mini", "messages": MESSAGES, "params": PARAMS}
    request.update(overrides)
    return cache_key(**request)


def test_round_trip_and_sharded_layout(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    key = _key()
    entry = CachedResponse(text="hello", prompt_tokens=3, completion_tokens=1)

    assert cache.get(key) is None
    cache.put(key, entry)

    assert cache.get(key) == entry
    assert cache.path_for(key) == tmp_path / "c" / key[:2] / f"{key}.json"
    assert [p.name for p in cache.path_for(key).parent.iterdir()] == [f"{key}.json"]  # no temp file left


def test_constructor_touches_no_disk(tmp_path: Path) -> None:
    ResponseCache(tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_key_is_canonical_and_changes_with_every_part() -> None:
    base = _key()
    assert base == _key(params=dict(reversed(list(PARAMS.items()))))
    variants = [
        _key(provider="other"),
        _key(model="gpt-4o"),
        _key(messages=[*MESSAGES[:1], {"role": "user", "content": "hi!"}]),
        _key(messages=[{"role": "user", "content": "be brief"}, MESSAGES[1]]),
        _key(params={**PARAMS, "temperature": 0.7}),
        _key(params={**PARAMS, "max_tokens": 100}),
        _key(params={**PARAMS, "response_format": "json_object"}),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_corrupt_or_foreign_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = _key()
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"text": "trunc')
    assert cache.get(key) is None
    path.write_text('{"unexpected": 1}')
    assert cache.get(key) is None

    cache.put(key, CachedResponse(text="ok", prompt_tokens=1, completion_tokens=1))
    assert cache.get(key) is not None


def test_put_does_not_wait_for_the_disk_and_an_empty_entry_is_a_miss(tmp_path: Path, monkeypatch) -> None:
    # An entry needs no fsync: what an OS crash could leave behind (an empty or cut file) is only a miss.
    def no_fsync(fd: int) -> None:
        raise AssertionError("put called fsync")

    monkeypatch.setattr(os, "fsync", no_fsync)
    cache = ResponseCache(tmp_path)
    key = _key()
    entry = CachedResponse(text="durable enough", prompt_tokens=4, completion_tokens=3)
    cache.put(key, entry)
    assert cache.get(key) == entry

    cache.path_for(key).write_bytes(b"")
    assert cache.get(key) is None


async def test_async_access(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    entry = CachedResponse(text="async", prompt_tokens=2, completion_tokens=2)
    key = "ab" + "0" * 62
    cache.put_soon(key, entry)
    assert await cache.aget(key) == entry  # this cache reads it before it is on disk
    await cache.drain()
    assert ResponseCache(tmp_path).get(key) == entry  # another one once it is written
    assert await cache.aget("cd" + "0" * 62) is None
    corrupt = "ef" + "0" * 62
    cache.path_for(corrupt).parent.mkdir(parents=True)
    cache.path_for(corrupt).write_text('{"text": "cut', encoding="utf-8")
    assert await cache.aget(corrupt) is None  # a bad entry is only a miss, asynchronously too


async def test_a_write_that_fails_is_logged_and_only_a_miss(tmp_path: Path, caplog) -> None:
    (tmp_path / "ab").write_text("a file where the entries' folder should be", encoding="utf-8")
    cache = ResponseCache(tmp_path)
    key = "ab" + "1" * 62
    cache.put_soon(key, CachedResponse(text="lost", prompt_tokens=1, completion_tokens=1))
    await cache.drain()
    assert "could not be written to the cache" in caplog.text
    assert await cache.aget(key) is None


_WRITER = """
import sys
from pathlib import Path
from driftrag.providers.cache import CachedResponse, ResponseCache
cache = ResponseCache(Path(sys.argv[1]))
big = "x" * 4_000_000
i = 0
while True:
    entry = CachedResponse(text=big + str(i), prompt_tokens=i, completion_tokens=i)
    cache.put(f"{i % 7:02d}" + "f" * 62, entry)
    i += 1
"""


def test_kill_during_writes_never_leaves_a_corrupt_entry(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)], env=env)
    try:
        deadline = time.monotonic() + 20
        while len(list(tmp_path.glob("*/*.json"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # let it overwrite entries for a while, then kill it mid-write
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()

    entries = list(tmp_path.glob("*/*.json"))
    assert len(entries) >= 3
    cache = ResponseCache(tmp_path)
    for entry in entries:
        assert cache.get(entry.stem) is not None, f"corrupt entry {entry}"
