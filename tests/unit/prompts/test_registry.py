import pytest

from driftrag.models.graph import ExtractionPayload
from driftrag.prompts.registry import TASK_PLACEHOLDERS, PromptError, PromptRegistry
from driftrag.providers.structured import describe_keys


def _valid_templates() -> dict[str, str]:
    return {name: " ".join(f"${p}" for p in sorted(ph)) for name, ph in TASK_PLACEHOLDERS.items()}


def test_packaged_templates_load_and_render():
    registry = PromptRegistry.load()
    assert registry.names == sorted(TASK_PLACEHOLDERS)
    text = registry.render("repair_json", error="bad", answer_shape=describe_keys(ExtractionPayload))
    assert "bad" in text and '"entities"' in text


def test_unknown_name_refused():
    registry = PromptRegistry.load()
    with pytest.raises(PromptError, match="unknown prompt"):
        registry.render("extract_grahp")
    with pytest.raises(PromptError, match="unknown prompt template"):
        PromptRegistry([*_valid_templates().items(), ("surprise", "")])


def test_duplicate_names_refused():
    templates = list(_valid_templates().items())
    with pytest.raises(PromptError, match="twice"):
        PromptRegistry([*templates, templates[0]])


def test_missing_task_refused():
    templates = _valid_templates()
    del templates["glean_graph"]
    with pytest.raises(PromptError, match="glean_graph"):
        PromptRegistry(templates.items())


def test_placeholder_mismatch_refused_at_load():
    templates = _valid_templates()
    templates["summarize_descriptions"] = "$name $descripitons $max_words"
    with pytest.raises(PromptError, match="descripitons"):
        PromptRegistry(templates.items())


def test_malformed_dollar_refused():
    templates = _valid_templates()
    templates["glean_graph"] = "$chunk_open $chunk_close costs $5"
    with pytest.raises(PromptError, match="malformed"):
        PromptRegistry(templates.items())


def test_render_refuses_missing_and_extra_values():
    registry = PromptRegistry.load()
    with pytest.raises(PromptError, match="missing values"):
        registry.render("repair_json", error="x")
    with pytest.raises(PromptError, match=r"unexpected values \['extra'\]"):
        registry.render("repair_json", error="x", answer_shape="{}", extra="y")


def test_override_directory_replaces_one_template(tmp_path):
    (tmp_path / "glean_graph.txt").write_text("More please, between $chunk_open and $chunk_close.")
    registry = PromptRegistry.load(tmp_path)
    assert registry.render("glean_graph", chunk_open="<", chunk_close=">") == "More please, between < and >."
    assert "OUTPUT PROTOCOL" in registry.template("extract_graph")


def test_override_directory_refuses_unknown_and_case_duplicates(tmp_path):
    (tmp_path / "extract_entities.txt").write_text("x")
    with pytest.raises(PromptError, match=r"unknown prompt template 'extract_entities\.txt'"):
        PromptRegistry.load(tmp_path)
    (tmp_path / "extract_entities.txt").unlink()
    (tmp_path / "glean_graph.txt").write_text("$chunk_open $chunk_close")
    (tmp_path / "glean_graph.TXT").write_text("$chunk_open $chunk_close")
    with pytest.raises(PromptError, match="duplicate"):
        PromptRegistry.load(tmp_path)


def test_missing_override_directory(tmp_path):
    with pytest.raises(PromptError, match="does not exist"):
        PromptRegistry.load(tmp_path / "absent")
