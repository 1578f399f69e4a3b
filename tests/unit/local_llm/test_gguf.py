"""The GGUF header reader: what `driftrag info` says about a model, and one clear error for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftrag.errors import LocalModelError
from driftrag.local_llm.gguf import read_gguf_info
from tests.support.gguf_files import write_gguf

TINY_CHAT_MODEL = {
    "general.architecture": "llama",
    "general.name": "Tiny Chat",
    "general.file_type": 15,
    "llama.context_length": 8192,
    "tokenizer.chat_template": "{{ messages }}",
}


def test_the_header_names_the_model_its_size_quantisation_and_context(tmp_path: Path) -> None:
    path = write_gguf(
        tmp_path / "tiny.gguf", metadata=TINY_CHAT_MODEL, tensors={"a": (64, 1000), "b": (10,)}, tokens=5000
    )
    info = read_gguf_info(path)
    assert (info.name, info.architecture, info.quantisation) == ("Tiny Chat", "llama", "Q4_K_M")
    assert (info.parameters, info.trained_context, info.chat_template) == (64_010, 8192, True)
    assert info.file_bytes == path.stat().st_size
    assert "Tiny Chat" in info.describe() and "Q4_K_M" in info.describe() and "8,192" in info.describe()


def test_a_model_without_a_chat_template_is_said_to_be_a_base_model(tmp_path: Path) -> None:
    metadata = {k: v for k, v in TINY_CHAT_MODEL.items() if k != "tokenizer.chat_template"}
    info = read_gguf_info(write_gguf(tmp_path / "base.gguf", metadata=metadata))
    assert not info.chat_template and "no chat template" in info.describe()


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.gguf"
    with pytest.raises(LocalModelError, match=rf"local model {missing} does not exist"):
        read_gguf_info(missing)


def test_a_text_file_is_not_gguf(tmp_path: Path) -> None:
    text = tmp_path / "model.gguf"
    text.write_text("not a model\n")
    with pytest.raises(LocalModelError, match=rf"local model {text} is not a GGUF file \(it starts with b'not "):
        read_gguf_info(text)


@pytest.mark.parametrize("keep", [4, 10, 30, -8])
def test_a_header_cut_short_is_named(tmp_path: Path, keep: int) -> None:
    whole = write_gguf(tmp_path / "whole.gguf", metadata=TINY_CHAT_MODEL, tensors={"a": (4, 4)}).read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:keep])
    with pytest.raises(LocalModelError, match=rf"local model {cut} is not a whole GGUF file"):
        read_gguf_info(cut)


def test_an_old_or_damaged_header_is_refused_not_read_on(tmp_path: Path) -> None:
    old = write_gguf(tmp_path / "old.gguf", version=1)
    with pytest.raises(LocalModelError, match="GGUF version 1"):
        read_gguf_info(old)
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (2**40).to_bytes(8, "little") + bytes(8))
    with pytest.raises(LocalModelError, match=rf"local model {damaged} has an unreadable GGUF header"):
        read_gguf_info(damaged)
