"""Emotion: Plutchik's eight values per agent, re-evaluated in the background."""
