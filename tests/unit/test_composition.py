"""The composition root: offline or LLM tasks, chunk caps, and the prompts folder setting."""

from __future__ import annotations

from driftrag.composition import ingestion_deps, query_deps
from driftrag.ingestion.deps import IngestionTasks
from driftrag.ingestion.tasks import CommunityReporter, DescriptionSummarizer, GraphExtractor, GraphRefiner
from driftrag.offline.ingestion.extractor import OfflineGraphExtractor
from driftrag.offline.ingestion.tasks import offline_ingestion_tasks
from driftrag.providers import build_providers
from driftrag.settings import Settings
from tests.fakes.scripted_llm import ScriptedChatModel


def _offline(**fields) -> Settings:
    return Settings(_env_file=None, llm_provider="offline", **fields)


def test_the_offline_task_set_fills_every_slot() -> None:
    tasks = offline_ingestion_tasks(_offline(offline_cooccurrence_window=0))
    assert isinstance(tasks, IngestionTasks)
    assert isinstance(tasks.extractor, GraphExtractor) and isinstance(tasks.extractor, OfflineGraphExtractor)
    assert isinstance(tasks.summarizer, DescriptionSummarizer)
    assert isinstance(tasks.reporter, CommunityReporter)
    assert isinstance(tasks.refiner, GraphRefiner)


def test_without_a_model_ingestion_is_offline_with_capped_chunks() -> None:
    settings = _offline()
    providers = build_providers(settings)
    assert providers.model_client is None and "no LLM: ingestion extracts" in providers.describe()
    deps = ingestion_deps(settings, None, providers)  # type: ignore[arg-type]
    assert isinstance(deps.tasks.extractor, OfflineGraphExtractor)
    assert deps.chunking() == (settings.offline_chunk_size, settings.offline_chunk_overlap)
    # Smaller explicit chunks stay as they are.
    small = _offline(chunk_size=120, chunk_overlap=10)
    assert ingestion_deps(small, None, build_providers(small)).chunking() == (120, 10)  # type: ignore[arg-type]


def test_a_chat_model_keeps_the_llm_tasks_and_no_refiner() -> None:
    settings = _offline()
    deps = ingestion_deps(settings, None, build_providers(settings), ScriptedChatModel())  # type: ignore[arg-type]
    assert not isinstance(deps.tasks.extractor, OfflineGraphExtractor)
    assert deps.tasks.refiner is None


class RecordingChat:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def chat(self, messages, *, json_mode: bool = False, max_tokens: int | None = None, schema=None):
        self.prompts.append(messages[-1]["content"])
        return type("Reply", (), {"text": "a hypothetical report", "prompt_tokens": 10, "completion_tokens": 3})()


async def test_the_prompts_folder_setting_reaches_the_model_tasks(tmp_path) -> None:
    (tmp_path / "drift_hyde.txt").write_text(
        "OVERRIDDEN HyDE for $question shaped like $template in $max_words words", encoding="utf-8"
    )
    settings = _offline(prompts_dir=tmp_path)
    chat = RecordingChat()
    deps = query_deps(settings, None, build_providers(settings), chat)  # type: ignore[arg-type]
    tasks = deps.tasks(deps.budget())
    assert await tasks.hyde.hypothetical_report("Who?", "# Report") == "a hypothetical report"
    assert chat.prompts[0].startswith("OVERRIDDEN HyDE for")
    # Without the setting, the packaged template is used.
    plain = query_deps(_offline(), None, build_providers(_offline()), chat)  # type: ignore[arg-type]
    await plain.tasks(plain.budget()).hyde.hypothetical_report("Who?", "# Report")
    assert not chat.prompts[1].startswith("OVERRIDDEN")
