"""Actions sized to the model: a model under ACTIONS_MIN_MODEL_B billion parameters is asked without them.

The smallest models (the packaged SmolLM2-135M and Gemma 3 270M) cannot yet pick an action worth doing, and
the actions field costs them prompt and reply tokens and the line's quality. The size is what the provider
knows (`llm.base.parameter_count`: llama.cpp's count of the GGUF); a model of unknown size keeps them.
"""

from __future__ import annotations

import logging

from backend.config import Settings

log = logging.getLogger(__name__)


def actions_for_model(settings: Settings, parameters: int | None, model: str = "the model") -> Settings:
    """`settings`, with ACTIONS_IN_TURNS off when `parameters` is under ACTIONS_MIN_MODEL_B billion; one
    start-up line says when turns are asked without actions, and why."""
    if not settings.actions_in_turns:
        log.info("actions in turns are off: ACTIONS_IN_TURNS=false")
        return settings
    floor = settings.actions_min_model_b
    if floor <= 0 or parameters is None or parameters >= floor * 1e9:
        return settings
    log.warning(
        "actions in turns are off: %s has %.3g billion parameters, under ACTIONS_MIN_MODEL_B=%g (set it to 0 "
        "to ask for actions anyway)",
        model, parameters / 1e9, floor,
    )  # fmt: skip
    return settings.model_copy(update={"actions_in_turns": False})
