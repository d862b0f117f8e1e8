"""The tiny GGUF: byte-identical every run, small, and a model llama.cpp loads with our template."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tests.real_engine.tiny_gguf import CHAT_TEMPLATE, write_tiny_gguf


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_generation_is_deterministic_and_small(tmp_path: Path, tiny_model: Path) -> None:
    again = write_tiny_gguf(tmp_path / "again.gguf")
    assert sha256(again) == sha256(tiny_model)
    assert again.stat().st_size < 1_000_000
    other = write_tiny_gguf(tmp_path / "other.gguf", favour={"<0x0A>": 5.0})
    assert sha256(other) != sha256(tiny_model)  # the hash does look at the weights


def test_llama_cpp_loads_it_with_the_template_and_no_space_prefix(llama: Any) -> None:
    assert llama.metadata["tokenizer.chat_template"] == CHAT_TEMPLATE
    assert llama.metadata["general.architecture"] == "llama"
    assert llama.n_embd() == 64
    for text in ("hello", "こんにちは、広場へ", '{"a":1}'):
        tokens = llama.tokenize(text.encode(), add_bos=False)
        assert llama.detokenize(tokens).decode() == text  # no leading space added, Japanese survives
