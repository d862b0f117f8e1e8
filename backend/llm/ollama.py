"""Ollama adapter: the official `ollama` async client; JSON Schema replies go through Ollama's `format`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import ollama

from backend.config import Settings
from backend.errors import LLMError, LLMTimeout, LLMUnavailable
from backend.llm.base import (
    LLM,
    Completion,
    GenerateOptions,
    Message,
    completion_cap,
    fill_usage,
    models_by_role,
)

#: Connecting to a local Ollama takes milliseconds; failing fast lets the retry wrapper take over.
CONNECT_TIMEOUT_S = 5.0

#: What the client can raise for a failed call: transport errors (httpx), Ollama's own errors, the
#: built-in ConnectionError the client raises for a refused connection, and ValueError for a reply
#: that is not the JSON Ollama promises (json.JSONDecodeError and pydantic's ValidationError are ValueErrors).
CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    ollama.ResponseError,
    ConnectionError,
    httpx.HTTPError,
    ValueError,
)


def map_ollama_error(exc: BaseException, *, host: str, model: str) -> LLMError:
    """Turn what the ollama client raised into LLMTimeout / LLMUnavailable with an actionable message."""
    if isinstance(exc, httpx.TimeoutException):
        return LLMTimeout(f"Ollama at {host} did not answer in time ({type(exc).__name__})")
    if isinstance(exc, ConnectionError | httpx.TransportError):
        return LLMUnavailable(f"cannot reach Ollama at {host}: is `ollama serve` running? ({exc})")
    if isinstance(exc, ollama.ResponseError):
        status, reason = exc.status_code, exc.error
        if status == 404:
            return LLMUnavailable(
                f"model {model!r} not found at {host}: run `ollama pull {model}` ({reason})", retryable=False
            )
        if 400 <= status < 500 and status not in (408, 429):
            return LLMUnavailable(f"Ollama refused the request ({status}): {reason}", retryable=False)
        return LLMUnavailable(f"Ollama failed ({status}): {reason}")
    return LLMUnavailable(f"unexpected reply from Ollama at {host}: {exc}")


class OllamaLLM(LLM):
    """Chat completions from a local (or remote) Ollama server.

    Each call goes to `options.model`, else the model configured for the call's role (MODEL_EMOTION...),
    else OLLAMA_MODEL. `keep_alive` keeps the model loaded between calls so a turn never pays a cold load.
    """

    name = "ollama"
    # One call at a time per loaded model (OLLAMA_NUM_PARALLEL=1, the exhibition's setup), and a cancelled
    # call closes its HTTP request, which makes Ollama stop generating: a live turn may preempt.
    preemptible = True

    def __init__(
        self,
        *,
        host: str,
        model: str,
        role_models: Mapping[str, str] | None = None,
        keep_alive: str | float | None = "30m",
        timeout_s: float = 30.0,
        temperature: float = 0.7,
        seed: int | None = None,
    ) -> None:
        self.host = host
        self.model = model
        self.role_models = dict(role_models or {})
        self.keep_alive = keep_alive
        self.temperature = temperature
        self.seed = seed  # LLM_SEED: the seed of every call that names none
        timeout = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))
        self.client = ollama.AsyncClient(host=host, timeout=timeout)

    @classmethod
    def from_settings(cls, settings: Settings) -> OllamaLLM:
        return cls(
            host=settings.ollama_host,
            model=settings.ollama_model,
            role_models=models_by_role(settings, settings.ollama_model),
            keep_alive=settings.ollama_keep_alive,
            timeout_s=settings.llm_timeout_s,
            temperature=settings.llm_temperature,
            seed=settings.llm_seed,
        )

    def resolve_model(self, options: GenerateOptions) -> str:
        return options.model or self.role_models.get(options.role, self.model)

    def request(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The keyword arguments of `AsyncClient.chat` for one call (without `stream`)."""
        sampling: dict[str, Any] = {
            "temperature": self.temperature if options.temperature is None else options.temperature,
            "num_predict": completion_cap(options),
        }
        seed = self.seed if options.seed is None else options.seed
        if seed is not None:
            sampling["seed"] = seed
        return {
            "model": self.resolve_model(options),
            "messages": [dict(m) for m in messages],
            "format": schema,
            "options": sampling,
            "keep_alive": self.keep_alive,
        }

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        request = self.request(messages, options, schema)
        try:
            response = await self.client.chat(**request, stream=False)
        except CLIENT_ERRORS as exc:
            raise map_ollama_error(exc, host=self.host, model=request["model"]) from exc
        return Completion(
            text=response.message.content or "",
            model=response.model or request["model"],
            prompt_tokens=response.prompt_eval_count,
            completion_tokens=response.eval_count,
            meta={"done_reason": response.done_reason},
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        request = self.request(messages, options, schema)
        try:
            parts = await self.client.chat(**request, stream=True)
            # aclosing: a consumer that stops early must not leave the HTTP response open.
            async with contextlib.aclosing(parts) as chunks:  # type: ignore[type-var]
                async for part in chunks:
                    if part.message.content:
                        yield part.message.content
                    if part.done:
                        final = Completion(
                            "", part.model or request["model"], part.prompt_eval_count, part.eval_count
                        )
                        final.meta["done_reason"] = part.done_reason
                        fill_usage(usage, final)
        except CLIENT_ERRORS as exc:
            raise map_ollama_error(exc, host=self.host, model=request["model"]) from exc

    async def check(self) -> str:
        """Verify Ollama answers and has pulled every configured model; returns a one-line summary.

        Raises:
            LLMUnavailable: Ollama is unreachable, or a configured model is not pulled (says what to pull).
            LLMTimeout: Ollama did not answer in time.
        """
        try:
            listing = await self.client.list()
        except CLIENT_ERRORS as exc:
            raise map_ollama_error(exc, host=self.host, model=self.model) from exc
        pulled = {m.model for m in listing.models if m.model}
        wanted = sorted({self.model, *self.role_models.values()})
        missing = [name for name in wanted if not _is_pulled(name, pulled)]
        if missing:
            commands = "; ".join(f"`ollama pull {name}`" for name in missing)
            message = f"Ollama at {self.host} lacks {', '.join(missing)}: run {commands}"
            raise LLMUnavailable(message, retryable=False)
        return f"ollama at {self.host}: {', '.join(wanted)} ready ({len(pulled)} model(s) pulled)"

    async def aclose(self) -> None:
        await self.client.close()


def _is_pulled(name: str, pulled: set[str]) -> bool:
    # Ollama lists "llama3.2:latest" for a model pulled as "llama3.2".
    return name in pulled or (":" not in name and f"{name}:latest" in pulled)
