"""TEST HELPER SCRIPT: resume a stopped ingestion workflow from its serialised context, in a new process.

    NEO4J_URI=bolt://... PYTHONPATH=. python -m tests.support.resume_ingestion <context.json> <home-dir> <result.json>

Builds the workflow's dependencies afresh (offline models, the harbor corpus's scripted chat model, the
small chunks of the ingestion tests), restores the context with `Context.from_dict` and runs it to the
end; the `IngestionResult` is written to <result.json>.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from workflows import Context

from driftrag.composition import ingestion_deps
from driftrag.providers import build_providers
from driftrag.settings import Settings
from driftrag.store import Neo4jStore
from driftrag.store.roles import neo4j_roles
from driftrag.workflows.ingestion import IngestionWorkflow
from tests.fakes.harbor_corpus import DescriptiveChatModel
from tests.support.ingestion import SMALL_CHUNKS


async def main(saved: dict, home: Path) -> str:
    settings = Settings(neo4j_uri=os.environ["NEO4J_URI"], home=home, llm_provider="offline", **SMALL_CHUNKS)
    async with Neo4jStore.from_settings(settings) as store:
        await store.connect()
        deps = ingestion_deps(settings, neo4j_roles(store), build_providers(settings), DescriptiveChatModel())
        workflow = IngestionWorkflow(deps)
        result = await workflow.run(ctx=Context.from_dict(workflow, saved))
    return result.model_dump_json()


if __name__ == "__main__":
    context = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    Path(sys.argv[3]).write_text(asyncio.run(main(context, Path(sys.argv[2]))), encoding="utf-8")
