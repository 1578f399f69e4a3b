"""Execute the notebooks in notebooks/ with nbclient against the test Neo4j, offline, as a user would run them.

The kernel inherits this process's environment, so the test points it at the test server
(`NEO4J_URI`), a private `DRIFTRAG_HOME`, offline models and its own knowledge base, then asserts
that no cell failed and that the key outputs (answers with sources, the follow-up tree, the graph
picture, the interactive graph, the evaluation plot) are there. The notebooks are run the way
`notebooks/execute.py` runs them (its `execute_notebook`), in memory: the committed files are never
rewritten, and nothing is written beside them. The Alice walkthrough runs on its first two chapters
(`DRIFTRAG_NOTEBOOK_CHAPTERS=2`); users, and the committed outputs, get the whole book.
"""

from __future__ import annotations

import importlib.util
import re
import time
import uuid
from html import unescape
from pathlib import Path

import nbformat
import pytest

from driftrag import corpora
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.graph import GraphStore

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CELL_TIMEOUT_S = 600
# A cited source as AnswerView prints it: "- [chunk-…] chunk 'title': text".
CITED_SOURCE = re.compile(r"^- \[(chunk|entity|relationship|community)-[0-9a-f-]+\] ", re.MULTILINE)

_spec = importlib.util.spec_from_file_location("notebooks_execute", NOTEBOOKS / "execute.py")
assert _spec is not None and _spec.loader is not None
EXECUTE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(EXECUTE)


@pytest.fixture
async def notebook_kb(neo4j_uri: str, neo4j_settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The kernel's environment: the test Neo4j, a private home, offline models, a fresh kb (deleted after)."""
    kb = f"nb-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("NEO4J_URI", neo4j_uri)
    monkeypatch.setenv("DRIFTRAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DRIFTRAG_LLM_PROVIDER", "offline")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DRIFTRAG_NOTEBOOK_KB", kb)
    yield kb
    async with Neo4jStore.from_settings(neo4j_settings) as store:
        await store.connect()
        await GraphStore(store).delete_kb(kb)


async def execute(name: str) -> tuple[list[str], float]:
    """Run every cell; return each code cell's text output (stdout, text/plain, HTML and Markdown
    results, the HTML unescaped so an iframe's page reads as the page) and the wall time."""
    committed = (NOTEBOOKS / name).read_bytes()
    beside = sorted(path.name for path in NOTEBOOKS.iterdir())
    started = time.monotonic()
    # Raises CellExecutionError (with the cell's traceback) on any error.
    notebook = await EXECUTE.execute_notebook(NOTEBOOKS / name, timeout_s=CELL_TIMEOUT_S)
    elapsed = time.monotonic() - started
    assert (NOTEBOOKS / name).read_bytes() == committed, "the committed notebook is never rewritten"
    assert sorted(path.name for path in NOTEBOOKS.iterdir()) == beside, "nothing written beside the notebooks"
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        parts = []
        for output in cell.outputs:
            assert output.output_type != "error", output
            if output.output_type == "stream":
                parts.append(output.text)
            elif "data" in output:
                parts.extend(output.data.get(kind, "") for kind in ("text/plain", "text/markdown"))
                parts.append(unescape(output.data.get("text/html", "")))
                parts.append("<image/png>" if "image/png" in output.data else "")
        texts.append("\n".join(parts))
    # What the committed copy keeps: small outputs only.
    tidied = EXECUTE.tidy(nbformat.from_dict(notebook))
    assert all(
        len(output.get("data", {}).get("text/html", "")) <= EXECUTE.MAX_HTML_BYTES
        for cell in tidied.cells
        for output in cell.get("outputs", [])
    )
    print(f"{name}: executed in {elapsed:.0f} s")
    return texts, elapsed


def find(texts: list[str], marker: str) -> str:
    """The output of the first code cell that printed `marker`."""
    for text in texts:
        if marker in text:
            return text
    raise AssertionError(f"no cell output contains {marker!r}")


async def test_sample_quickstart_runs_offline(notebook_kb: str) -> None:
    texts, _ = await execute("sample_quickstart.ipynb")

    assert "model mode: offline" in find(texts, "Neo4j 5.")
    assert "documents=4" in find(texts, "embed-community")  # streamed progress, then the kb's counts
    answer = find(texts, "drift answer in")
    assert "Extractive answer" in answer
    assert "Sources:" in answer and CITED_SOURCE.search(answer)
    tree = find(texts, "Q: Who made the light")
    assert "primer (score" in tree and "searched as d1-" in tree
    assert "DRIFT vs basic: DRIFT's first" in "\n".join(texts)
    parts = find(texts, "retriever: ")
    assert "cited source nodes" in parts and f"tool {notebook_kb.replace('-', '_')}_local_search: " in parts
    assert "Captain Wren Halloway" in find(texts, "graph search 'Captain'")
    assert f"kb {notebook_kb}, the whole graph" in find(texts, "<svg")
    interactive = find(texts, "interactive graph: ")
    assert f"kb {notebook_kb}, the whole graph" in interactive and "communities" in interactive
    assert 'id="select-node"' in interactive and "Captain Wren Halloway" in interactive  # the page, inline


async def test_alice_walkthrough_runs_offline_on_two_chapters(
    notebook_kb: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, alice_book: Path
) -> None:
    # The kernel's DRIFTRAG_HOME is private to the test: the book goes there as a user would put it,
    # with `driftrag data fetch alice --from PATH`; the notebook then finds it without any network.
    kept = corpora.fetch("alice", dest=corpora.default_dest(tmp_path / "home"), source=alice_book)
    monkeypatch.setenv("DRIFTRAG_NOTEBOOK_CHAPTERS", "2")
    texts, _ = await execute("alice_walkthrough.ipynb")
    everything = "\n".join(texts)

    assert "model mode: offline" in texts[0]
    assert f"the book: {kept.path.name}, kept in DRIFTRAG_HOME/corpora/" in find(texts, "the book: ")
    assert "12 chapters" in find(texts, "CHAPTER XII.")
    assert "ingesting Alice's Adventures in Wonderland, chapters 1-2" in find(texts, "extract: ")
    assert "Alice" in find(texts, "entities; the 15 found in the most chunks")
    assert "communities; the 10 best-rated reports" in everything

    drift = find(texts, "drift answer in")
    assert "Extractive answer" in drift and "Sources:" in drift and CITED_SOURCE.search(drift)
    assert "hyde:" in drift and "reduce:" in drift  # the streamed DRIFT progress, printed in the same cell
    local = find(texts, "local answer in")
    assert "Sources:" in local and CITED_SOURCE.search(local)
    assert "DRIFT vs local" in everything
    assert "DRIFT vs basic: DRIFT's first" in everything

    tree = find(texts, "Q: Who is the White Rabbit")
    assert "primer (score" in tree and "searched as d1-" in tree
    assert "```mermaid" in tree and "question --> primer" in tree

    assert "entities match 'Rabbit'" in everything
    assert f"kb {notebook_kb}, community community-" in find(texts, "<svg")
    assert "subgraph" in find(texts, "%% driftrag graph view")

    interactive = find(texts, "interactive graph: ")
    assert f"kb {notebook_kb}, the whole graph" in interactive and 'id="select-node"' in interactive
    assert "Colour: community (level 0)" in interactive and "White Rabbit" in interactive

    evaluation = find(texts, "questions of alice.jsonl (split report)")
    assert "5 methods" in evaluation and ", 0 errors;" in evaluation
    assert "| method | local | multi-hop |" in evaluation and "| drift |" in evaluation
    assert "<image/png>" in evaluation  # the recall plot
