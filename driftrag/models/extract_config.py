"""The per-knowledge-base extraction config: what it holds, its bounds, and how a JSON file of one is read.

Two switches decide whether a kb's chunks go to extraction: the global `graph_extraction` setting
(`DRIFTRAG_GRAPH_EXTRACTION`) and the kb's own `enabled`; both must be on. The other fields guide the
extraction prompt (`driftrag.ingestion.extraction.build_kb_guidance`). Bounds keep every prompt that
carries the config within a model's context and a hostile file from growing the graph's kb node.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from driftrag.errors import InvalidExtractConfigError
from driftrag.models.problems import problems_of

MAX_TEXT_CHARS = 5000
MAX_INSTRUCTIONS_CHARS = 4000
MAX_TAGS = 100
MAX_TAG_CHARS = 64
MAX_EXAMPLES = 50
MAX_NAME_CHARS = 200
MAX_ATTRIBUTES = 20
MAX_ATTRIBUTE_CHARS = 500
MAX_FILE_BYTES = 1024 * 1024
_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain at least one non-whitespace character")
    return value


def _type_like(value: str) -> str:
    # A relationship type is stored in upper snake case ASCII (`normalise_type`): a label must keep
    # something of it, or every relationship it allows would be stored as RELATED_TO.
    if not _ASCII_WORD.search(unicodedata.normalize("NFKD", value)):
        raise ValueError("must contain a Latin letter or a digit (relationship types are stored in ASCII)")
    return value


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(_not_blank)]
RelationLabel = Annotated[
    str, Field(min_length=1, max_length=MAX_TAG_CHARS), AfterValidator(_not_blank), AfterValidator(_type_like)
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExampleNode(_Model):
    name: Name
    attributes: list[Annotated[str, Field(max_length=MAX_ATTRIBUTE_CHARS)]] = Field(
        default_factory=list, max_length=MAX_ATTRIBUTES, description="What the text says of it (short phrases)."
    )


class ExampleRelation(_Model):
    node1: Name
    node2: Name
    type: RelationLabel


class ExtractConfig(_Model):
    """How one kb's chunks are extracted. Every field is optional; `{}` is the default config."""

    enabled: bool = Field(
        default=True,
        description="The kb's extraction switch; off, its new chunks are stored and embedded but not extracted "
        "(they are extracted by the first ingestion run after it is on again, as is the global switch).",
    )
    text: str = Field(
        default="", max_length=MAX_TEXT_CHARS, description="Few-shot example text, in the corpus's language."
    )
    tags: list[RelationLabel] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="Allowed relationship types (`works for` is stored as WORKS_FOR); a model's type outside "
        "them is stored as RELATED_TO. Empty: any type.",
    )
    nodes: list[ExampleNode] = Field(
        default_factory=list, max_length=MAX_EXAMPLES, description="Example entities of `text`."
    )
    relations: list[ExampleRelation] = Field(
        default_factory=list, max_length=MAX_EXAMPLES, description="Example relationships of `text`."
    )
    custom_instructions: str = Field(
        default="",
        max_length=MAX_INSTRUCTIONS_CHARS,
        description="Domain guidance added to the extraction prompt; the output protocol always wins over it.",
    )


class ExtractConfigStatus(_Model):
    """A kb's extraction config as `kb config show` and `GET …/extract-config` give it, with both switches."""

    kb: str
    config: ExtractConfig = Field(description="The stored config, or the defaults when none is stored.")
    stored: bool = Field(description="Whether the kb has a config of its own (else the defaults apply).")
    globally_enabled: bool = Field(description="The global switch: the `graph_extraction` setting.")
    extraction_enabled: bool = Field(description="Both switches on: new chunks of the kb are extracted.")


def parse_extract_config(data: bytes | str, source: str = "extract config") -> ExtractConfig:
    """An `ExtractConfig` from JSON, or `InvalidExtractConfigError` with one line naming `source` and the
    schema fields at fault (never the offending values or unknown keys, which may be hostile)."""
    if isinstance(data, bytes):
        if len(data) > MAX_FILE_BYTES:
            raise InvalidExtractConfigError(f"{source}: larger than {MAX_FILE_BYTES // 1024} KiB")
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidExtractConfigError(f"{source}: not UTF-8 text") from None
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise InvalidExtractConfigError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise InvalidExtractConfigError(f"{source}: nested too deeply to be an extract config") from None
    if not isinstance(value, dict):
        raise InvalidExtractConfigError(f"{source}: must be a JSON object with the fields of an extract config")
    try:
        return ExtractConfig.model_validate(value)
    except ValidationError as exc:
        problems = problems_of(exc.errors())
        shown = "; ".join(f"{where or '(top level)'}: {message}" for where, message in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise InvalidExtractConfigError(f"{source}: invalid extract config: {shown}{more}") from None
