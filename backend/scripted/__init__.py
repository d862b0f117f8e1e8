"""The scripted engine (deterministic, offline). Writers per reply schema live in `writers/`.

Owns: no tables and no state beyond an engine's own queue and history; one writer per reply schema.
Imports: llm (the interface it implements), config, text, and the domain rules its writers follow:
emotion.plutchik, intention.appointment, memory.topics, planning.schemas / planning.validation. Nothing
imports it but the LLM registry (by import path, lazily), tests and benchmarks.
"""

from backend.scripted.engine import ScriptedLLM, WriterContext, fill_schema

__all__ = ["ScriptedLLM", "WriterContext", "fill_schema"]
