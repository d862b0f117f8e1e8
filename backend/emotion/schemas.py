"""Emotion schemas: what the model returns, and what the API serves."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


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
    label: str = Field(min_length=1, max_length=32, description="one word in the character's language")

    def values(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.model_dump(exclude={"label"}).items()}


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
