"""Writes docs/workflows.md: every workflow of driftrag drawn from its steps and events (Mermaid).

    .venv/bin/python docs/draw_workflows.py

The drawings come from the workflow classes themselves (LlamaIndex's `draw_all_possible_flows_mermaid`);
`tests/unit/test_workflow_drawings.py` fails when this page no longer matches the code.
"""

from __future__ import annotations

from pathlib import Path

from llama_index.utils.workflow import draw_all_possible_flows_mermaid
from workflows import Workflow

from driftrag.workflows.drift import DriftWorkflow
from driftrag.workflows.global_search import GlobalWorkflow
from driftrag.workflows.ingestion import IngestionWorkflow
from driftrag.workflows.search import SearchWorkflow

PAGE = Path(__file__).parent / "workflows.md"
WORKFLOWS: dict[type[Workflow], str] = {
    IngestionWorkflow: "Files or texts into a knowledge base: documents, extraction, entity layer, "
    "communities and reports, embeddings.",
    SearchWorkflow: "Every single-pass mode (basic, local, entity): start, retrieve, answer.",
    DriftWorkflow: "DRIFT: HyDE, community reports, primer, then each round's follow-ups fanned out to "
    "`local_search` workers and collected by `collect_round`, until none is left; reduce.",
    GlobalWorkflow: "Global search: plan the level and batches, map over the reports, reduce.",
}


def mermaid(workflow: type[Workflow]) -> str:
    lines = draw_all_possible_flows_mermaid(workflow, filename="").strip().splitlines()
    # Only the styles the drawing uses: the library declares every style it knows in each drawing.
    used = {line.split(":::")[-1].strip() for line in lines if ":::" in line}
    return "\n".join(line for line in lines if not line.strip().startswith("classDef") or line.split()[1] in used)


def page() -> str:
    parts = [
        "# The workflows",
        "",
        "Drawn from the code by `docs/draw_workflows.py`: rounded boxes are events, square ones steps.",
        "Events carry data only; a run's live state is in its context (see the module docstrings).",
    ]
    for workflow, summary in WORKFLOWS.items():
        parts += ["", f"## {workflow.__name__}", "", summary, "", "```mermaid", mermaid(workflow), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    PAGE.write_text(page(), encoding="utf-8")
    print(f"wrote {PAGE}")
