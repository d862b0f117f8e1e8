"""Emotion schemas: what the model returns, and what the API serves."""

from __future__ import annotations

import functools
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from backend.emotion.plutchik import CALM_LABEL, DYADS, INTENSITY_LABELS

#: The longest label the wheel has is 14 characters ("aggressiveness").
LABEL_MAX_CHARS = 16
_LABEL_HELP = "one word in the character's language"


class EmotionEvaluation(BaseModel):
    """The emotion model's reply: Plutchik's eight values (0-100) and a one-word label."""

    joy: int = Field(ge=0, le=100)
    trust: int = Field(ge=0, le=100)
    fear: int = Field(ge=0, le=100)
    surprise: int = Field(ge=0, le=100)
    sadness: int = Field(ge=0, le=100)
    disgust: int = Field(ge=0, le=100)
    anger: int = Field(ge=0, le=100)
    anticipation: int = Field(ge=0, le=100)
    label: str = Field(min_length=1, max_length=LABEL_MAX_CHARS, description=_LABEL_HELP)

    def values(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.model_dump(exclude={"label"}).items()}


def label_language(language: str | None) -> str:
    """The label language of `language`: "en" or "ja", the two vocabularies the wheel has."""
    return "en" if str(language or "ja").startswith("en") else "ja"


@functools.cache
def label_vocabulary(language: str) -> tuple[str, ...]:
    """Every label `plutchik.label` can give in `language`: calm, the intensity words, the dyads."""
    lang = label_language(language)
    words = [CALM_LABEL[lang]]
    for intensities in INTENSITY_LABELS[lang].values():
        words += intensities
    words += [names[lang] for names in DYADS.values()]
    return tuple(dict.fromkeys(words))


@functools.cache
def evaluation_for(language: str) -> type[EmotionEvaluation]:
    """The EmotionEvaluation sent for a character of `language`: its schema lists that language's labels.

    Only the schema is narrowed: a word outside it still validates, and the service then labels the
    values itself (backend/emotion/service.py), so an unruly label never costs the evaluation.
    """
    words = label_vocabulary(language)

    class EmotionEvaluationFor(EmotionEvaluation):
        __doc__ = EmotionEvaluation.__doc__  # the schema's description
        model_config = ConfigDict(title="EmotionEvaluation")

        label: str = Field(
            min_length=1,
            max_length=LABEL_MAX_CHARS,
            description=_LABEL_HELP,
            json_schema_extra={"enum": list(words)},
        )

    return EmotionEvaluationFor


class EmotionState(BaseModel):
    agent_id: str
    values: dict[str, float] = Field(
        description="joy, trust, fear, surprise, sadness, disgust, anger, anticipation (0-100)"
    )
    label: str
    vrm_emotion: str = Field(description="the VRM 1.0 expression preset these values map to")
    baseline: dict[str, float]
    day: int
    time_of_day: float
    updated_at: datetime | None = None
    cause: str | None = None
    evaluated: bool = Field(description="false while the agent is still at its resting baseline")


class EmotionHistory(BaseModel):
    agent_id: str
    history: list[EmotionState]
