"""OpenAI and vLLM adapters: the official `openai` async client, strict `json_schema` structured outputs."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import openai

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

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")
#: Keywords left out of the schema sent to OpenAI's own API (strict mode): the subset its documentation lists
#: has enum, const, minimum/maximum and minItems/maxItems but no string lengths and no tuples (`prefixItems`;
#: `items` still applies). The reply is still validated against the full schema. Other servers speaking the
#: API (llama-server, vLLM, LM Studio) get the full schema: their grammar engines enforce all of it, and
#: llama-server without `minLength` let a small model answer an empty label.
STRICT_UNSUPPORTED = frozenset({"minLength", "maxLength", "prefixItems"})
#: Hosts of OpenAI's own API (and Azure OpenAI), which get the strict subset.
OPENAI_HOSTS = ("api.openai.com", ".openai.azure.com")


def schema_name(schema: Mapping[str, Any]) -> str:
    """OpenAI wants `json_schema.name` to match ^[a-zA-Z0-9_-]{1,64}$; pydantic titles usually do."""
    return _SCHEMA_NAME.sub("_", str(schema.get("title") or "reply"))[:64] or "reply"


def strict_schema(schema: Any) -> Any:
    """`schema` without the keywords OpenAI's strict mode refuses (STRICT_UNSUPPORTED); a copy."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs"):  # names, not keywords: a property may be called maxLength
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key not in STRICT_UNSUPPORTED:
            out[key] = strict_schema(value)
    return out


def openai_hosted(base_url: str) -> bool:
    """Whether `base_url` is OpenAI's own API (or Azure OpenAI), not another server speaking it."""
    host = urlsplit(base_url).hostname or ""
    return any(host == name or (name.startswith(".") and host.endswith(name)) for name in OPENAI_HOSTS)


