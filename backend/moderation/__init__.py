"""Moderation of untrusted visitor text and of the replies that answer it (see README.md).

Owns: the word list, the provider's moderation call, the prompt-echo check, the deflection lines.
Imports: config and errors only (never conversation or api, which call it).
"""

from backend.moderation.deflection import deflection
from backend.moderation.echo import echoes_prompt
from backend.moderation.provider import ProviderAnswer, ProviderModeration
from backend.moderation.service import (
    DEFAULT_WORDS_FILE,
    ModerationSettings,
    Moderator,
    Verdict,
    build_moderator,
    load_word_list,
)
from backend.moderation.wordlist import Hit, WordList, fold

__all__ = [
    "DEFAULT_WORDS_FILE",
    "Hit",
    "ModerationSettings",
    "Moderator",
    "ProviderAnswer",
    "ProviderModeration",
    "Verdict",
    "WordList",
    "build_moderator",
    "deflection",
    "echoes_prompt",
    "fold",
    "load_word_list",
]
