"""Execute the notebooks in notebooks/ with nbclient against the test Neo4j, offline, as a user would run them.

The kernel inherits this process's environment, so the test points it at the test server
(`NEO4J_URI`), a private `DRIFTRAG_HOME`, offline models and its own knowledge base, then asserts
that no cell failed and that the key outputs (answers with sources, the follow-up tree, the graph
picture) are there. The Alice walkthrough runs on its first two chapters
(`DRIFTRAG_NOTEBOOK_CHAPTERS=2`); users get the whole book.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

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
    """Run every cell; return each code cell's text output (stdout and text/plain results) and the wall time."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    started = time.monotonic()
    await client.async_execute()  # raises CellExecutionError (with the cell's traceback) on any error
    elapsed = time.monotonic() - started
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
                parts.extend(output.data.get(kind, "") for kind in ("text/plain", "text/html", "text/markdown"))
        texts.append("\n".join(parts))
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
    assert f"the book: {kept.path}" in find(texts, "the book: ")
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
