"""The extraction preview cuts its text as ingestion does, a few chunks at a time, and says the same as
extracting the whole chunk list at once."""

from __future__ import annotations

import pytest

from driftrag.ingestion import preview as preview_module
from driftrag.ingestion.chunking import chunk_document, iter_chunks
from driftrag.ingestion.extraction import extract_all
from driftrag.ingestion.loading import document_from_text
from driftrag.ingestion.merge import merge_extractions
from driftrag.ingestion.preview import MAX_PREVIEW_CHARS, preview_extraction
from driftrag.models.graph import ExtractConfig
from tests.fakes.harbor_corpus import CORPUS
from tests.fakes.scripted_llm import ScriptedChatModel
from tests.support.ingestion import Ingestor


class _Counting(ScriptedChatModel):
    """Notes, at each extraction call, how many chunks had been cut but not yet sent to the model."""

    def __init__(self, cut: list[int]) -> None:
        super().__init__()
        self.cut, self.ahead = cut, []

    async def chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        result = await super().chat(messages, **kwargs)
        if self._task(messages) == "extract":
            self.ahead.append(self.cut[0] - self.calls["extract"])
        return result


async def test_a_preview_in_batches_counts_and_extracts_every_chunk_as_the_whole_list_would(
    ingestor: Ingestor, kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "\n\n".join(CORPUS.values())[:MAX_PREVIEW_CHARS]
    settings = ingestor.settings.model_copy(
        update={"llm_concurrency": 2, "chunk_size": 50, "chunk_overlap": 5}
    )  # batches of 2
    cut = [0]

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        for chunk in iter_chunks(*args, **kwargs):
            cut[0] += 1
            yield chunk

    monkeypatch.setattr(preview_module, "iter_chunks", counted)
    chat = _Counting(cut)
    deps = ingestor.deps(chat, settings)
    preview = await preview_extraction(deps, kb, text, ExtractConfig(), mode="openai", notes=[])
    assert max(chat.ahead) < settings.llm_concurrency, "chunks are cut as they are extracted, not all first"

    size, overlap = deps.chunking()
    chunks = chunk_document(document_from_text(text, kb, "extraction preview"), chunk_size=size, chunk_overlap=overlap)
    assert preview.chunks == len(chunks) > 2 * settings.llm_concurrency, "several batches"
    assert chat.calls["extract"] == len(chunks), "each chunk extracted once"
    whole = merge_extractions(
        await extract_all(chunks, ExtractConfig(), ingestor.deps(ScriptedChatModel()).tasks.extractor)
    )
    assert [(e.name, e.type, e.descriptions) for e in preview.entities] == [
        (e.name, e.type, e.descriptions) for e in whole.entities
    ]
    assert len(preview.relationships) == len(whole.relationships) > 0
