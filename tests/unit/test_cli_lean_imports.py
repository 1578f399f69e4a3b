"""A `driftrag` run leaves out the optional modules its libraries import at start-up and it never uses.

Each check runs in a fresh interpreter (this one has imported everything) and reads its `sys.modules`.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from driftrag.cli.lean_imports import HIDDEN

OPTIONAL = sorted({name for hidden in HIDDEN.values() for name in hidden})


def _run(script: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in OPTIONAL), reason="needs pandas, pyarrow and scipy"
)
def test_the_driver_and_nltk_import_without_their_optional_modules_which_import_as_usual_afterwards() -> None:
    script = f"""
import json, sys
from driftrag.cli import lean_imports
lean_imports.install()
lean_imports.install()  # once per process, however often a command runs
import neo4j, nltk
from neo4j import _optional_deps
from nltk.tokenize.punkt import PunktSentenceTokenizer
during = sorted({{m.split(".")[0] for m in sys.modules}} & set({OPTIONAL!r}))
driver = neo4j.AsyncGraphDatabase.driver("bolt://127.0.0.1:1", auth=("neo4j", "x"))
sentences = PunktSentenceTokenizer().tokenize("One sentence. And another one.")
import pandas, pyarrow, scipy.stats
print(json.dumps({{
    "during": during,
    "driver_sees": [_optional_deps.pd is None, _optional_deps.pa is None, _optional_deps.np is None],
    "loaders": [type(neo4j.__loader__).__name__, type(nltk.__spec__.loader).__name__],
    "finders": sum(type(f).__name__ == "_LeanFinder" for f in sys.meta_path),
    "sentences": sentences,
    "after": [pandas.__name__, pyarrow.__name__, scipy.stats.__name__],
}}))
"""
    seen = _run(script)
    assert seen["during"] == []
    # pandas and pyarrow taken for not installed; numpy (parameters of numpy types) kept.
    assert seen["driver_sees"] == [True, True, False]
    assert seen["loaders"] == ["SourceFileLoader", "SourceFileLoader"]
    assert seen["finders"] == 1
    assert seen["sentences"] == ["One sentence.", "And another one."]
    assert seen["after"] == ["pandas", "pyarrow", "scipy.stats"]


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="needs pandas")
def test_an_optional_module_imported_before_stays_and_the_driver_uses_it() -> None:
    script = """
import json, sys
import pandas
from driftrag.cli import lean_imports
lean_imports.install()
import neo4j
from neo4j import _optional_deps
print(json.dumps({"kept": sys.modules["pandas"] is pandas, "driver_has_it": _optional_deps.pd is pandas}))
"""
    assert _run(script) == {"kept": True, "driver_has_it": True}
