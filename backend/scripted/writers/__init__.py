"""Writers for the scripted engine, discovered by scanning this folder.

Each module defines `WRITERS: dict[str, Callable[[WriterContext], Any]]`, keyed by the reply schema's title
(the pydantic class name, e.g. "TurnReply") or by "text:<purpose>" for free-text calls. Adding a module is
all it takes; there is no registration code.
"""
