"""Small real models that arrive inside ordinary PyPI packages: `LLAMACPP_MODEL_PATH=package:NAME`.

Nothing is downloaded at run time: the GGUF is a file inside an installed package (found with
`importlib.util.find_spec`, never by importing the package's code). A model shipped in several chunk packages
is concatenated once into `MACHI_MODEL_CACHE` and checked against its SHA-256.

| name          | extra              | model                                                      |
| ------------- | ------------------ | ---------------------------------------------------------- |
| `smollm2`     | `machi[smollm2]`   | SmolLM2-135M-Instruct Q4_1 (English, instruction-tuned)    |
| `gemma3-270m` | `machi[gemma3]`    | Gemma 3 270M Q4_K_M (multilingual base model; no template) |
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from backend.config import (
    GEMMA_PARTS,  # noqa: F401 - part of this module's surface (tests read it)
    PACKAGE_PREFIX,
    PACKAGED_MODELS,
    PackagedModel,  # noqa: F401
    chunk_paths,
    is_packaged,
    packaged_model,
)
from backend.errors import ConfigError

# The catalogue (names, chunk packages, checksums) lives in config, which checks LLAMACPP_MODEL_PATH against it.
PREFIX = PACKAGE_PREFIX
MODELS = PACKAGED_MODELS


def default_cache_dir() -> Path:
    return Path(os.environ.get("MACHI_MODEL_CACHE") or Path.home() / ".cache" / "machi" / "models")


def resolve(value: str, cache_dir: Path | None = None) -> Path:
    """The GGUF file for LLAMACPP_MODEL_PATH: the path itself, or the packaged model's file (chunks joined
    once into `cache_dir` and verified).

    Raises:
        ConfigError, MissingDependency: as `packaged_model` and `chunk_paths`; a chunk set that does not
            match its checksum.
    """
    if not is_packaged(value):
        return Path(value).expanduser()
    model = packaged_model(value)
    chunks = chunk_paths(model)
    if len(chunks) == 1:
        return chunks[0]
    target = (cache_dir or default_cache_dir()) / model.file_name
    size = sum(chunk.stat().st_size for chunk in chunks)
    if target.is_file() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.part")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for chunk in chunks:
            with chunk.open("rb") as source:
                while block := source.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if model.sha256 and digest.hexdigest() != model.sha256:
        partial.unlink(missing_ok=True)
        raise ConfigError(
            f"the chunks of {PREFIX}{model.name} do not add up to the expected file: reinstall them"
        )
    partial.replace(target)  # atomic: a half-written file is never taken for the model
    return target


def chat_format_for(value: str | None) -> str | None:
    """The chat format a packaged model needs (its GGUF has no template), or None."""
    return packaged_model(value).chat_format if value and is_packaged(value) else None
