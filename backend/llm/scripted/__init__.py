"""The scripted engine (deterministic, offline). Writers per reply schema live in `writers/`."""

from backend.llm.scripted.engine import ScriptedLLM, WriterContext, fill_schema

__all__ = ["ScriptedLLM", "WriterContext", "fill_schema"]
