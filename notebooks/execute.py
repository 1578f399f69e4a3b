"""Execute the notebooks offline and write them back with their outputs, so the repository shows results.

    python notebooks/execute.py                           # both notebooks
    python notebooks/execute.py alice_walkthrough.ipynb   # one

Each notebook runs in a fresh kernel, in offline mode (OPENAI_API_KEY is not passed on, so no model and
no cost), against `NEO4J_URI` or else the local Neo4j (`DRIFTRAG_NEO4J_PORT`, started if needed), on its
own knowledge base (`notebook-<name>`, deleted first so every run starts from nothing; kept afterwards
to explore). The Alice walkthrough reads the whole book: run `driftrag data fetch alice` once first
(offline: `--from PATH`). Then the outputs are tidied before the file is rewritten (`tidy`):

- consecutive stream outputs are merged; no timing metadata, no widget state; execution counts 1..n;
- an HTML output over `MAX_HTML_BYTES` keeps its other forms only (the interactive graph inlines
  vis-network, about 0.8 MB; its text form says what it showed);
- `metadata.driftrag.sources_sha256` records the code it ran, so a test can tell outputs gone stale.

Timings (the progress lines, "answer in … s", the time per stage) are those of the run and change
each time; everything else is deterministic offline. tests/integration/test_notebooks.py executes the
notebooks with `execute_notebook` too, in memory, and never rewrites them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat import NotebookNode

NOTEBOOKS = Path(__file__).resolve().parent
NAMES = ("sample_quickstart.ipynb", "alice_walkthrough.ipynb")
CELL_TIMEOUT_S = 900
MAX_HTML_BYTES = 100_000
# Left out of the kernel's environment: the committed outputs are offline runs.
MODEL_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DRIFTRAG_LLM_PROVIDER", "DRIFTRAG_NOTEBOOK_CHAPTERS")


def sources_digest(notebook: NotebookNode) -> str:
    """SHA-256 of the code cells' sources, in order: what the outputs were computed from."""
    sources = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return hashlib.sha256(json.dumps(sources).encode("utf-8")).hexdigest()


def kb_for(name: str) -> str:
    """The knowledge base a notebook is executed on here: `notebook-alice`, `notebook-sample`."""
    return "notebook-" + Path(name).stem.split("_")[0]


async def execute_notebook(path: Path, *, timeout_s: int = CELL_TIMEOUT_S) -> NotebookNode:
    """Run every cell of the notebook at `path` in a fresh kernel whose working directory is the
    notebook's folder (the notebooks read `../data/`); the file itself is not touched.
    Raises nbclient's CellExecutionError, with the cell's traceback, on the first failing cell."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout_s,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    await client.async_execute()
    return notebook


def _merge_streams(outputs: list[NotebookNode]) -> list[NotebookNode]:
    merged: list[NotebookNode] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if output.output_type == "stream" and last is not None and last.output_type == "stream":
            if last.name == output.name:
                last.text += output.text
                continue
        merged.append(output)
    return merged


def tidy(notebook: NotebookNode) -> NotebookNode:
    """The executed notebook as it is committed (see the module docstring); changed in place."""
    count = 0
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        count += 1
        cell.execution_count = count
        cell.outputs = _merge_streams(cell.outputs)
        for output in cell.outputs:
            if "execution_count" in output:
                output.execution_count = count
            data = output.get("data", {})
            if len(data.get("text/html", "")) > MAX_HTML_BYTES and len(data) > 1:
                del data["text/html"]
    notebook.metadata.pop("widgets", None)
    notebook.metadata["driftrag"] = {"sources_sha256": sources_digest(notebook)}
    return notebook


@contextmanager
def kernel_environment(kb: str) -> Iterator[None]:
    """The variables the kernel inherits while one notebook runs: offline, its own kb."""
    saved = dict(os.environ)
    for name in MODEL_VARIABLES:
        os.environ.pop(name, None)
    os.environ["DRIFTRAG_LLM_PROVIDER"] = "offline"
    os.environ["DRIFTRAG_NOTEBOOK_KB"] = kb
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


async def fresh_kb(kb: str) -> None:
    """Delete the kb if it exists, so the notebook ingests from nothing."""
    from driftrag.facade import DriftRAG

    async with DriftRAG.from_env(llm_provider="offline") as rag:
        if kb in {summary.kb for summary in await rag.knowledge_bases()}:
            await rag.delete_kb(kb)


async def run(names: list[str]) -> None:
    for name in names:
        path = NOTEBOOKS / name
        kb = kb_for(name)
        with kernel_environment(kb):
            await fresh_kb(kb)
            started = time.monotonic()
            notebook = await execute_notebook(path)
        nbformat.write(tidy(notebook), path)
        seconds = time.monotonic() - started
        print(f"{name}: executed in {seconds:.0f} s on kb {kb}; {path.stat().st_size:,} bytes written")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"Notebooks to run, of {', '.join(NAMES)} (default: all)."
    )
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in NAMES]
    if unknown:
        parser.error(f"no such notebook: {', '.join(unknown)} (choose from {', '.join(NAMES)})")
    asyncio.run(run(list(args.names) or list(NAMES)))


if __name__ == "__main__":
    sys.exit(main())
