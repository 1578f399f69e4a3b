"""The extraction config over HTTP: read, set and clear a kb's config, preview an extraction, draft a config.

Every route needs a `manage` key for the kb: a config changes what ingestion writes, and a preview or a
draft spends model calls.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from driftrag.api.app import API_PREFIX, _errors, _json
from driftrag.api.dependencies import BackendDep, ManageKb
from driftrag.ingestion.config_draft import MAX_DESCRIPTION_CHARS, MAX_LANGUAGE_CHARS, ExtractConfigSuggestion
from driftrag.ingestion.preview import MAX_PREVIEW_CHARS, ExtractionPreview
from driftrag.models.extract_config import MAX_TAGS, ExtractConfig, ExtractConfigStatus, RelationLabel

router = APIRouter(prefix=API_PREFIX)
_TAG = "extraction config"


class PreviewBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_PREVIEW_CHARS, description="The text to extract from.")
    tags: list[RelationLabel] | None = Field(
        default=None, max_length=MAX_TAGS, description="Allowed relationship types, replacing the config's."
    )
    config: ExtractConfig | None = Field(default=None, description="A config to try instead of the kb's own.")


class SuggestBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        min_length=1, max_length=MAX_DESCRIPTION_CHARS, description="The domain and its corpus, in a few sentences."
    )
    language: str | None = Field(
        default=None, max_length=MAX_LANGUAGE_CHARS, description="The example text's language, e.g. French."
    )


@router.get(
    "/knowledge-bases/{kb}/extract-config",
    response_model=ExtractConfigStatus,
    tags=[_TAG],
    summary="The extraction config of a knowledge base, with both switches (manage)",
    responses=_errors(401, 403, 404, 422, 503),
)
async def get_extract_config(kb: ManageKb, backend: BackendDep) -> ExtractConfigStatus:
    """The stored config (the defaults when `stored` is false); `extraction_enabled` is true when both the
    server's global switch (`globally_enabled`, the `graph_extraction` setting) and the config's `enabled`
    are on."""
    await backend.ready()
    return await backend.rag.extract_config(kb)


@router.put(
    "/knowledge-bases/{kb}/extract-config",
    response_model=ExtractConfigStatus,
    tags=[_TAG],
    summary="Set the extraction config of a knowledge base (manage)",
    responses=_errors(401, 403, 422, 503),
)
async def put_extract_config(kb: ManageKb, body: ExtractConfig, backend: BackendDep) -> ExtractConfigStatus:
    """Replace the kb's config (the kb is created if new, so it can be configured before its first
    ingestion). It guides the chunks extracted from now on; chunks extracted already keep theirs. An
    invalid config is a 422 whose `problems` name the schema's fields, and nothing is changed."""
    await backend.ready()
    return await backend.rag.set_extract_config(kb, body)


@router.delete(
    "/knowledge-bases/{kb}/extract-config",
    response_model=ExtractConfigStatus,
    tags=[_TAG],
    summary="Remove the extraction config of a knowledge base: the defaults apply (manage)",
    responses=_errors(401, 403, 404, 422, 503),
)
async def delete_extract_config(kb: ManageKb, backend: BackendDep) -> ExtractConfigStatus:
    await backend.ready()
    return await backend.rag.clear_extract_config(kb)


@router.post(
    "/knowledge-bases/{kb}/extract/preview",
    response_model=ExtractionPreview,
    tags=[_TAG],
    summary="What extraction would write for a text; nothing is stored (manage)",
    responses=_errors(401, 403, 404, 422, 502, 503),
)
async def preview_extraction(kb: ManageKb, body: PreviewBody, backend: BackendDep):
    """The entities and relationships the server's extraction (offline, or its model) finds in `text`
    (at most 5,000 characters), with `config` or the kb's own, `tags` replacing its relation labels.
    Nothing is written; `notes` says where an ingestion would differ (a switch off, kb-wide steps)."""
    await backend.ready()
    return _json(await backend.rag.preview_extraction(kb, body.text, config=body.config, tags=body.tags))


@router.post(
    "/knowledge-bases/{kb}/extract/suggest",
    response_model=ExtractConfigSuggestion,
    tags=[_TAG],
    summary="A model's draft of an extraction config for a domain (manage)",
    responses=_errors(401, 403, 409, 422, 502),
)
async def suggest_extract_config(kb: ManageKb, body: SuggestBody, backend: BackendDep):
    """Example text, relation labels, example nodes and relations for the domain, drafted by the server's
    model, to review before `PUT …/extract-config`; nothing is read or stored (the kb need not exist
    yet). An offline server answers 409 `model_required`."""
    return _json(await backend.rag.suggest_extract_config(body.description, language=body.language))
