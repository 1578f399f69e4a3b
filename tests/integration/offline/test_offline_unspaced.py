"""A Chinese file next to a good one, through the facade in the offline mode, against the real Neo4j."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from driftrag.facade import DriftRAG
from driftrag.ingestion.loading import UnextractableTextError
from driftrag.providers import build_providers
from driftrag.providers.embeddings import AccountedEmbedding
from driftrag.settings import Settings
from tests.fakes.hashing_embedding import HashingEmbedding

GOOD = (
    "Captain Mirela Voss sailed into Harbor Town at dawn. 'The lamp is out,' said Captain Mirela Voss "
    "to Pip Rackham. Pip Rackham ran to the Amber Lighthouse.\n\n"
    "At the Amber Lighthouse, Pip Rackham found the keeper asleep. Captain Mirela Voss followed Pip Rackham "
    "up the stairs of the Amber Lighthouse."
)
CHINESE = "爱丽丝靠着姐姐坐在河岸边很久了，由于没有什么事情可做，她开始感到厌倦。她偶尔瞧一瞧姐姐正在读的书。\n" * 4


async def test_a_chinese_file_is_refused_with_one_clear_error_and_the_good_file_ingests_without_it(
    neo4j_settings: Settings, tmp_path: Path
) -> None:
    good, chinese = tmp_path / "harbor.md", tmp_path / "alice-zh.txt"
    good.write_text(GOOD, encoding="utf-8")
    chinese.write_text(CHINESE, encoding="utf-8")
    settings = neo4j_settings.model_copy(update={"offline_min_entity_chunks": 1})
    providers = build_providers(settings)
    embedder = AccountedEmbedding(HashingEmbedding(dimension=providers.embedding_dimension), providers.usage)
    providers = dataclasses.replace(providers, embedder=embedder)
    kb = f"test-unspaced-{uuid.uuid4().hex[:8]}"
    async with DriftRAG(settings, providers=providers) as rag:
        stores = rag.stores
        try:
            with pytest.raises(UnextractableTextError) as raised:
                await rag.ingest(kb, paths=[good, chinese])
            message = str(raised.value)
            assert str(chinese) in message and "harbor.md" not in message
            assert "the offline mode does not extract entities" in message and "OPENAI_API_KEY" in message
            # Refused before anything was written, as any file that cannot be ingested.
            assert await stores.listing.chunks(kb) == []

            result = await rag.ingest(kb, paths=[good])
            names = {row["name"] for row in await stores.listing.entities(kb)}
            assert {"Captain Mirela Voss", "Pip Rackham", "Amber Lighthouse"} <= names
            assert result.counts.documents == 1
        finally:
            await stores.kbs.delete_kb(kb)
