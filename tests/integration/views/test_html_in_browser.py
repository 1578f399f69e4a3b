"""The HTML graph view in a real browser: headless Chromium (Debian's package) opens the page that
`driftrag graph --html` writes, over a graph read from the real Neo4j, and the test checks that it
renders every node and label, raises no script error and fetches nothing from the network.

The screenshot is kept as a test artifact: `test-artifacts/graph-view.png` (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from driftrag.store import Neo4jStore
from driftrag.store.views import GraphViewStore
from driftrag.views.html import render_html
from driftrag.views.measures import measure
from tests.support.browser import Chromium
from tests.support.view_graph import write_graph

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "test-artifacts"
NODE_FILL = (0xBB, 0xDE, 0xFB)  # plain entities (#bbdefb)
HUB_FILL = (0xFF, 0xD5, 0x4F)  # high-degree entities (#ffd54f)

# The geometry of what the browser laid out: every circle, every label, and the SVG.
RENDERED = """(() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
  const svg = document.querySelector("svg");
  return {
    svg: box(svg),
    circles: [...svg.querySelectorAll("g.nodes circle")].map(box),
    labels: [...svg.querySelectorAll("g.nodes text")].map((t) => ({text: t.textContent, box: box(t)})),
    lines: svg.querySelectorAll("g.edges line").length,
    scripts: document.scripts.length,
  };
})()"""


@pytest.fixture
async def page(store: Neo4jStore, kb: str, tmp_path: Path):
    """The page of the test graph (see tests/support/view_graph.py), as `driftrag graph --html` writes it."""
    await store.ensure_schema()
    await write_graph(store, kb)
    view = await GraphViewStore(store).read_view(kb)
    path = tmp_path / "graph.html"
    path.write_text(render_html(view), encoding="utf-8")
    return path, view


def _colour_pixels(png: Path, colour: tuple[int, int, int]) -> int:
    pixels = (image.imread(png)[..., :3] * 255).round().astype(int)
    return int(np.all(np.abs(pixels - np.array(colour)) <= 2, axis=-1).sum())


def test_the_html_view_renders_in_chromium_without_errors_or_network(chromium: Path, page, tmp_path: Path) -> None:
    path, view = page
    names = sorted(entity.name for entity in view.entities)
    assert len(names) >= 5 and view.relationships
    with Chromium(chromium, tmp_path) as browser:
        browser.open(path.as_uri())
        rendered = browser.evaluate(RENDERED)
        shot = browser.screenshot(ARTIFACTS / "graph-view.png")
        errors, requests = list(browser.errors), list(browser.requests)
    (ARTIFACTS / "graph-view.html").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")

    assert errors == []
    assert requests == [path.as_uri()], "the page loads nothing but itself (no CDN, no font, no image)"
    assert rendered["scripts"] == 0

    svg_left, svg_top, svg_width, svg_height = rendered["svg"]
    assert svg_width > 300 and svg_height > 100
    assert len(rendered["circles"]) == len(names)
    assert rendered["lines"] == len(view.relationships)
    for left, top, width, height in rendered["circles"]:
        assert width > 5 and height > 5
        assert svg_left <= left and left + width <= svg_left + svg_width + 1
        assert svg_top <= top and top + height <= svg_top + svg_height + 1
    assert sorted(label["text"] for label in rendered["labels"]) == names
    assert all(label["box"][2] > 10 and label["box"][3] > 5 for label in rendered["labels"]), rendered["labels"]

    # The pixels: node discs are painted in their colours (hubs gold, the others blue).
    hubs = set(measure(view).hubs)
    assert _colour_pixels(shot, NODE_FILL) > 50 * (len(names) - len(hubs))
    if hubs:
        assert _colour_pixels(shot, HUB_FILL) > 50 * len(hubs)


def test_the_error_hooks_do_catch_script_errors_and_requests(chromium: Path, tmp_path: Path) -> None:
    """The control: a page that throws, logs an error and asks for a remote script is caught on all three."""
    broken = tmp_path / "broken.html"
    broken.write_text(
        "<!DOCTYPE html><html><body><p>x</p>"
        "<script>console.error('logged failure')</script>"
        "<script>throw new Error('uncaught failure')</script>"
        '<script src="http://127.0.0.1:9/remote.js"></script>'
        "</body></html>",
        encoding="utf-8",
    )
    with Chromium(chromium, tmp_path) as browser:
        browser.open(broken.as_uri())
        errors, requests = " | ".join(browser.errors), browser.requests
    assert "logged failure" in errors and "uncaught failure" in errors
    assert "http://127.0.0.1:9/remote.js" in requests
