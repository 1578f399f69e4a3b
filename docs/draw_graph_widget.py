"""Writes docs/images/graph-widget.png: the interactive graph view of a kb, screenshotted by headless Chromium.

    .venv/bin/python docs/draw_graph_widget.py [--kb notebook-alice] [--out docs/images/graph-widget.png]

The kb defaults to the one `python notebooks/execute.py` leaves behind for the Alice walkthrough (the
whole book, offline). Neo4j is `NEO4J_URI` or the local one (`DRIFTRAG_NEO4J_PORT`). The page is the
one `interactive_graph(rag, kb).write_html(path)` writes; Debian's `chromium` opens it headless
(`apt-get install chromium`), and the screenshot is kept as a 256-colour PNG so it stays small.
tests/integration/views/test_interactive_in_browser.py renders the same kind of page with the network
off and checks what it drew.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from driftrag.facade import DriftRAG
from driftrag.notebook import interactive_graph

DOCS = Path(__file__).resolve().parent
WINDOW = "1200,800"
# Rendering here is quick, but a loaded machine needs the budget: virtual time runs only when idle.
VIRTUAL_TIME_MS = 5000


async def write_page(kb: str, target: Path, max_nodes: int) -> str:
    async with DriftRAG.from_env(llm_provider="offline") as rag:
        graph = await interactive_graph(rag, kb, max_nodes=max_nodes, height=560)
    graph.write_html(target)
    return graph.describe()


def screenshot(page: Path, target: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed: apt-get install chromium")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--disable-background-networking",
                f"--user-data-dir={profile}",
                f"--window-size={WINDOW}",
                f"--virtual-time-budget={VIRTUAL_TIME_MS}",
                f"--screenshot={target}",
                page.as_uri(),
            ],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
        )
    with Image.open(target) as shot:
        shot.convert("RGB").quantize(colors=256).save(target, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kb", default="notebook-alice", help="The knowledge base to draw.")
    parser.add_argument("--max-nodes", type=int, default=150, help="Cap on the entities drawn (highest degree).")
    parser.add_argument("--out", type=Path, default=DOCS / "images" / "graph-widget.png", help="The PNG written.")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "graph.html"
        described = asyncio.run(write_page(args.kb, page, args.max_nodes))
        screenshot(page, args.out.resolve())
    print(f"{args.out}: {described}; {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
