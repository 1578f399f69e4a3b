"""The manual builds as a site, strictly: a broken link, a missing page or a nav entry without a file fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MKDOCS = shutil.which("mkdocs", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(MKDOCS is None, reason="mkdocs is not installed: pip install -e '.[docs]'")
def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site), "--config-file", str(ROOT / "mkdocs.yml")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's banner about its successor
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    for page in (
        "index.html",
        "reference/configuration/index.html",
        "reference/cli/index.html",
        "benchmarks/index.html",
        "workflows/index.html",
    ):
        assert (site / page).is_file(), page
    # The site fetches nothing when it is built: no plugin that downloads (social cards, privacy).
    assert not (site / "assets" / "external").exists()


def test_every_docs_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, flags=re.M))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - listed == set(), "pages missing from the nav of mkdocs.yml"
    assert listed - pages == set(), "nav entries without a page"


def test_the_readme_links_into_the_manual_and_keeps_the_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 260, "README.md is the front page: keep it short, move detail to docs/"
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).exists(), target
    assert "make test" in readme and "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("page", ["README.md", "docs/architecture.md"])
def test_the_pictures_of_ingestion_and_drift_name_every_step_of_their_workflows(page: str) -> None:
    from driftrag.workflows.drift import DriftWorkflow
    from driftrag.workflows.ingestion import IngestionWorkflow

    pictures = re.findall(r"```mermaid\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), flags=re.S)
    assert len(pictures) >= 2, page
    for workflow, picture in zip((IngestionWorkflow, DriftWorkflow), pictures, strict=False):
        for step in workflow._get_steps_from_class():
            assert f'["{step}<br/>' in picture, (page, workflow.__name__, step)


def test_the_readme_headline_recall_is_the_recorded_evaluation_table() -> None:
    """The front page quotes the evaluation table of docs/benchmarks.md at one budget; re-recording it
    must update both."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    table = page.split("<!-- bench:eval-table:start -->", 1)[1].split("<!-- bench:eval-table:end -->", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()]
    header = next(row for row in rows if row[:2] == ["set", "method"])
    recorded = {
        (row[0], row[1].split(" (")[0]): dict(zip(header, row, strict=True))
        for row in rows
        if len(row) == len(header) and row[:2] != header[:2] and not row[0].startswith("---")
    }
    quoted_header = next(line for line in readme.splitlines() if line.startswith("| at ") and "| drift |" in line)
    cells = [cell.strip() for cell in quoted_header.strip("|").split("|")]
    budget = cells[0].removeprefix("at ").removesuffix(" tokens").replace(",", "")
    methods = cells[1:]
    quoted_rows = [
        line for line in readme.splitlines() if re.match(r"\| \w+, (exact evidence|answer-token) recall \|", line)
    ]
    assert len(quoted_rows) >= 2
    for line in quoted_rows:
        label, *values = [cell.strip() for cell in line.strip("|").split("|")]
        name, metric = label.split(", ", 1)
        column = f"{'exact recall' if metric.startswith('exact') else 'answer-token recall'}, {budget}"
        for method, value in zip(methods, values, strict=True):
            expected = recorded[(name.lower(), method)][column]
            assert float(value.rstrip(" %")) == float(expected.rstrip("%")), (label, method, value, expected)
