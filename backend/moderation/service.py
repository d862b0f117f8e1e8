"""`Moderator`: the check a visitor's line passes before the model sees it, and a reply before Unity does.

The word list runs first (local, instant, the operator's own), then the provider's endpoint when one is
configured (MODERATION_PROVIDER). A reply is also checked for quoting its own prompt (`echoes_prompt`). A
blocked line is answered with `deflection(...)`; the verdict's `matched` and `error` are for the trace and
logs only, never for Unity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from backend.config import Settings, settings_subset
from backend.errors import ConfigError
from backend.moderation.deflection import deflection
from backend.moderation.echo import echoes_prompt
from backend.moderation.provider import ProviderModeration
from backend.moderation.wordlist import WordList

__all__ = [
    "DEFAULT_WORDS_FILE",
    "ModerationSettings",
    "Moderator",
    "Verdict",
    "build_moderator",
    "deflection",
    "echoes_prompt",
    "load_word_list",
]

#: The bundled list, used when MODERATION_WORDS_FILE is unset.
DEFAULT_WORDS_FILE = Path(__file__).with_name("words.txt")


@dataclass(frozen=True)
class Verdict:
    """Whether a text may pass, and for the trace why not (or why the provider could not say)."""

    allowed: bool
    #: What decided: "word_list", "provider" or "prompt_echo"; None when nothing had anything to say.
    source: str | None = None
    #: The category of what matched ("sexual", "hate", "self_harm", ...), when blocked.
    category: str | None = None
    #: The list entry, or the provider's category and score: for the trace only, never sent to Unity.
    matched: str | None = None
    #: Why the provider gave no verdict (the text was allowed: fail open); None when it answered.
    error: str | None = None


ALLOWED = Verdict(allowed=True)


@dataclass(frozen=True)
class ModerationSettings:
    """The settings moderation reads (derived from `Settings` in create_app; same names)."""

    moderation: bool = True
    moderation_words_file: Path | None = None
    moderation_provider: str = "none"
    moderation_model: str = "omni-moderation-latest"
    moderation_timeout_s: float = 2.0
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> ModerationSettings:
        return settings_subset(cls, settings)


class Moderator:
    """Built once in create_app (`build_moderator`); `check` a visitor's line, `check_reply` a model's."""

    def __init__(
        self,
        words: WordList | None = None,
        provider: ProviderModeration | None = None,
        *,
        enabled: bool = True,
    ) -> None:
        self.words = words
        self.provider = provider
        self.enabled = enabled

    def check_words(self, text: str) -> Verdict:
        """The word list alone (local, instant): for a streamed line so far, and lines among characters."""
        if not self.enabled or self.words is None or not text.strip():
            return ALLOWED
        hit = self.words.find(text)
        if hit is None:
            return ALLOWED
        return Verdict(allowed=False, source="word_list", category=hit.category, matched=hit.word)

    async def check(self, text: str) -> Verdict:
        """The word list, then the provider when configured: the first that blocks decides."""
        if not self.enabled or not text.strip():
            return ALLOWED
        listed = self.check_words(text)
        if not listed.allowed:
            return listed
        if self.provider is None:
            return ALLOWED
        answer = await self.provider.check(text)
        if answer.flagged:
            return Verdict(allowed=False, source="provider", category=answer.category, matched=answer.detail)
        return Verdict(allowed=True, source="provider" if answer.error else None, error=answer.error)

    async def check_reply(
        self, reply: str, prompt_texts: Sequence[str], *, names: Iterable[str] = ()
    ) -> Verdict:
        """A model's reply: not a recital of its own prompt (`echoes_prompt`), then `check`.

        Args:
            reply: the line the character would say.
            prompt_texts: the system message (persona and rules); never the quoted transcript.
            names: the speaker's names (left out of the comparison).
        """
        if self.enabled and echoes_prompt(reply, prompt_texts, names=names):
            return Verdict(allowed=False, source="prompt_echo")
        return await self.check(reply)

    async def aclose(self) -> None:
        """Close the provider's HTTP client (create_app's lifespan, at shutdown)."""
        if self.provider is not None:
            await self.provider.client.close()


def load_word_list(path: Path | None = None) -> WordList:
    """The operator's list at `path` (MODERATION_WORDS_FILE), or the bundled one.

    Raises:
        ConfigError: the file cannot be read.
    """
    return WordList.from_file(path or DEFAULT_WORDS_FILE)


def build_moderator(settings: ModerationSettings | Settings, *, http_client: Any = None) -> Moderator:
    """The moderator the settings describe (a disabled one for MODERATION=false).

    Args:
        settings: the moderation settings (or the whole `Settings`, whose subset is taken).
        http_client: an `httpx.AsyncClient` for the provider's calls (tests: a mock transport).

    Raises:
        ConfigError: the word list cannot be read, or MODERATION_PROVIDER=openai without OPENAI_API_KEY.
    """
    if isinstance(settings, Settings):
        settings = ModerationSettings.of(settings)
    if not settings.moderation:
        return Moderator(enabled=False)
    words = load_word_list(settings.moderation_words_file)
    if settings.moderation_provider != "openai":
        return Moderator(words)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    if not key:
        raise ConfigError("OPENAI_API_KEY is required when MODERATION_PROVIDER is openai")
    provider = ProviderModeration.connect(
        api_key=key,
        base_url=settings.openai_base_url,
        model=settings.moderation_model,
        timeout_s=settings.moderation_timeout_s,
        http_client=http_client,
    )
    return Moderator(words, provider)
