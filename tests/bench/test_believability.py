"""The party bench says plainly that the scripted engine's figures are a ceiling, not a model's."""

from __future__ import annotations

from bench.believability import caveat


def test_scripted_figures_are_printed_as_the_mechanisms_ceiling() -> None:
    note = caveat("scripted")
    assert note is not None and "ceiling" in note and "by construction" in note
    assert caveat("llamacpp") is None and caveat("ollama") is None
