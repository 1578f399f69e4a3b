"""LLM implementations of the ingestion tasks, on top of any `ChatModel`.

Transport errors are retried by the model client. An answer that cannot be parsed is re-asked by the
one JSON-answer helper (`driftrag.providers.json_answer.ask_json`), up to `max_attempts` calls in total.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from driftrag.errors import ModelError
from driftrag.ingestion.deps import IngestionTasks
from driftrag.ingestion.extraction import (
    CHUNK_CLOSE,
    CHUNK_OPEN,
    build_extraction_messages,
    chunk_answer_model,
    parse_extraction,
    skipped_outcome,
)
from driftrag.ingestion.merge import normalise_name
from driftrag.ingestion.reports import failed_report, parse_report
from driftrag.models.graph import (
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
from driftrag.prompts.examples import example_names_in
from driftrag.prompts.registry import PromptRegistry
from driftrag.providers.chat import ChatModel, turn
from driftrag.providers.json_answer import InvalidModelOutput, ask_json
from driftrag.providers.structured import describe_keys
from driftrag.providers.tokens import count_tokens, words_within
from driftrag.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_MAX_GLEANINGS = 1
# An extraction's output cap grows with its chunk (`extraction_cap`): a base for the JSON's frame and short
# passages, and twice the chunk's tokens.
EXTRACTION_TOKENS_BASE = 256
EXTRACTION_TOKENS_PER_CHUNK_TOKEN = 2


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
        max_tokens = extraction_cap(chunk, self._max_tokens)
        answer = await ask_json(
            self._chat,
            self._prompts,
            messages,
            lambda raw: parse_extraction(raw, config.tags),
            chunk_answer_model(chunk),
            max_tokens=max_tokens,
            attempts=self._max_attempts,
        )
        if answer.value is None:
            failed = self._failed(chunk, answer.error or "no answer", answer.raw, answer.attempts)
            return failed.model_copy(update={"output_unusable": answer.failure is None})
        payload, warnings = answer.value
        payload, copied = _without_example(payload, chunk.text)
        if copied and not payload.entities:
            # Nothing but the prompt's worked example: as unusable as no JSON (the offline fill-in may take it).
            failed = self._failed(chunk, "the answer copies the prompt's example", answer.raw, answer.attempts)
            return failed.model_copy(update={"output_unusable": True})
        if copied:
            warnings = [*warnings, f"{copied} entities copied from the prompt's example dropped"]
        outcome = ExtractionOutcome(
            chunk_id=chunk.id,
            entities=payload.entities,
            relationships=payload.relationships,
            raw_output=answer.raw,
            attempts=answer.attempts,
            warnings=warnings,
        )
        return await self._glean(outcome, answer.conversation, config.tags, max_tokens, chunk_answer_model(chunk))

    @staticmethod
    def _failed(chunk: Chunk, error: str, raw: str | None, attempts: int) -> ExtractionOutcome:
        return ExtractionOutcome(chunk_id=chunk.id, failed=True, error=error, raw_output=raw, attempts=attempts)

    async def _glean(
        self,
        outcome: ExtractionOutcome,
        conversation: list[dict[str, str]],
        tags: Sequence[str],
        max_tokens: int | None,
        answer_model: type[ExtractionPayload],
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
            conversation = [*conversation, turn("user", glean)]
            rounds += 1
            try:
                reply = await self._chat.chat(conversation, json_mode=True, max_tokens=max_tokens, schema=answer_model)
                raw = reply.text
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
            conversation = [*conversation, turn("assistant", raw)]
        return outcome.model_copy(
            update={
                "entities": entities,
                "relationships": relationships,
                "gleaning_rounds": rounds,
                "warnings": warnings,
            }
        )


def extraction_cap(chunk: Chunk, cap: int | None) -> int | None:
    """The output cap of one chunk's extraction: the setting's, or less for a short chunk. An answer that
    restates a passage as entities and relationships needs about twice the passage's tokens; a model that
    loops inside its answer (one phrase over and over, the same entity again) is cut there, not at a cap
    sized for the longest chunk, and the cut answer is repaired and kept."""
    proportional = EXTRACTION_TOKENS_BASE + EXTRACTION_TOKENS_PER_CHUNK_TOKEN * chunk.n_tokens
    return proportional if cap is None else min(cap, proportional)


def _without_example(payload: ExtractionPayload, text: str) -> tuple[ExtractionPayload, int]:
    """The payload without the entities (and their relationships) a weak model copied from the prompt's
    worked example: its names, unless the chunk itself holds them; and how many were dropped."""
    copied = {normalise_name(e.name) for e in payload.entities if example_names_in(e.name, [text])}
    if not copied:
        return payload, 0
    entities = [e for e in payload.entities if normalise_name(e.name) not in copied]
    relationships = [
        r
        for r in payload.relationships
        if normalise_name(r.source) not in copied and normalise_name(r.target) not in copied
    ]
    dropped = len(payload.entities) - len(entities)
    return ExtractionPayload(entities=entities, relationships=relationships), dropped


def _relationship_key(rel: ExtractedRelationship) -> tuple[str, str, str]:
    return normalise_name(rel.source), normalise_name(rel.target), rel.type


class LLMDescriptionSummarizer:
    """`DescriptionSummarizer` asking a chat model for one consolidated description."""

    def __init__(
        self,
        chat: ChatModel,
        prompts: PromptRegistry,
        *,
        max_words: int = 150,
        max_tokens: int | None = 500,
        max_input_tokens: int | None = None,
    ):
        self._chat = chat
        self._prompts = prompts
        self._max_words = max_words
        self._max_tokens = max_tokens
        # The descriptions shown at most (a much-mentioned entity has hundreds): the prompt fits the window.
        self._max_input_tokens = max_input_tokens

    async def summarize(self, name: str, descriptions: list[str]) -> str:
        distinct = list(dict.fromkeys(d.strip() for d in descriptions if d.strip()))
        if len(distinct) < 2:
            return distinct[0] if distinct else ""
        distinct = self._within_budget(distinct)
        prompt = self._prompts.render(
            "summarize_descriptions",
            name=name,
            descriptions="\n".join(f"- {d}" for d in distinct),
            max_words=str(self._max_words),
        )
        # A ModelError (the model failed after its retries, or copied an example twice) goes to
        # `summarize_all`, which keeps the descriptions as a marked placeholder that the next run asks for again.
        conversation = [turn("user", prompt)]
        text = (await self._chat.chat(conversation, max_tokens=self._max_tokens)).text.strip()
        copied = example_names_in(text, [name, *distinct])
        if copied:
            # Asked once more, with the copy pointed out (a changed request: a cache cannot replay it).
            again = self._prompts.render("summary_copied", names=", ".join(copied))
            conversation += [turn("assistant", text), turn("user", again)]
            text = (await self._chat.chat(conversation, max_tokens=self._max_tokens)).text.strip()
            copied = example_names_in(text, [name, *distinct])
            if copied:
                raise InvalidModelOutput(
                    f"the summary of {name!r} repeats {', '.join(copied)}, names of a prompt example"
                )
        # An empty answer must not erase what we know: fall back to the descriptions themselves.
        return text or " ".join(distinct)

    def _within_budget(self, descriptions: list[str]) -> list[str]:
        if self._max_input_tokens is None:
            return descriptions
        kept, used = [], 0
        for description in descriptions:
            used += count_tokens(description) + 2
            if kept and used > self._max_input_tokens:
                break
            kept.append(description)
        return kept


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
        # A report asked longer than its token cap allows is cut mid-JSON (sooner in Russian than in English).
        self._max_words = max_words if max_tokens is None else words_within(max_tokens, cap=max_words, floor=100)
        self._max_tokens = max_tokens

    async def report(self, community: CommunityContext) -> CommunityReport:
        prompt = self._prompts.render(
            "community_report",
            answer_shape=describe_keys(ReportPayload),
            context=community.text,
            max_words=str(self._max_words),
        )
        answer = await ask_json(
            self._chat,
            self._prompts,
            prompt,
            lambda raw: parse_report(raw, community),
            ReportPayload,
            max_tokens=self._max_tokens,
            attempts=self._max_attempts,
        )
        try:
            return answer.unwrap(f"community report of {community.community.id}")
        except ModelError as exc:
            # Transport failures after their retries, or output that stayed invalid: the report is stored
            # as failed (rating 0) and asked for again on the next run, the ingestion goes on.
            log.warning("no valid report for %s: %s", community.community.id, exc)
            return failed_report(community, str(exc))


def llm_ingestion_tasks(chat: ChatModel, settings: Settings, prompts: PromptRegistry) -> IngestionTasks:
    """The LLM-backed implementations of the ingestion tasks, configured from settings."""
    return IngestionTasks(
        extractor=LLMGraphExtractor(
            chat,
            prompts,
            max_attempts=settings.extraction_attempts,
            max_gleanings=settings.max_gleanings,
            max_tokens=settings.extraction_max_tokens,
        ),
        summarizer=LLMDescriptionSummarizer(
            chat, prompts, max_tokens=settings.summary_max_tokens, max_input_tokens=settings.report_context_tokens
        ),
        reporter=LLMCommunityReporter(chat, prompts, max_tokens=settings.report_max_tokens),
    )
