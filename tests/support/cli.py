"""Run the installed `driftrag` executable in a subprocess, as a user does, against a given Neo4j and home.

run_cli("stats", "--kb", kb, uri=neo4j_uri, home=tmp_path)            # a clean environment
run_cli_fail_fast("graph", "--kb", kb, uri=neo4j_uri, home=tmp_path)  # one connection attempt
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = Path(sys.executable).parent / "driftrag"


def cli_env(uri: str, home: Path) -> dict[str, str]:
    """This process's environment without its model and driftrag settings, on `uri` and `home`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "DRIFTRAG_"))}
    return env | {"NEO4J_URI": uri, "DRIFTRAG_HOME": str(home), "DRIFTRAG_CONNECT_RETRIES": "2"}


def run_cli(*args: str, uri: str, home: Path, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    """`driftrag ARGS` in `home` with the environment of `cli_env`; output captured as text."""
    env = cli_env(uri, home)
    return subprocess.run([str(CLI), *args], env=env, cwd=home, capture_output=True, text=True, timeout=timeout)


def run_cli_fail_fast(*args: str, uri: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`driftrag ARGS` in `home` with this process's environment, trying Neo4j once (an unreachable
    server fails at once); output captured as text, 120 s at most."""
    env = {
        **os.environ,
        "NEO4J_URI": uri,
        "DRIFTRAG_HOME": str(home),
        "DRIFTRAG_CONNECT_RETRIES": "1",
        "DRIFTRAG_CONNECT_RETRY_DELAY_S": "0",
    }
    return subprocess.run([str(CLI), *args], env=env, cwd=home, capture_output=True, text=True, timeout=120)
