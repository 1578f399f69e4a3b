"""Every workflow draws with LlamaIndex's `draw_all_possible_flows`, and docs/workflows.md is its drawing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from llama_index.utils.workflow import draw_all_possible_flows
from workflows import Workflow
from workflows.decorators import StepConfig

ROOT = Path(__file__).resolve().parents[2]


def _drawings_module():
    spec = importlib.util.spec_from_file_location("draw_workflows", ROOT / "docs" / "draw_workflows.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DRAWINGS = _drawings_module()


def _steps(workflow: type[Workflow]) -> dict[str, StepConfig]:
    return {name: fn._step_config for name, fn in workflow._get_steps_from_class().items()}


@pytest.mark.parametrize("workflow", list(DRAWINGS.WORKFLOWS), ids=lambda w: w.__name__)
def test_each_workflow_draws_every_step_and_event(
    workflow: type[Workflow], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the drawing leaves its script folder (lib/) in the working directory
    page = tmp_path / "flows.html"
    draw_all_possible_flows(workflow, filename=str(page))
    html = page.read_text(encoding="utf-8")
    for name, config in _steps(workflow).items():
        assert name in html
        for event in [*config.accepted_events, *config.return_types]:
            if event is not type(None):
                assert event.__name__ in html


def test_the_drawn_flows_in_the_docs_are_those_of_the_code() -> None:
    assert (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8") == DRAWINGS.page(), (
        "docs/workflows.md is out of date: run .venv/bin/python docs/draw_workflows.py"
    )


def test_drift_fans_its_follow_ups_out_to_a_step_with_several_workers() -> None:
    from driftrag.workflows.drift import DriftWorkflow, FollowUpAnswered, FollowUpSearch

    steps = _steps(DriftWorkflow)
    (search,) = [config for config in steps.values() if FollowUpSearch in config.accepted_events]
    assert search.num_workers > 1 and search.return_types == [FollowUpAnswered]
    assert any(FollowUpAnswered in config.accepted_events for config in steps.values())
