"""How the launcher is put on the java command line."""

from __future__ import annotations

from pathlib import Path

from driftrag.local_neo4j.launcher import compiled_launcher, launcher_arguments, launcher_source
from driftrag.local_neo4j.resolver import ResolvedRuntime


def test_without_javac_the_launcher_runs_as_a_source_file(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    lib = tmp_path / "runtime" / "5.26.30" / "lib"
    lib.mkdir(parents=True)
    runtime = ResolvedRuntime(version="5.26.30", lib_dir=lib, manifest_file=lib.parent / "manifest.json", jar_count=0)

    java = str(tmp_path / "jdk" / "bin" / "java")
    jar = compiled_launcher(java, runtime)
    arguments = launcher_arguments(java, runtime, jar)

    assert jar is None
    assert arguments == ["-cp", f"{lib}/*", str(launcher_source())]
    assert not any(Path(lib.parent / "launcher").glob("*/*.class"))
