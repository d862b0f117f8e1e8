"""Moderation of untrusted visitor text and of the replies that answer it (see README.md).

Owns: the word list and its folding, the provider's moderation call, the prompt-echo check, the deflection
lines, and what is kept of invisible characters in visitor text (`clean`, `is_blank`).
Imports: config and errors only (never conversation or api, which call it).
"""

from backend.moderation.deflection import deflection
from backend.moderation.echo import echoes_prompt
from backend.moderation.folding import fold
from backend.moderation.invisible import clean, is_blank, visible
from backend.moderation.provider import ProviderAnswer, ProviderModeration
from backend.moderation.service import (
    DEFAULT_WORDS_FILE,
    ModerationSettings,
    Moderator,
    Verdict,
    build_moderator,
    load_word_list,
)
from backend.moderation.wordlist import Hit, WordList

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
    "clean",
    "deflection",
    "echoes_prompt",
    "fold",
    "is_blank",
    "load_word_list",
    "visible",
]
