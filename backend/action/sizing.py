"""Actions sized to the model: a model under ACTIONS_MIN_MODEL_B billion parameters is asked without them.

The smallest models (the packaged SmolLM2-135M and Gemma 3 270M) cannot yet pick an action worth doing, and
the actions field costs them prompt and reply tokens and the line's quality. The size is what the provider
knows (`llm.base.parameter_count`: llama.cpp's count of the GGUF); a model of unknown size keeps them.
"""

from __future__ import annotations

import logging

from backend.config import Settings
from backend.llm.sizing import switched_off_under

log = logging.getLogger(__name__)


def actions_for_model(settings: Settings, parameters: int | None, model: str = "the model") -> Settings:
    """`settings`, with ACTIONS_IN_TURNS off when `parameters` is under ACTIONS_MIN_MODEL_B billion; one
    start-up line says when turns are asked without actions, and why."""
    return switched_off_under(
        settings, flag="actions_in_turns", floor_setting="actions_min_model_b", what="actions in turns",
        parameters=parameters, model=model, log=log,
    )  # fmt: skip
