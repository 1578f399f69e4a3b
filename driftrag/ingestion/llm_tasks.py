"""LLM implementations of the ingestion tasks, on top of any `ChatModel`.

Transport errors are retried by the model client. Here, an answer that cannot be parsed is re-asked
with the parse error appended to the conversation (a changed request, so a response cache cannot
replay the bad answer), up to `max_attempts` calls in total.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from driftrag.errors import ModelError
from driftrag.ingestion.extraction import (
    CHUNK_CLOSE,
    CHUNK_OPEN,
    InvalidModelOutput,
    build_extraction_messages,
    json_schema,
    parse_extraction,
    skipped_outcome,
)
from driftrag.ingestion.merge import normalise_name
from driftrag.ingestion.models import (
    Chunk,
    CommunityContext,
    CommunityReport,
    ExtractConfig,
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionOutcome,
    ExtractionPayload,
    ReportPayload,
)
from driftrag.ingestion.reports import failed_report, parse_report
from driftrag.ingestion.tasks import ChatModel
from driftrag.prompts.registry import PromptRegistry

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_MAX_GLEANINGS = 1


def _turn(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


class LLMGraphExtractor:
    """`GraphExtractor` asking a chat model, with bounded re-asks and gleaning rounds."""

    def __init__(
        self,
        chat: ChatModel,
        prompts: PromptRegistry,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_gleanings: int = DEFAULT_MAX_GLEANINGS,
        max_tokens: int | None = 4096,
    ) -> None:
        self._chat = chat
        self._prompts = prompts
        self._max_attempts = max(1, max_attempts)
        self._max_gleanings = max(0, max_gleanings)
        self._max_tokens = max_tokens

    async def extract(self, chunk: Chunk, config: ExtractConfig) -> ExtractionOutcome:
        skipped = skipped_outcome(chunk, config)
        if skipped is not None:
            return skipped
        messages = build_extraction_messages(self._prompts, chunk, config)
        raw: str | None = None
        error = ""
        for attempt in range(1, self._max_attempts + 1):
            try:
                raw = (await self._chat.chat(messages, json_mode=True, max_tokens=self._max_tokens)).text
                payload, warnings = parse_extraction(raw, config.tags)
            except InvalidModelOutput as exc:
                error = str(exc)
                messages = [*messages, _turn("assistant", raw or ""), _turn("user", self._repair(error))]
                continue
            except ModelError as exc:
                return self._failed(chunk, f"model call failed: {exc}", raw, attempt)
            outcome = ExtractionOutcome(
                chunk_id=chunk.id,
                entities=payload.entities,
                relationships=payload.relationships,
                raw_output=raw,
                attempts=attempt,
                warnings=warnings,
            )
            return await self._glean(outcome, [*messages, _turn("assistant", raw)], config.tags)
        return self._failed(
            chunk, f"invalid output after {self._max_attempts} attempt(s): {error}", raw, self._max_attempts
        )

    def _repair(self, error: str) -> str:
        return self._prompts.render("repair_json", error=error, schema=json_schema(ExtractionPayload))

    @staticmethod
    def _failed(chunk: Chunk, error: str, raw: str | None, attempts: int) -> ExtractionOutcome:
        return ExtractionOutcome(chunk_id=chunk.id, failed=True, error=error, raw_output=raw, attempts=attempts)

    async def _glean(
        self, outcome: ExtractionOutcome, conversation: list[dict[str, str]], tags: Sequence[str]
    ) -> ExtractionOutcome:
        """Re-ask for missed items; stop at the bound or as soon as a round adds nothing new."""
        entities: list[ExtractedEntity] = list(outcome.entities)
        relationships: list[ExtractedRelationship] = list(outcome.relationships)
        seen_entities = {normalise_name(e.name) for e in entities}
        seen_relationships = {_relationship_key(r) for r in relationships}
        warnings = list(outcome.warnings)
        rounds = 0
        glean = self._prompts.render("glean_graph", chunk_open=CHUNK_OPEN, chunk_close=CHUNK_CLOSE)
        for _ in range(self._max_gleanings):
            conversation = [*conversation, _turn("user", glean)]
            rounds += 1
            try:
                raw = (await self._chat.chat(conversation, json_mode=True, max_tokens=self._max_tokens)).text
                payload, round_warnings = parse_extraction(raw, tags)
            except ModelError as exc:
                # The first answer stands; a failed gleaning round only loses the extras.
                warnings.append(f"gleaning round {rounds} unusable: {exc}")
                break
            new_entities = [e for e in payload.entities if normalise_name(e.name) not in seen_entities]
            new_relationships = [r for r in payload.relationships if _relationship_key(r) not in seen_relationships]
            if not new_entities and not new_relationships:
                break
            warnings += [f"gleaning round {rounds}: {w}" for w in round_warnings]
            entities += new_entities
            relationships += new_relationships
            seen_entities |= {normalise_name(e.name) for e in new_entities}
            seen_relationships |= {_relationship_key(r) for r in new_relationships}
            conversation = [*conversation, _turn("assistant", raw)]
        return outcome.model_copy(
            update={
                "entities": entities,
                "relationships": relationships,
                "gleaning_rounds": rounds,
                "warnings": warnings,
            }
        )


def _relationship_key(rel: ExtractedRelationship) -> tuple[str, str, str]:
    return normalise_name(rel.source), normalise_name(rel.target), rel.type


class LLMDescriptionSummarizer:
    """`DescriptionSummarizer` asking a chat model for one consolidated description."""

    def __init__(self, chat: ChatModel, prompts: PromptRegistry, *, max_words: int = 150, max_tokens: int | None = 500):
        self._chat = chat
        self._prompts = prompts
        self._max_words = max_words
        self._max_tokens = max_tokens

    async def summarize(self, name: str, descriptions: list[str]) -> str:
        distinct = list(dict.fromkeys(d.strip() for d in descriptions if d.strip()))
        if len(distinct) < 2:
            return distinct[0] if distinct else ""
        prompt = self._prompts.render(
            "summarize_descriptions",
            name=name,
            descriptions="\n".join(f"- {d}" for d in distinct),
            max_words=str(self._max_words),
        )
        try:
            text = (await self._chat.chat([_turn("user", prompt)], max_tokens=self._max_tokens)).text.strip()
        except ModelError as exc:
            # The model failed after its retries: one summary is not worth the whole run.
            log.warning("summary of %r kept as its descriptions: %s", name, exc)
            text = ""
        # An empty answer must not erase what we know: fall back to the descriptions themselves.
        return text or " ".join(distinct)


class LLMCommunityReporter:
    """`CommunityReporter` asking a chat model; without a valid report after the retries, a `failed` one
    (rating 0, so DRIFT does not prime with it) that the next run asks for again."""

    def __init__(
        self,
        chat: ChatModel,
        prompts: PromptRegistry,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_words: int = 1500,
        max_tokens: int | None = 2000,
    ) -> None:
        self._chat = chat
        self._prompts = prompts
        self._max_attempts = max(1, max_attempts)
        self._max_words = max_words
        self._max_tokens = max_tokens

    async def report(self, community: CommunityContext) -> CommunityReport:
        schema = json_schema(ReportPayload)
        prompt = self._prompts.render(
            "community_report", schema=schema, context=community.text, max_words=str(self._max_words)
        )
        messages = [_turn("user", prompt)]
        raw, error = "", ""
        for _ in range(self._max_attempts):
            try:
                raw = (await self._chat.chat(messages, json_mode=True, max_tokens=self._max_tokens)).text
            except ModelError as exc:  # the transport failed after its retries: no point in re-asking here
                error = str(exc)
                break
            try:
                return parse_report(raw, community)
            except InvalidModelOutput as exc:
                error = str(exc)
                repair = self._prompts.render("repair_json", error=error, schema=schema)
                messages = [*messages, _turn("assistant", raw), _turn("user", repair)]
        log.warning("no valid report for %s: %s; last output: %r", community.community.id, error, raw[:500])
        return failed_report(community, error)
