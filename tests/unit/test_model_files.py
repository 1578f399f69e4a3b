"""The real-model cache: names, what counts as cached, and refusals that keep nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftrag.errors import ConfigurationError
from driftrag.model_files import MODEL_FILES, cached_model_file, get_model_file, model_file, models_dir


def test_every_model_pins_its_wheels_and_its_joined_file() -> None:
    for model in MODEL_FILES:
        assert len(model.sha256) == 64 and model.size > 0 and model.filename.endswith(".gguf")
        assert model.parts and all(len(part.sha256) == 64 and "==" in part.requirement for part in model.parts)


def test_an_unknown_model_is_refused_with_the_known_names() -> None:
    with pytest.raises(ConfigurationError, match=r"qwen2\.5-coder-0\.5b"):
        get_model_file("gpt-5")


def test_a_file_of_the_wrong_size_is_not_taken_for_the_model(tmp_path: Path) -> None:
    model = get_model_file("smollm2-135m")
    target = models_dir(tmp_path) / model.filename
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF truncated")
    assert cached_model_file(model.name, home=tmp_path) is None


def test_a_cached_model_is_used_without_a_download(tmp_path: Path) -> None:
    model = get_model_file("smollm2-135m")
    target = models_dir(tmp_path) / model.filename
    target.parent.mkdir(parents=True)
    with target.open("wb") as out:  # sparse: the pinned size, as a finished fetch leaves it
        out.truncate(model.size)
    assert model_file(model.name, home=tmp_path, timeout_s=0.001) == target
