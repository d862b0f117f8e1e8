"""A GGUF without a chat template (Gemma 3 270M's) is refused at start-up unless LLAMACPP_CHAT_FORMAT names
one; llama-cpp-python would otherwise format every prompt as llama-2's [INST] and the model imitates it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from backend.errors import ConfigError
from backend.llm.base import GenerateOptions
from backend.llm.llamacpp import LlamaCppLLM
from tests.real_engine.conftest import REAL_N_CTX, REAL_THREADS, real_settings

ROOT = Path(__file__).resolve().parents[2]


def test_a_gguf_without_a_template_is_refused_naming_the_setting(gemma3: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no chat template.*set LLAMACPP_CHAT_FORMAT"):
        LlamaCppLLM.from_settings(real_settings(tmp_path, str(gemma3)))


async def test_with_a_chat_format_it_loads_formats_with_it_and_health_says_so(
    gemma3: Path, tmp_path: Path
) -> None:
    provider = LlamaCppLLM.from_settings(real_settings(tmp_path, str(gemma3), llamacpp_chat_format="gemma"))
    try:
        assert provider.engine.llama.chat_format == "gemma"
        assert (await provider.check()).endswith("chat format gemma (LLAMACPP_CHAT_FORMAT)")
        reply = await provider.complete(
            [{"role": "user", "content": "こんにちは"}], options=GenerateOptions(max_tokens=6, seed=1)
        )
        assert reply.completion_tokens and "[/INST]" not in reply.text
    finally:
        await provider.aclose()


async def test_the_packaged_gemma_brings_its_format(gemma3: Path, tmp_path: Path) -> None:
    provider = LlamaCppLLM.from_settings(real_settings(tmp_path, "package:gemma3-270m"))
    try:
        assert provider.engine.llama.chat_format == "gemma"
        assert (await provider.check()).endswith("chat format gemma (package:gemma3-270m)")
    finally:
        await provider.aclose()


async def test_a_gguf_with_a_template_says_it_uses_it(smollm2: Path, tmp_path: Path) -> None:
    provider = LlamaCppLLM.from_settings(real_settings(tmp_path, str(smollm2)))
    try:
        assert (await provider.check()).endswith("chat template from the GGUF")
    finally:
        await provider.aclose()


def test_an_unknown_format_is_refused_listing_the_known_ones(tmp_path: Path) -> None:
    # Refused before the model is loaded: the file is never read.
    model = tmp_path / "never-read.gguf"
    model.write_bytes(b"x")
    with pytest.raises(ConfigError, match=r"LLAMACPP_CHAT_FORMAT 'gemmma' .*chatml.*gemma.*llama-3"):
        LlamaCppLLM.from_settings(real_settings(tmp_path, str(model), llamacpp_chat_format="gemmma"))


def test_machi_serve_refuses_in_one_line(gemma3: Path, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(Path.home()),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'm.db'}",
        "LLM_PROVIDER": "llamacpp",
        "LLAMACPP_MODEL_PATH": str(gemma3),
        "LLAMACPP_N_GPU_LAYERS": "0",
        "LLAMACPP_THREADS": str(REAL_THREADS),
        "LLAMACPP_N_CTX": str(REAL_N_CTX),
    }
    done = subprocess.run(
        [sys.executable, "-m", "backend.cli", "serve", "--port", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    ours = [line for line in done.stderr.splitlines() if not line.startswith("llama_")]  # llama.cpp's own log
    assert len(ours) == 1 and ours[0].startswith("config error: "), done.stderr
    assert "LLAMACPP_CHAT_FORMAT" in ours[0]


def test_health_names_the_template_in_use(gemma3: Path, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from backend.app import create_app

    settings = real_settings(tmp_path, str(gemma3), llamacpp_chat_format="gemma", load_demo_world=False)
    with TestClient(create_app(settings, llm=LlamaCppLLM.from_settings(settings))) as client:
        for _ in range(200):  # the start-up probe fills it in moments after start
            detail = client.get("/health").json()["llm_detail"]
            if detail != "not checked yet":
                break
            time.sleep(0.05)
    assert detail.endswith("chat format gemma (LLAMACPP_CHAT_FORMAT)"), detail
