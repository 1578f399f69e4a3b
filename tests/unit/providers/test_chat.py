import asyncio
from dataclasses import dataclass

from driftrag.composition import ingestion_tasks
from driftrag.ingestion.chunking import chunk_document
from driftrag.ingestion.extraction import extract_all
from driftrag.ingestion.loading import document_from_text
from driftrag.models.graph import ExtractConfig
from driftrag.providers.chat import LimitedChat
from driftrag.providers.factory import build_providers
from driftrag.settings import Settings
from tests.fakes.scripted_llm import ScriptedChatModel


@dataclass
class _Reply:
    text: str


class _CountingChat:
    """Answers after a pause (`model`'s answer, else an echo), counting the calls under way at once."""

    def __init__(self, model=None) -> None:
        self.model = model
        self.under_way = self.peak = self.calls = 0

    async def chat(self, messages, *, json_mode=False, max_tokens=None, schema=None):
        self.under_way += 1
        self.calls += 1
        self.peak = max(self.peak, self.under_way)
        await asyncio.sleep(0.01)
        self.under_way -= 1
        if self.model is not None:
            return await self.model.chat(messages, json_mode=json_mode, max_tokens=max_tokens)
        return _Reply(text=f"answer to {messages[-1]['content']}")


async def test_a_limited_chat_runs_at_most_its_limit_of_calls_at_once_and_answers_each():
    model = _CountingChat()
    limited = LimitedChat(model, 2)
    replies = await asyncio.gather(*(limited.chat([{"role": "user", "content": str(n)}]) for n in range(7)))
    assert [reply.text for reply in replies] == [f"answer to {n}" for n in range(7)]
    assert model.calls == 7 and model.peak == 2


async def test_ingestion_holds_a_model_passed_in_to_the_model_concurrency(tmp_path):
    # Extraction keeps more chunks under way than model slots: a model passed in as it is gets the slots
    # the providers' own client keeps.
    settings = Settings(home=tmp_path, llm_provider="offline", llm_concurrency=3)
    model = _CountingChat(ScriptedChatModel())
    tasks = ingestion_tasks(settings, build_providers(settings), chat=model)
    document = document_from_text(" ".join(f"Alice met the Rabbit {n} times." for n in range(400)), "kb", "t")
    chunks = chunk_document(document, chunk_size=64, chunk_overlap=8)
    outcomes = await extract_all(chunks, ExtractConfig(), tasks.extractor, concurrency=settings.llm_concurrency)
    assert len(chunks) > 6 and not any(outcome.failed for outcome in outcomes)
    assert model.calls >= len(chunks) and model.peak == 3
