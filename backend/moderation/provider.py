"""The provider's moderation endpoint (OpenAI's `/moderations`), through the official `openai` client.

It fails open: an error or a call past its deadline blocks nothing (a visitor at a booth would otherwise meet
a character that refuses every line while the network is down), and says why in `error` for the trace. The
word list runs before it whatever the provider does.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import openai

log = logging.getLogger(__name__)
DEFAULT_MODEL = "omni-moderation-latest"
#: The longest error text a verdict keeps (the trace shows it; a server's error body can be long).
MAX_ERROR_CHARS = 200


@dataclass(frozen=True)
class ProviderAnswer:
    """What the provider said: flagged with its top category, or not, or `error` (not flagged, fail open)."""

    flagged: bool
    #: Machi's category for the top flagged one ("self-harm/intent" -> "self_harm"), when flagged.
    category: str | None = None
    #: The provider's own name of that category and its score, for the trace ("self-harm/intent 0.93").
    detail: str | None = None
    error: str | None = None


class ProviderModeration:
    """One `moderations.create` call per text, with a deadline over the whole call."""

    def __init__(
        self, client: openai.AsyncOpenAI, *, model: str = DEFAULT_MODEL, timeout_s: float = 2.0
    ) -> None:
        self.client = client
        self.model = model
        self.timeout_s = timeout_s

    @classmethod
    def connect(
        cls,
        *,
        api_key: str,
        base_url: str | None = None,
        model: str = DEFAULT_MODEL,
        timeout_s: float = 2.0,
        http_client: Any = None,
    ) -> ProviderModeration:
        """A client for the provider (no retries: a retry would blow the deadline of the turn waiting on it).

        Args:
            api_key: OPENAI_API_KEY.
            base_url: OPENAI_BASE_URL, or None for OpenAI's.
            model: the moderation model (MODERATION_MODEL).
            timeout_s: the most one check may take (MODERATION_TIMEOUT_S).
            http_client: an `httpx.AsyncClient` to send through (tests pass one with a mock transport).
        """
        client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s, http_client=http_client
        )
        return cls(client, model=model, timeout_s=timeout_s)

    async def check(self, text: str) -> ProviderAnswer:
        """The provider's verdict on `text`; never raises for the provider's failures (see the module)."""
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self.client.moderations.create(model=self.model, input=text)
            return _answer(response.results[0])
        except TimeoutError:
            return _failed(f"timeout: no answer within {self.timeout_s:g}s")
        except openai.APIStatusError as exc:
            return _failed(f"status {exc.status_code}: {exc.message}")
        except openai.APITimeoutError:
            return _failed(f"timeout: no answer within {self.timeout_s:g}s")
        except (openai.OpenAIError, IndexError, AttributeError, ValueError) as exc:
            # A connection error, or an answer of another shape (a server that is not OpenAI's).
            return _failed(f"{type(exc).__name__}: {exc}")


def _failed(error: str) -> ProviderAnswer:
    error = error[:MAX_ERROR_CHARS]
    log.warning("moderation provider failed, text allowed (word list only): %s", error)
    return ProviderAnswer(flagged=False, error=error)


def _answer(result: Any) -> ProviderAnswer:
    """The top flagged category (highest score among those flagged) of one moderation result."""
    if not result.flagged:
        return ProviderAnswer(flagged=False)
    flags: dict[str, Any] = result.categories.model_dump(by_alias=True)
    scores: dict[str, Any] = result.category_scores.model_dump(by_alias=True)
    flagged = [name for name, on in flags.items() if on]
    if not flagged:  # flagged overall, yet no category says why
        return ProviderAnswer(flagged=True, category="flagged", detail="flagged")
    top = max(flagged, key=lambda name: scores.get(name) or 0.0)
    score = scores.get(top)
    detail = top if score is None else f"{top} {score:.2f}"
    return ProviderAnswer(flagged=True, category=category_name(top), detail=detail)


def category_name(provider_name: str) -> str:
    """Machi's category for a provider's ("hate/threatening" -> "hate", "self-harm/intent" -> "self_harm")."""
    return provider_name.split("/", 1)[0].replace("-", "_").strip() or "flagged"
