"""Who records the class archive, and when a recorded one becomes usable."""

from __future__ import annotations

from pathlib import Path

from driftrag.local_neo4j.class_archive import ClassArchive, promote_recorded


def _running(*pids: int):
    return lambda pid: pid in pids


def test_only_the_first_start_records_and_the_archive_is_used_once_its_jvm_exited(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "cds", "key")

    first, token = archive.jvm_options(_running())
    second, other = archive.jvm_options(_running())

    assert token is not None and first[0] == f"-XX:ArchiveClassesAtExit={tmp_path}/cds/key.{token}.partial"
    assert (second, other) == ([], None), "a concurrent start skips recording"

    archive.recording_by(token, 4242)
    (tmp_path / "cds" / f"key.{token}.partial").write_bytes(b"classes")  # what the JVM writes on exit
    assert archive.jvm_options(_running(4242)) == ([], None), "not while the recording JVM runs"

    assert archive.jvm_options(_running()) == ([f"-XX:SharedArchiveFile={archive.path}"], None)
    assert sorted(path.name for path in (tmp_path / "cds").iterdir()) == ["key.jsa"]


def test_a_jvm_that_exited_without_writing_lets_a_later_start_record(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "cds", "key")
    _, token = archive.jvm_options(_running())
    archive.recording_by(token, 4242)  # killed before it could write

    promote_recorded(tmp_path / "cds", _running())

    assert not any((tmp_path / "cds").iterdir())
    options, again = archive.jvm_options(_running())
    assert again is not None and options[0].startswith("-XX:ArchiveClassesAtExit=")


def test_a_start_that_failed_before_its_jvm_ran_gives_the_claim_back(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "cds", "key")
    _, token = archive.jvm_options(_running())

    archive.abandon(token)

    assert archive.jvm_options(_running())[1] is not None
