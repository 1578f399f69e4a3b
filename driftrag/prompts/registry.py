"""Prompt templates: one `string.Template` file per task, checked when loaded.

`$var` placeholders keep JSON examples free of doubled braces. The registry knows the placeholders
each task must use; a template that misses one, adds an unknown one, or has a malformed `$` is
refused at load time, not at the first model call. A directory of `<task>.txt` files overrides the
packaged templates task by task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template
from types import MappingProxyType

from driftrag.errors import ConfigurationError

# Task name -> the exact placeholder set its template must use.
TASK_PLACEHOLDERS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "extract_graph": frozenset({"answer_shape", "chunk_open", "chunk_close", "kb_guidance", "max_entities"}),
        "glean_graph": frozenset({"chunk_open", "chunk_close"}),
        "repair_json": frozenset({"error", "answer_shape"}),
        "summarize_descriptions": frozenset({"name", "descriptions", "max_words"}),
        "summary_copied": frozenset({"names"}),
        "community_report": frozenset({"answer_shape", "context", "max_words"}),
        "query_entities": frozenset({"answer_shape", "question"}),
        "local_answer": frozenset({"answer_shape", "question", "context", "max_follow_ups", "user_question"}),
        "drift_hyde": frozenset({"question", "template", "max_words"}),
        "drift_primer": frozenset({"answer_shape", "question", "reports", "max_follow_ups"}),
        "drift_reduce": frozenset({"answer_shape", "question", "answers"}),
        "global_map": frozenset({"answer_shape", "question", "reports", "max_points"}),
        "global_reduce": frozenset({"answer_shape", "question", "points"}),
        "judge_pairwise": frozenset({"answer_shape", "question", "answer_1", "answer_2", "max_reasoning_words"}),
        "generate_personas": frozenset({"answer_shape", "summary", "n_personas", "n_tasks"}),
        "generate_questions": frozenset({"answer_shape", "summary", "persona", "task", "n_questions"}),
        "suggest_extract_config": frozenset(
            {"answer_shape", "description", "language", "max_tags", "domain_open", "domain_close"}
        ),
    }
)
TEMPLATE_SUFFIX = ".txt"


class PromptError(ConfigurationError):
    """A prompt template is unknown, duplicated, malformed, or rendered with the wrong values."""


class PromptRegistry:
    """Validated templates by task name. Build with `load()`; immutable afterwards."""

    def __init__(self, templates: Iterable[tuple[str, str]]) -> None:
        checked: dict[str, Template] = {}
        for name, text in templates:
            if name in checked:
                raise PromptError(f"prompt template {name!r} is defined twice")
            checked[name] = _checked_template(name, text)
        missing = sorted(set(TASK_PLACEHOLDERS) - set(checked))
        if missing:
            raise PromptError(f"no template for task(s) {missing}")
        self._templates: Mapping[str, Template] = MappingProxyType(checked)

    @classmethod
    def load(cls, override_dir: str | Path | None = None) -> PromptRegistry:
        """Packaged templates, each replaced by `<override_dir>/<task>.txt` when that file exists."""
        packaged = dict(_read_dir_entries(resources.files("driftrag.prompts"), "package"))
        if override_dir is not None:
            directory = Path(override_dir)
            if not directory.is_dir():
                raise PromptError(f"prompt override directory {directory} does not exist")
            packaged.update(_read_dir_entries(directory, str(directory)))
        return cls(sorted(packaged.items()))

    @property
    def names(self) -> list[str]:
        return sorted(self._templates)

    def template(self, name: str) -> str:
        return self._get(name).template

    def render(self, name: str, /, **values: str) -> str:
        template = self._get(name)
        expected = TASK_PLACEHOLDERS[name]
        missing, extra = sorted(expected - set(values)), sorted(set(values) - expected)
        if missing or extra:
            raise PromptError(f"prompt {name!r}: missing values {missing}, unexpected values {extra}")
        return template.substitute(values)

    def _get(self, name: str) -> Template:
        if name not in self._templates:
            raise PromptError(f"unknown prompt {name!r}; known: {self.names}")
        return self._templates[name]


def _read_dir_entries(directory: Traversable, origin: str) -> list[tuple[str, str]]:
    """`(task, text)` for each template file; case-insensitive duplicates and unknown tasks refused."""
    entries: dict[str, tuple[str, str]] = {}
    for item in sorted(directory.iterdir(), key=lambda p: p.name):
        if not item.name.lower().endswith(TEMPLATE_SUFFIX) or not item.is_file():
            continue
        name = item.name[: -len(TEMPLATE_SUFFIX)]
        key = name.lower()
        if key in entries:
            raise PromptError(f"{origin}: duplicate prompt templates {entries[key][0]!r} and {item.name!r}")
        if name not in TASK_PLACEHOLDERS:
            raise PromptError(f"{origin}: unknown prompt template {item.name!r}; known: {sorted(TASK_PLACEHOLDERS)}")
        entries[key] = (item.name, item.read_text(encoding="utf-8"))
    return [(name[: -len(TEMPLATE_SUFFIX)], text) for name, text in entries.values()]


def _checked_template(name: str, text: str) -> Template:
    if name not in TASK_PLACEHOLDERS:
        raise PromptError(f"unknown prompt template {name!r}; known: {sorted(TASK_PLACEHOLDERS)}")
    template = Template(text)
    if not template.is_valid():
        raise PromptError(f"prompt {name!r} has a malformed `$` placeholder (write `$$` for a literal `$`)")
    used = set(template.get_identifiers())
    expected = TASK_PLACEHOLDERS[name]
    if used != expected:
        raise PromptError(
            f"prompt {name!r}: placeholders {sorted(used)} differ from the task's {sorted(expected)} "
            f"(missing {sorted(expected - used)}, unknown {sorted(used - expected)})"
        )
    return template
