"""The Java launcher of the local Neo4j, compiled once instead of at every start.

`java Neo4jLauncher.java` (source-file mode) compiles the launcher in memory at every start, against
the runtime's 213 jars: seconds of CPU each time on a 2-core machine. With the JDK's `javac` it is
compiled once into `runtime/<version>/launcher/<source digest>/Neo4jLauncher.jar` (a private folder,
then one rename, so concurrent starts are safe) and started from that jar: a jar, not a folder of
classes, so the JVM can archive its classes (`class_archive`). Without `javac`, source-file mode.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import zipfile
from importlib import resources
from pathlib import Path

from driftrag.local_neo4j.resolver import ResolvedRuntime

MAIN_CLASS = "Neo4jLauncher"
_SOURCE = f"{MAIN_CLASS}.java"
_JAR = f"{MAIN_CLASS}.jar"
_COMPILE_TIMEOUT_S = 300
_LAYOUT = b"jar-1"  # in the folder digest: a cache of the earlier layout (loose classes) is not reused


def launcher_source() -> Path:
    return Path(str(resources.files("driftrag.local_neo4j").joinpath(_SOURCE)))


def launcher_arguments(java: str, runtime: ResolvedRuntime, jar: Path | None) -> list[str]:
    """`-cp <classpath> <main>` for the java command line: the compiled jar, else the source file."""
    jars = f"{runtime.lib_dir}/*"
    if jar is not None:
        return ["-cp", f"{jars}{os.pathsep}{jar}", MAIN_CLASS]
    return ["-cp", jars, str(launcher_source())]


def compiled_launcher(java: str, runtime: ResolvedRuntime) -> Path | None:
    """The launcher jar of this runtime, compiled now if needed; None without a working `javac`."""
    source = launcher_source()
    digest = hashlib.sha256(source.read_bytes() + _LAYOUT).hexdigest()[:16]
    folder = runtime.lib_dir.parent / "launcher" / digest
    jar = folder / _JAR
    if jar.is_file() or _compile(java, source, f"{runtime.lib_dir}/*", folder):
        return jar
    return None


def _compile(java: str, source: Path, jars: str, folder: Path) -> bool:
    javac = Path(java).resolve().parent / "javac"
    compiler = str(javac) if javac.is_file() else shutil.which("javac")
    if compiler is None:
        return False
    private = folder.parent / f".{folder.name}-{os.getpid()}-{secrets.token_hex(4)}"
    classes = private / "classes"
    classes.mkdir(parents=True)
    try:
        done = subprocess.run(
            [compiler, "-nowarn", "-cp", jars, "-d", str(classes), str(source)],
            capture_output=True,
            timeout=_COMPILE_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            return False  # source-file mode then reports the problem in neo4j.log
        with zipfile.ZipFile(private / _JAR, "w", zipfile.ZIP_DEFLATED) as jar:
            for compiled in sorted(classes.rglob("*.class")):
                jar.write(compiled, compiled.relative_to(classes).as_posix())
        shutil.rmtree(classes)
        try:
            private.rename(folder)
        except OSError:
            pass  # another start compiled the same source first: use that one
        return (folder / _JAR).is_file()
    except subprocess.TimeoutExpired:
        return False
    finally:
        shutil.rmtree(private, ignore_errors=True)
