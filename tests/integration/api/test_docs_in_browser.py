"""The API's docs page (`/api/v1/docs`, Swagger UI) in headless Chromium: it renders every operation with
its script and style sheet served by the server itself, so it works on a machine without internet."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from driftrag.api.server import BackgroundServer
from tests.support.browser import Chromium

# Slow end to end (own servers, subprocesses, a browser or the whole book): `-m "not slow"` skips it.
pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
OPERATIONS = "document.querySelectorAll('.opblock').length"


def test_the_docs_page_renders_offline(chromium: Path, server: BackgroundServer, tmp_path: Path) -> None:
    document = httpx.get(f"{server.url}/api/v1/openapi.json").json()
    operations = sum(len(item) for item in document["paths"].values())
    with Chromium(chromium, tmp_path) as browser:
        browser.open(f"{server.url}/api/v1/docs")
        deadline = time.monotonic() + 60
        # Swagger UI fetches the OpenAPI document, then draws one block per operation.
        while browser.evaluate(OPERATIONS) != operations and time.monotonic() < deadline:
            time.sleep(0.2)
        rendered = browser.evaluate(OPERATIONS)
        title = browser.evaluate("document.querySelector('.info .title')?.textContent")
        browser.screenshot(ARTIFACTS / "api-docs.png")
        errors, requests = list(browser.errors), list(browser.requests)

    assert rendered == operations, f"{rendered} of {operations} operations drawn"
    assert title and title.startswith("driftrag")
    assert errors == []
    outside = [url for url in requests if not url.startswith((server.url, "data:"))]
    assert outside == [], f"the page fetched from elsewhere: {json.dumps(outside)}"
    assert any(url.endswith("/swagger-ui-bundle.js") for url in requests)
