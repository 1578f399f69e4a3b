"""A chunk whose model extraction stays unusable is filled by the offline extractor, marked as such;
a failed model call stays a failed chunk (issue 34)."""

from __future__ import annotations

from driftrag.errors import ModelError
from driftrag.ingestion.extraction import FallbackExtractor
from driftrag.ingestion.llm_tasks import LLMGraphExtractor
from driftrag.models.graph import Chunk, ExtractConfig
from driftrag.offline.ingestion.extractor import OfflineGraphExtractor
from driftrag.offline.nlp import LanguageResources
from driftrag.prompts.registry import PromptRegistry
from tests.fakes.weak_model import WeakChat

CHUNK = Chunk(
    id="chunk-1",
    document_id="doc-1",
    index=0,
    text="Captain Mirela Voss sailed the Amber Lantern out of Harbor Town. Jonas Pell kept the charts for Mirela Voss.",
    n_tokens=30,
    start_char=0,
    end_char=100,
)


class DownChat:
    async def chat(self, messages, *, json_mode=False, max_tokens=None, temperature=None, schema=None):
        raise ModelError("connection refused")


def extractor(chat) -> FallbackExtractor:
    primary = LLMGraphExtractor(chat, PromptRegistry.load(), max_gleanings=0)
    return FallbackExtractor(primary, OfflineGraphExtractor(LanguageResources()))


async def test_an_unusable_extraction_is_filled_offline_and_marked() -> None:
    outcome = await extractor(WeakChat({"extract": "wrong_object"})).extract(CHUNK, ExtractConfig())
    assert not outcome.failed and outcome.origin == "offline" and outcome.entities
    assert outcome.attempts == 2 and "extracted offline" in outcome.warnings[0]
    good = await extractor(WeakChat({})).extract(CHUNK, ExtractConfig())
    assert good.origin == "model" and good.entities


async def test_a_copied_prompt_example_is_not_the_chunk_graph() -> None:
    outcome = await extractor(WeakChat({"extract": "example_copy"})).extract(CHUNK, ExtractConfig())
    assert outcome.origin == "offline" and "copies the prompt's example" in outcome.warnings[0]
    assert not any("Placeholder" in entity.name for entity in outcome.entities)


async def test_a_failed_call_stays_a_failed_chunk() -> None:
    outcome = await extractor(DownChat()).extract(CHUNK, ExtractConfig())
    assert outcome.failed and not outcome.output_unusable and outcome.origin == "model"
