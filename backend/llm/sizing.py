"""Features sized to the model: a model under a feature's floor (billions of parameters) runs without it.

The smallest models (the packaged SmolLM2-135M and Gemma 3 270M) cannot yet do some jobs worth their cost:
pick an action (ACTIONS_MIN_MODEL_B), rewrite a character's intentions each morning
(INTENTION_REVISION_MIN_MODEL_B). The size is what the provider knows (`llm.base.parameter_count`:
llama.cpp's count of the GGUF); a model of unknown size (Ollama, OpenAI-compatible) keeps every feature.
"""

from __future__ import annotations

import logging

from backend.config import Settings


def switched_off_under(
    settings: Settings,
    *,
    flag: str,
    floor_setting: str,
    what: str,
    parameters: int | None,
    model: str,
    log: logging.Logger,
) -> Settings:
    """`settings` with the boolean setting `flag` off when `parameters` is under the floor the setting
    `floor_setting` gives in billions (0: never off); one start-up line says so, and why."""
    if not getattr(settings, flag):
        log.info("%s are off: %s=false", what, flag.upper())
        return settings
    floor = float(getattr(settings, floor_setting))
    if floor <= 0 or parameters is None or parameters >= floor * 1e9:
        return settings
    log.warning(
        "%s are off: %s has %.3g billion parameters, under %s=%g (set it to 0 to have them anyway)",
        what, model, parameters / 1e9, floor_setting.upper(), floor,
    )  # fmt: skip
    return settings.model_copy(update={flag: False})