def map_openai_error(
    exc: openai.OpenAIError, *, provider: str, base_url: str, model: str, key_setting: str
) -> LLMError:
    """Turn what the openai client raised into LLMTimeout / LLMUnavailable with an actionable message.

    Errors that asking again cannot fix (bad key, unknown model, rejected request, exhausted quota) are
    marked `retryable=False` so RetryingLLM gives up at once.
    """
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeout(f"{provider} at {base_url} did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return LLMUnavailable(f"cannot reach {provider} at {base_url}: {exc.message}")
    if not isinstance(exc, openai.APIStatusError):
        return LLMUnavailable(f"unexpected reply from {provider} at {base_url}: {exc}")
    status, reason = exc.status_code, _reason(exc)
    if status in (401, 403):
        return LLMUnavailable(
            f"{provider} at {base_url} rejected the API key ({status}): check {key_setting} ({reason})",
            retryable=False,
        )
    if status == 404:
        return LLMUnavailable(
            f"model {model!r} not found at {base_url} (404): check the model name ({reason})", retryable=False
        )
    if status == 429:
        # insufficient_quota is also a 429, but waiting does not refill an account.
        quota = exc.code == "insufficient_quota"
        return LLMUnavailable(f"{provider} rate limit or quota (429): {reason}", retryable=not quota)
    if 400 <= status < 500 and status not in (408, 409):
        return LLMUnavailable(f"{provider} refused the request ({status}): {reason}", retryable=False)
    return LLMUnavailable(f"{provider} failed ({status}): {reason}")


def _reason(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        nested = body.get("error", body)
        if isinstance(nested, dict) and nested.get("message"):
            return str(nested["message"])[:500]
        if isinstance(nested, str):
            return nested[:500]
    return exc.message[:500]


class OpenAILLM(LLM):
    """Chat completions from OpenAI (or any server speaking its API, via OPENAI_BASE_URL).

    The client's own retries are off (`max_retries=0`): RetryingLLM retries, so attempts are traced.
    """

    name = "openai"
    key_setting = "OPENAI_API_KEY"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        role_models: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        temperature: float = 0.7,
        seed: int | None = None,
    ) -> None:
        self.model = model
        self.role_models = dict(role_models or {})
        self.temperature = temperature
        self.seed = seed  # LLM_SEED: the seed of every call that names none
        self.client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        self.base_url = str(self.client.base_url).rstrip("/")

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAILLM:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
        return cls(
            api_key=key,
            model=settings.openai_model,
            base_url=settings.openai_base_url,
            role_models=models_by_role(settings, settings.openai_model),
            timeout_s=settings.llm_timeout_s,
            temperature=settings.llm_temperature,
            seed=settings.llm_seed,
        )

    def resolve_model(self, options: GenerateOptions) -> str:
        return options.model or self.role_models.get(options.role, self.model)

    def request(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for one call (without streaming)."""
        request: dict[str, Any] = {
            "model": self.resolve_model(options),
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if options.temperature is None else options.temperature,
            "max_completion_tokens": completion_cap(options),
        }
        seed = self.seed if options.seed is None else options.seed
        if seed is not None:
            request["seed"] = seed
        if options.timeout_s is not None:
            request["timeout"] = options.timeout_s
        if schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(schema),
                    "schema": strict_schema(schema) if openai_hosted(self.base_url) else schema,
                    "strict": True,
                },
            }
        return request

    def _error(self, exc: openai.OpenAIError, model: str) -> LLMError:
        return map_openai_error(
            exc, provider=self.name, base_url=self.base_url, model=model, key_setting=self.key_setting
        )

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        request = self.request(messages, options, schema)
        try:
            response = await self.client.chat.completions.create(**request)
        except openai.OpenAIError as exc:
            raise self._error(exc, request["model"]) from exc
        if not response.choices:
            raise LLMUnavailable(f"{self.name} answered with no choices", details={"id": response.id})
        choice = response.choices[0]
        # A refusal has no content; keeping its text makes the trace (and the re-ask) say why.
        text = choice.message.content or getattr(choice.message, "refusal", None) or ""
        usage = response.usage
        return Completion(
            text=text,
            model=response.model or request["model"],
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            meta={"finish_reason": choice.finish_reason},
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
        request.update(stream=True, stream_options={"include_usage": True})
        final = Completion("", request["model"])
        try:
            chunks = await self.client.chat.completions.create(**request)
            async with chunks:
                async for chunk in chunks:
                    final.model = chunk.model or final.model
                    if chunk.usage is not None:  # the last chunk, thanks to include_usage
                        final.prompt_tokens = chunk.usage.prompt_tokens
                        final.completion_tokens = chunk.usage.completion_tokens
                    for choice in chunk.choices:
                        if choice.delta.content:
                            yield choice.delta.content
        except openai.OpenAIError as exc:
            raise self._error(exc, request["model"]) from exc
        fill_usage(usage, final)

    async def check(self) -> str:
        """Verify the server answers and serves every configured model; returns a one-line summary.

        Raises:
            LLMUnavailable: unreachable, key rejected, or a configured model is not served.
            LLMTimeout: the server did not answer in time.
        """
        try:
            served = {model.id async for model in self.client.models.list()}
        except openai.OpenAIError as exc:
            raise self._error(exc, self.model) from exc
        wanted = sorted({self.model, *self.role_models.values()})
        missing = [name for name in wanted if name not in served]
        if missing:
            message = f"{self.name} at {self.base_url} does not serve {', '.join(missing)}"
            raise LLMUnavailable(message, retryable=False, details={"served": sorted(served)[:20]})
        return f"{self.name} at {self.base_url}: {', '.join(wanted)} available"

    async def aclose(self) -> None:
        await self.client.close()


class VLLMLLM(OpenAILLM):
    """vLLM's OpenAI-compatible server. The schema goes both as `response_format` and as vLLM's own
    structured-outputs parameter, so decoding is constrained whichever of the two the server honours.
    """

    name = "vllm"
    key_setting = "VLLM_API_KEY"

    @classmethod
    def from_settings(cls, settings: Settings) -> VLLMLLM:
        return cls(
            api_key=settings.vllm_api_key.get_secret_value() or "EMPTY",
            model=settings.vllm_model,
            base_url=settings.vllm_base_url,
            role_models=models_by_role(settings, settings.vllm_model),
            timeout_s=settings.llm_timeout_s,
            temperature=settings.llm_temperature,
            seed=settings.llm_seed,
        )

    def request(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        request = super().request(messages, options, schema)
        if schema is not None:
            # vLLM >= 0.12 removed `guided_json`; the current name is `structured_outputs: {"json": ...}`
            # (https://docs.vllm.ai/en/latest/features/structured_outputs/).
            request["extra_body"] = {"structured_outputs": {"json": schema}}
        return request
