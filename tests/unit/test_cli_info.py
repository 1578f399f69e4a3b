"""`driftrag info` says which structured-output level the JSON tasks ask for, and what `auto` does, and how
many model calls run at once."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from driftrag.cli import app
from tests.fakes.openai_server import FakeOpenAIServer


def test_info_names_the_structured_output_setting() -> None:
    env = {"DRIFTRAG_LLM_PROVIDER": "openai", "OPENAI_API_KEY": "test", "DRIFTRAG_LLM_STRUCTURED": "auto"}
    result = CliRunner().invoke(app, ["info"], env=env)
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("Structured outputs: "))
    assert "auto" in line and "JSON schema" in line and "JSON mode" in line
    env["DRIFTRAG_LLM_STRUCTURED"] = "json_object"
    shown = json.loads(CliRunner().invoke(app, ["info", "--json"], env=env).output)
    assert shown["structured_outputs"].startswith("json_object")
    offline = {"DRIFTRAG_LLM_PROVIDER": "offline", "OPENAI_API_KEY": ""}
    assert "unused" in CliRunner().invoke(app, ["info"], env=offline).output


def test_info_says_the_concurrency_a_servers_slots_allow() -> None:
    with FakeOpenAIServer(total_slots=1) as server:
        env = {"DRIFTRAG_LLM_PROVIDER": "openai", "OPENAI_API_KEY": "none", "OPENAI_BASE_URL": server.base_url}
        result = CliRunner().invoke(app, ["info"], env=env)
        assert result.exit_code == 0, result.output
        assert "model calls: 1 at once (the server's 1 slot(s), GET /props)" in result.output
        shown = json.loads(CliRunner().invoke(app, ["info", "--json"], env=env).output)
        assert (shown["models"]["concurrency"], shown["models"]["call_timeout_s"]) == (1, 60.0)
