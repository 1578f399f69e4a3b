"""TEST HELPER SCRIPT: the HTTP API (no auth, loopback) over a chat model that sleeps before each answer, so
a test can SIGKILL the server in the middle of an ingestion job and start another on the same Neo4j.

    NEO4J_URI=bolt://... DRIFTRAG_HOME=... PYTHONPATH=. python tests/fakes/serve_slowly.py <port> [delay-s]

Every other setting comes from the environment (`DRIFTRAG_KB_LOCK_TTL_S`, `DRIFTRAG_CHUNK_SIZE`…).
"""

from __future__ import annotations

import sys

import uvicorn

from driftrag.api import ApiKeys, create_app
from driftrag.facade import DriftRAG
from driftrag.settings import Settings
from tests.fakes.harbor_corpus import SlowChatModel


def main(port: int, delay_s: float) -> None:
    rag = DriftRAG(Settings(), chat=SlowChatModel(delay_s=delay_s))
    uvicorn.run(create_app(rag, ApiKeys.insecure_no_auth()), host="127.0.0.1", port=port, log_level="info")


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.4)
