"""TEST HELPER SCRIPT: ingest the harbor corpus with a slow scripted model, to be killed mid-extraction.

    NEO4J_URI=bolt://... PYTHONPATH=. python tests/fakes/ingest_slowly.py <kb> <home-dir> [delay-s]

Runs the ingestion workflow with `llm_concurrency=1` and a chat double that sleeps before each answer,
so a test can SIGKILL it after some chunks are checkpointed and check that a rerun resumes.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from driftrag.composition import ingestion_deps
from driftrag.ingestion.requests import IngestRequest, TextInput
from driftrag.providers import build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow, IngestStart
from tests.fakes.harbor_corpus import CORPUS, SlowChatModel


async def main(kb: str, home: str, delay_s: float) -> None:
    settings = Settings(
        neo4j_uri=os.environ["NEO4J_URI"],
        home=Path(home),
        llm_provider="offline",
        chunk_size=120,
        chunk_overlap=10,
        llm_concurrency=1,
    )
    providers = build_providers(settings)
    chat = SlowChatModel(delay_s=delay_s)
    async with Neo4jStore.from_settings(settings) as store:
        await store.connect()
        deps = ingestion_deps(settings, neo4j_roles(store), providers, chat)
        request = IngestRequest(kb=kb, texts=[TextInput(title=t, text=x) for t, x in CORPUS.items()])
        print("started", flush=True)
        await IngestionWorkflow(deps).run(start_event=IngestStart(request=request))
        print("finished", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.5))
