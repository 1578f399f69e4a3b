"""A model's draft of an extraction config for a domain: example text, relation labels, example nodes
and relations (template `suggest_extract_config`).

The answer is parsed as leniently as extraction's: think blocks, fences and prose removed, the JSON
repaired, keys looked up under the names models use for them, a comma-separated string taken as a
list, and every item that does not fit the config's bounds dropped with a counted warning. What
remains is an `ExtractConfig` a person reviews before `kb config set` stores it.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driftrag.ingestion.extraction import normalise_type
from driftrag.ingestion.loading import InputError
from driftrag.models.bounds import Cap
from driftrag.models.extract_config import (
    MAX_EXAMPLES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    ExampleNode,
    ExampleRelation,
    ExtractConfig,
)
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel
from driftrag.providers.json_answer import InvalidModelOutput, ask_json, extract_json_object
from driftrag.providers.structured import describe_keys

MAX_DESCRIPTION_CHARS = 2000
MAX_LANGUAGE_CHARS = 40
DRAFT_TAGS = 12
DOMAIN_OPEN = "<<<DOMAIN>>>"
DOMAIN_CLOSE = "<<<END_DOMAIN>>>"
_SPLIT = re.compile(r"[,;\n]+")
_NOT_LANGUAGE = re.compile(r"[^\w\s-]|\d|_")
_KEYS = {
    "text": ("text", "example_text", "sample_text", "example", "passage"),
    "tags": ("tags", "labels", "relation_labels", "relationship_types", "relation_types"),
    "nodes": ("nodes", "entities", "example_nodes"),
    "relations": ("relations", "relationships", "edges", "example_relations"),
    "name": ("name", "entity", "label", "title"),
    "attributes": ("attributes", "description", "properties", "facts"),
    "node1": ("node1", "source", "from", "subject", "head"),
    "node2": ("node2", "target", "to", "object", "tail"),
    "type": ("type", "label", "relation", "tag", "predicate"),
}


class ConfigDraftPayload(BaseModel):
    """The JSON protocol of the draft (schema sent, keys described in the prompt)."""

    model_config = ConfigDict(extra="forbid")

    text: Annotated[str, Cap(MAX_TEXT_CHARS)]
    tags: Annotated[list[Annotated[str, Cap(MAX_TAG_CHARS)]], Cap(MAX_TAGS)]
    nodes: Annotated[list[ExampleNode], Cap(MAX_EXAMPLES)]
    relations: Annotated[list[ExampleRelation], Cap(MAX_EXAMPLES)]


class ExtractConfigSuggestion(BaseModel):
    """A drafted config to review, and what parsing had to drop or fix."""

    model_config = ConfigDict(extra="forbid")

    config: ExtractConfig
    warnings: list[str] = Field(default_factory=list)
    attempts: int = Field(ge=1, description="Model calls spent (re-asks included).")


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((item[key] for key in keys if item.get(key) not in (None, "", [])), None)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in _SPLIT.split(value) if part.strip()]
    return value if isinstance(value, list) else [value]


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_as_text(v) for v in value if _as_text(v))
    if isinstance(value, dict):
        return _as_text(_first(value, _KEYS["text"]))
    return "" if value is None else str(value).strip()


def _tag(value: Any) -> str | None:
    if isinstance(value, dict):
        value = _first(value, _KEYS["type"]) or _first(value, _KEYS["name"])
    return normalise_type(value) if isinstance(value, str) else None


def _node(value: Any) -> ExampleNode:
    if isinstance(value, str):
        return ExampleNode(name=value.strip())
    fields = value if isinstance(value, dict) else {}
    attributes = [_as_text(a) for a in _as_list(_first(fields, _KEYS["attributes"]))]
    return ExampleNode(name=_as_text(_first(fields, _KEYS["name"])), attributes=[a for a in attributes if a])


def _relation(value: Any) -> ExampleRelation:
    fields = value if isinstance(value, dict) else {}
    return ExampleRelation(
        node1=_as_text(_first(fields, _KEYS["node1"])),
        node2=_as_text(_first(fields, _KEYS["node2"])),
        type=normalise_type(_as_text(_first(fields, _KEYS["type"]))) or "",
    )


def parse_draft(raw: str) -> tuple[ExtractConfig, list[str]]:
    """The config a draft answer holds, and warnings; `InvalidModelOutput` without text or labels."""
    obj = extract_json_object(raw)
    dropped: Counter[str] = Counter()
    text = _as_text(_first(obj, _KEYS["text"]))
    if len(text) > MAX_TEXT_CHARS:
        text, dropped["example text cut to its limit"] = text[:MAX_TEXT_CHARS], 1
    tags: list[str] = []
    for value in _as_list(_first(obj, _KEYS["tags"])):
        tag = _tag(value)
        if tag is None:
            dropped["labels without a Latin letter or digit"] += 1
        elif tag not in tags:
            tags.append(tag)
    nodes, relations = [], []
    for value in _as_list(_first(obj, _KEYS["nodes"])):
        try:
            nodes.append(_node(value))
        except ValidationError:
            dropped["example nodes without a usable name"] += 1
    for value in _as_list(_first(obj, _KEYS["relations"])):
        try:
            relation = _relation(value)
        except ValidationError:
            dropped["example relations without both ends and a type"] += 1
            continue
        relations.append(relation)
        if relation.type not in tags:
            tags.append(relation.type)
            dropped["relation types added to the labels"] += 1
    if not text and not tags:
        raise InvalidModelOutput('the JSON object has neither an example "text" nor relation "tags"')
    for what, items, bound in (
        ("labels", tags, MAX_TAGS),
        ("nodes", nodes, MAX_EXAMPLES),
        ("relations", relations, MAX_EXAMPLES),
    ):
        if len(items) > bound:
            dropped[f"{what} past the limit of {bound} dropped"] += len(items) - bound
            del items[bound:]
    config = ExtractConfig(text=text, tags=tags, nodes=nodes, relations=relations)
    return config, [f"{count} {what}" for what, count in dropped.items()]


def _language(language: str | None) -> str:
    """A language name as the prompt may show it: letters, spaces and hyphens, bounded."""
    cleaned = " ".join(_NOT_LANGUAGE.sub(" ", language or "").split())[:MAX_LANGUAGE_CHARS]
    return cleaned or "the language of the domain description"


class LLMConfigDrafter:
    """Drafts an `ExtractConfig` for a domain description with a chat model."""

    def __init__(self, chat: ChatModel, prompts: PromptRegistry, *, max_attempts: int = 2) -> None:
        self._chat = chat
        self._prompts = prompts
        self._max_attempts = max(1, max_attempts)

    async def draft(self, description: str, *, language: str | None = None) -> ExtractConfigSuggestion:
        """`InputError` for a blank description or one over `MAX_DESCRIPTION_CHARS`; `ModelError` when the
        model fails or its answer stays unusable after the re-ask."""
        if not description.strip():
            raise InputError("the domain description is empty")
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise InputError(
                f"the domain description has {len(description)} characters; at most {MAX_DESCRIPTION_CHARS}"
            )
        prompt = self._prompts.render(
            "suggest_extract_config",
            answer_shape=describe_keys(ConfigDraftPayload),
            description=description.replace(DOMAIN_OPEN, "").replace(DOMAIN_CLOSE, "").strip(),
            language=_language(language),
            max_tags=str(DRAFT_TAGS),
            domain_open=DOMAIN_OPEN,
            domain_close=DOMAIN_CLOSE,
        )
        answer = await ask_json(
            self._chat,
            self._prompts,
            prompt,
            parse_draft,
            ConfigDraftPayload,
            max_tokens=2000,
            attempts=self._max_attempts,
        )
        config, warnings = answer.unwrap("extract config draft")
        return ExtractConfigSuggestion(config=config, warnings=warnings, attempts=answer.attempts)
