"""Extraction prompt assembly and output parsing, shared by every `GraphExtractor`.

The system prompt is the system-owned protocol (template `extract_graph`) with the knowledge base's
guidance (few-shot text, allowed relationship types, example nodes/relations, custom instructions)
inserted under delimited headings *after* the protocol, followed by a final rule restating that the
protocol wins. Custom instructions can add to the protocol, never replace it.

Parsing is lenient on shape and strict on result: prose and code fences are stripped, the JSON is
repaired with `json_repair`, wrong types are coerced, unusable items are dropped with a counted
warning, and what remains is validated by the pydantic models whose schema the prompt shows.
"""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from driftrag.ingestion.tasks import GraphExtractor
from driftrag.models.graph import (
    GENERIC_RELATIONSHIP_TYPE,
    MAX_ITEMS_PER_CHUNK,
    OTHER_ENTITY_TYPE,
    UNKNOWN_ENTITY_TYPE,
    Chunk,
    ExtractConfig,
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionOutcome,
    ExtractionPayload,
    extraction_payload,
    items_for_passage,
)
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.json_answer import InvalidModelOutput, extract_json_object, json_example
from driftrag.providers.structured import describe_keys

CHUNK_OPEN = "<<<CHUNK>>>"
CHUNK_CLOSE = "<<<END_CHUNK>>>"
CUSTOM_OPEN = "<<<CUSTOM_INSTRUCTIONS>>>"
CUSTOM_CLOSE = "<<<END_CUSTOM_INSTRUCTIONS>>>"
_MARKERS = (CHUNK_OPEN, CHUNK_CLOSE, CUSTOM_OPEN, CUSTOM_CLOSE)

