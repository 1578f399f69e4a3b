"""driftrag: a GraphRAG engine on Neo4j with LlamaIndex Workflows.

`from driftrag import DriftRAG` gives the Python API (see `driftrag.facade`); it is imported on first
use so that `import driftrag` (the CLI, the settings) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["DriftRAG", "__version__"]

if TYPE_CHECKING:
    from driftrag.facade import DriftRAG


def __getattr__(name: str) -> Any:
    if name == "DriftRAG":
        from driftrag.facade import DriftRAG

        return DriftRAG
    raise AttributeError(f"module 'driftrag' has no attribute {name!r}")
