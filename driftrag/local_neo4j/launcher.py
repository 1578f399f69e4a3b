"""The Java launcher of the local Neo4j, compiled once instead of at every start.

`java Neo4jLauncher.java` (source-file mode) compiles the launcher in memory at every start, against
the runtime's 213 jars: seconds of CPU each time on a 2-core machine. With the JDK's `javac` it is
compiled once into `runtime/<version>/launcher/<source digest>/` (a private folder, then one rename,
so concurrent starts are safe) and started from the class. Without `javac`, source-file mode.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from driftrag.local_neo4j.resolver import ResolvedRuntime

MAIN_CLASS = "Neo4jLauncher"
_SOURCE = f"{MAIN_CLASS}.java"
_COMPILE_TIMEOUT_S = 300


def launcher_source() -> Path:
    return Path(str(resources.files("driftrag.local_neo4j").joinpath(_SOURCE)))


def launcher_arguments(java: str, runtime: ResolvedRuntime) -> list[str]:
    """`-cp <classpath> <main>` for the java command line: the compiled class, else the source file."""
    source = launcher_source()
    jars = f"{runtime.lib_dir}/*"
    classes = runtime.lib_dir.parent / "launcher" / hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    if (classes / f"{MAIN_CLASS}.class").is_file() or _compile(java, source, jars, classes):
        return ["-cp", f"{jars}{os.pathsep}{classes}", MAIN_CLASS]
    return ["-cp", jars, str(source)]


def _compile(java: str, source: Path, jars: str, classes: Path) -> bool:
    javac = Path(java).resolve().parent / "javac"
    compiler = str(javac) if javac.is_file() else shutil.which("javac")
    if compiler is None:
        return False
    private = classes.parent / f".{classes.name}-{os.getpid()}-{secrets.token_hex(4)}"
    private.mkdir(parents=True)
    try:
        done = subprocess.run(
            [compiler, "-nowarn", "-cp", jars, "-d", str(private), str(source)],
            capture_output=True,
            timeout=_COMPILE_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            return False  # source-file mode then reports the problem in neo4j.log
        try:
            private.rename(classes)
        except OSError:
            pass  # another start compiled the same source first: use that one
        return (classes / f"{MAIN_CLASS}.class").is_file()
    except subprocess.TimeoutExpired:
        return False
    finally:
        shutil.rmtree(private, ignore_errors=True)
