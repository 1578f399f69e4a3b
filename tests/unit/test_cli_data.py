"""`driftrag data list|fetch` run as a user runs them: a subprocess, exit codes, stdout and stderr.

No test reaches the internet: the offline case points `--url` at a closed port on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from driftrag import corpora
from tests.support.ports import free_port


def driftrag(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DRIFTRAG_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "driftrag", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_list_shows_the_registry(tmp_path: Path) -> None:
    done = driftrag(tmp_path, "data", "list")
    assert done.returncode == 0, done.stderr
    assert "alice" in done.stdout and "https://www.gutenberg.org/cache/epub/11/pg11.txt" in done.stdout
    assert corpora.get_corpus("alice").sha256 in done.stdout
    assert corpora.get_corpus("alice").text_sha256 in done.stdout  # the stripped story's checksum too
    assert "shipped: data/sample/" in done.stdout
    assert "data/corpora/vingt_mille_lieues_sous_les_mers.txt" in done.stdout

    listed = json.loads(driftrag(tmp_path, "data", "list", "--json").stdout)
    assert [item["name"] for item in listed] == ["alice", "verne", "sample"]


def test_offline_fetch_exits_3_and_says_how_to_use_from(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/pg11.txt"
    done = driftrag(tmp_path, "data", "fetch", "alice", "--url", url)
    assert done.returncode == 3
    assert done.stdout == ""
    assert "no connection" in done.stderr and url in done.stderr
    assert "driftrag data fetch alice --from PATH" in done.stderr
    assert "Traceback" not in done.stderr


def test_from_a_wrong_file_exits_1(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("not alice", encoding="utf-8")
    done = driftrag(tmp_path, "data", "fetch", "alice", "--from", str(wrong))
    assert done.returncode == 1
    assert "is not the pinned edition of alice" in done.stderr
    assert not (tmp_path / "corpora" / "alice_in_wonderland.txt").exists()


def test_unknown_corpus_and_bad_checksum_are_usage_errors(tmp_path: Path) -> None:
    assert driftrag(tmp_path, "data", "fetch", "bob").returncode == 2
    assert driftrag(tmp_path, "data", "fetch", "alice", "--sha256", "abc").returncode == 2


def test_fetch_alice_from_a_local_copy_then_again_without_network(tmp_path: Path, alice_book: Path) -> None:
    done = driftrag(tmp_path, "data", "fetch", "alice", "--from", str(alice_book))
    assert done.returncode == 0, done.stderr
    target = tmp_path / "corpora" / "alice_in_wonderland.txt"
    assert done.stdout.strip() == str(target)  # stdout is the path alone, for $(driftrag data fetch …)
    assert "SHA-256 verified" in done.stderr

    # Present with the pinned checksum: no download is tried (the URL would not answer).
    again = driftrag(tmp_path, "data", "fetch", "alice", "--url", "http://127.0.0.1:9/x", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["action"] == "present"


def test_fetch_sample_prints_the_shipped_folder_or_copies_it(tmp_path: Path) -> None:
    shipped = driftrag(tmp_path, "data", "fetch", "sample")
    assert shipped.returncode == 0, shipped.stderr
    assert Path(shipped.stdout.strip()) == corpora.get_corpus("sample").shipped_path

    copied = driftrag(tmp_path, "data", "fetch", "sample", "--dest", str(tmp_path / "mine"))
    assert copied.returncode == 0, copied.stderr
    assert len(list((tmp_path / "mine" / "sample").glob("*.md"))) == 4
