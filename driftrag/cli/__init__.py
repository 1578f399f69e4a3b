"""The `driftrag` command line.

Exit codes: 0 success, 1 a driftrag error (message printed, no traceback unless --debug),
2 bad usage, 3 backend unavailable (Neo4j unreachable), 4 ingestion finished with failed chunks,
5 the local Neo4j lacks a prerequisite (java, mvn, or the Maven repository while nothing is cached).
Each module registers its commands on the one `app` of `driftrag.cli.common`.
"""

import gc

from driftrag.cli import api, data, evaluation, graph, ingest, interop, kb, query, server  # noqa: F401  (registration)
from driftrag.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    finally:
        # On exit the interpreter's last garbage collection walks every object of the run (an offline
        # query's tokenizer, embedder and language tables: about 0.3 s of CPU); frozen, they are left to
        # reference counting and the end of the process.
        gc.freeze()