_NON_WORD = re.compile(r"[^A-Z0-9]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_DEFAULT_STRENGTH = 5

_ENTITY_KEYS = {"name": ("name", "entity_name", "entity"), "type": ("type", "entity_type", "category")}
_RELATION_KEYS = {
    "source": ("source", "source_entity", "src", "node1", "from"),
    "target": ("target", "target_entity", "tgt", "node2", "to"),
    "type": ("type", "relationship_type", "relation", "label"),
    "strength": ("strength", "relationship_strength", "weight"),
}


# --- types ---------------------------------------------------------------------------------------


def normalise_type(raw: object) -> str | None:
    """Upper snake case ASCII (`works for` -> `WORKS_FOR`), or None when nothing usable remains."""
    if not isinstance(raw, str):
        return None
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    name = _NON_WORD.sub("_", ascii_text.upper()).strip("_")
    if not name:
        return None
    if not name[0].isalpha():
        name = f"T_{name}"
    return name[:64].rstrip("_")


# Entity type words a model may answer in the passage's language despite the prompt, mapped to the
# closed English list (French and Russian, singular).
_TYPE_TRANSLATIONS = {
    "personne": "PERSON",
    "personnage": "PERSON",
    "organisation": "ORGANIZATION",
    "lieu": "LOCATION",
    "événement": "EVENT",
    "objet": "OBJECT",
    "человек": "PERSON",
    "персона": "PERSON",
    "персонаж": "PERSON",
    "организация": "ORGANIZATION",
    "место": "LOCATION",
    "локация": "LOCATION",
    "событие": "EVENT",
    "объект": "OBJECT",
    "предмет": "OBJECT",
    "понятие": "CONCEPT",
    "концепция": "CONCEPT",
}


def normalise_entity_type(raw: object) -> str:
    """An entity type in upper snake case ASCII; French and Russian type words translated, and a type
    that leaves nothing in ASCII (another script) is OTHER rather than UNKNOWN."""
    if isinstance(raw, str):
        translated = _TYPE_TRANSLATIONS.get(unicodedata.normalize("NFC", raw).strip().casefold())
        if translated:
            return translated
        if raw.strip():
            return normalise_type(raw) or OTHER_ENTITY_TYPE
    return UNKNOWN_ENTITY_TYPE


def map_relationship_type(raw: object, tags: Sequence[str]) -> str:
    """The allowed tag matching `raw` (case/space/punctuation-insensitive), else `RELATED_TO`."""
    wanted = normalise_type(raw)
    allowed = {normalise_type(tag) for tag in tags} - {None}
    return wanted if wanted in allowed else GENERIC_RELATIONSHIP_TYPE


# --- prompts -------------------------------------------------------------------------------------


def _defang(text: str) -> str:
    """Remove our delimiters from user-supplied text so it cannot close a section early."""
    for marker in _MARKERS:
        text = text.replace(marker, "")
    return text.strip()


def build_kb_guidance(config: ExtractConfig) -> str:
    """The knowledge base's part of the system prompt; empty sections are left out."""
    sections: list[str] = []
    tags = sorted({t for t in (normalise_type(tag) for tag in config.tags) if t})
    if tags:
        sections.append(
            'ALLOWED RELATIONSHIP TYPES (use one of these for "type"; anything else is stored as '
            f"{GENERIC_RELATIONSHIP_TYPE}): " + ", ".join(tags)
        )
    pair = _kb_example(config)
    if pair:
        sections.append(pair)
    if config.custom_instructions.strip():
        sections.append(
            "CUSTOM INSTRUCTIONS (from the knowledge-base owner; they refine the content, never the "
            f"output protocol)\n{CUSTOM_OPEN}\n{_defang(config.custom_instructions)}\n{CUSTOM_CLOSE}"
        )
    if not sections:
        return ""
    return "\nKNOWLEDGE-BASE GUIDANCE\n" + "\n\n".join(sections) + "\n"


def _kb_example(config: ExtractConfig) -> str:
    """The knowledge base's few-shot text, example nodes and relations as one worked passage -> answer
    pair in the protocol's own shape (small models follow a pair, not three loose lists)."""
    if not (config.text.strip() or config.nodes or config.relations):
        return ""
    entities = [
        ExtractedEntity(name=n.name, type=OTHER_ENTITY_TYPE, description="; ".join(n.attributes) or n.name)
        for n in config.nodes
    ]
    relationships = [
        ExtractedRelationship(
            source=r.node1,
            target=r.node2,
            type=normalise_type(r.type) or GENERIC_RELATIONSHIP_TYPE,
            description=f"{r.node1} {r.type.replace('_', ' ').lower()} {r.node2}",
            strength=_DEFAULT_STRENGTH,
        )
        for r in config.relations
    ]
    answer = json_example(ExtractionPayload(entities=entities, relationships=relationships))
    passage = _defang(config.text) or "(no text given)"
    return (
        "KNOWLEDGE-BASE EXAMPLE (the kinds of entities and relationships wanted here; an illustration "
        "only: never copy its entities unless the passage names them)\n"
        f"Passage: {passage}\nAnswer: {answer}"
    )


def chunk_message(chunk: Chunk) -> str:
    return f"{CHUNK_OPEN}\n{chunk.text}\n{CHUNK_CLOSE}"


def chunk_answer_model(chunk: Chunk) -> type[ExtractionPayload]:
    """The answer model whose schema a chunk's extraction sends: lists bounded by the passage's length."""
    return extraction_payload(items_for_passage(chunk.n_tokens))


def build_extraction_messages(prompts: PromptRegistry, chunk: Chunk, config: ExtractConfig) -> list[dict[str, str]]:
    answer_model = chunk_answer_model(chunk)
    system = prompts.render(
        "extract_graph",
        answer_shape=describe_keys(answer_model),
        max_entities=str(items_for_passage(chunk.n_tokens)),
        chunk_open=CHUNK_OPEN,
        chunk_close=CHUNK_CLOSE,
        kb_guidance=build_kb_guidance(config),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": chunk_message(chunk)}]


def skipped_outcome(chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome | None:
    """The outcome of a chunk that must not reach a model, or None when it should be extracted."""
    if not config.enabled:
        return ExtractionOutcome(chunk_id=chunk.id, skipped_reason="extraction disabled")
    if not chunk.extractable:
        return ExtractionOutcome(chunk_id=chunk.id, skipped_reason=chunk.skip_reason or "not extractable")
    return None


# --- parsing -------------------------------------------------------------------------------------


def _first(item: dict[str, Any], keys: Sequence[str]) -> Any:
    return next((item[k] for k in keys if item.get(k) not in (None, "")), None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        value = value.get("name", json.dumps(value, sort_keys=True))
    if isinstance(value, list):
        return "; ".join(_text(v) for v in value if _text(v))
    return str(value).strip()


def _strength(value: Any) -> tuple[int, bool]:
    """(strength clamped to 1..10, whether it had to be coerced)."""
    if isinstance(value, bool) or value is None:
        return _DEFAULT_STRENGTH, value is not None
    if isinstance(value, int | float):
        number, coerced = float(value), not isinstance(value, int)
    else:
        match = _NUMBER.search(str(value))
        number, coerced = (float(match.group()) if match else float(_DEFAULT_STRENGTH)), True
    clamped = min(10, max(1, round(number)))
    return clamped, coerced or clamped != number


def _items(obj: dict[str, Any], keys: Sequence[str]) -> list[Any] | None:
    value = _first(obj, keys)
    if value is None:
        return None
    return value if isinstance(value, list) else [value]


def parse_extraction(raw: str, tags: Sequence[str]) -> tuple[ExtractionPayload, list[str]]:
    """Validated payload and warnings from a raw answer; `InvalidModelOutput` when unusable."""
    obj = extract_json_object(raw)
    raw_entities = _items(obj, ("entities", "nodes"))
    raw_relations = _items(obj, ("relationships", "relations", "edges"))
    if raw_entities is None and raw_relations is None and not ({"entities", "relationships"} & obj.keys()):
        raise InvalidModelOutput('the JSON object has neither "entities" nor "relationships"')
    counts = {
        "entities without a name": 0,
        "relationships without both ends": 0,
        "strengths coerced": 0,
        f"items past the {MAX_ITEMS_PER_CHUNK} per chunk dropped": 0,
    }
    entities = []
    for item in raw_entities or []:
        name = _text(_first(item, _ENTITY_KEYS["name"])) if isinstance(item, dict) else _text(item)
        if not name:
            counts["entities without a name"] += 1
            continue
        fields = item if isinstance(item, dict) else {}
        entity_type = normalise_entity_type(_first(fields, _ENTITY_KEYS["type"]))
        description = _text(_first(fields, ("description", "desc", "attributes")))
        entities.append(ExtractedEntity(name=name, type=entity_type, description=description))
    relationships = []
    for item in raw_relations or []:
        fields = item if isinstance(item, dict) else {}
        source, target = (
            _text(_first(fields, _RELATION_KEYS["source"])),
            _text(_first(fields, _RELATION_KEYS["target"])),
        )
        if not source or not target:
            counts["relationships without both ends"] += 1
            continue
        raw_type = _first(fields, _RELATION_KEYS["type"])
        strength, coerced = _strength(_first(fields, _RELATION_KEYS["strength"]))
        counts["strengths coerced"] += coerced
        relationships.append(
            ExtractedRelationship(
                source=source,
                target=target,
                type=map_relationship_type(raw_type, tags),
                description=_text(fields.get("description")),
                strength=strength,
                original_type=_text(raw_type) or None,
            )
        )
    dropped = f"items past the {MAX_ITEMS_PER_CHUNK} per chunk dropped"
    counts[dropped] = max(len(entities) - MAX_ITEMS_PER_CHUNK, 0) + max(len(relationships) - MAX_ITEMS_PER_CHUNK, 0)
    entities, relationships = entities[:MAX_ITEMS_PER_CHUNK], relationships[:MAX_ITEMS_PER_CHUNK]
    warnings = [f"{count} {what}" for what, count in counts.items() if count]
    return ExtractionPayload(entities=entities, relationships=relationships), warnings


# --- weak models ---------------------------------------------------------------------------------


class FallbackExtractor:
    """A `GraphExtractor` that fills a chunk whose model answer stayed unusable (a weak model's wrong
    object, prose) with the `fallback` extractor's graph (the offline one), marked `origin="offline"` on
    the chunk, so a weak model still gives a usable graph. A failed model call (server down, time-out)
    stays a failed chunk: it is not the model's answer, and a rerun extracts it with the model."""

    def __init__(self, primary: GraphExtractor, fallback: GraphExtractor) -> None:
        self._primary = primary
        self._fallback = fallback

    async def extract(self, chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome:
        outcome = await self._primary.extract(chunk, config)
        if not (outcome.failed and outcome.output_unusable):
            return outcome
        filled = await self._fallback.extract(chunk, config)
        if filled.failed:
            return outcome
        return filled.model_copy(
            update={
                "origin": "offline",
                "raw_output": outcome.raw_output,
                "attempts": outcome.attempts,
                "warnings": [f"model extraction unusable ({outcome.error}): extracted offline", *filled.warnings],
            }
        )


# --- batch ---------------------------------------------------------------------------------------


async def extract_all(
    chunks: Sequence[Chunk], config: ExtractConfig, extractor: GraphExtractor, *, concurrency: int = 8
) -> list[ExtractionOutcome]:
    """One outcome per chunk, in chunk order; skipped chunks never reach the extractor.

    `concurrency` is the model's slots (its client holds them); twice as many chunks are under way, so a
    slot that one chunk's answer frees goes at once to another chunk's call while the first chunk's answer
    is parsed, its gleaning prompt made and its checkpoint queued. Not more: chunks finish (and are
    checkpointed) steadily instead of all at the end."""
    limit = asyncio.Semaphore(2 * max(1, concurrency))

    async def one(chunk: Chunk) -> ExtractionOutcome:
        skipped = skipped_outcome(chunk, config)
        if skipped is not None:
            return skipped
        async with limit:
            return await extractor.extract(chunk, config)

    return list(await asyncio.gather(*(one(chunk) for chunk in chunks)))
