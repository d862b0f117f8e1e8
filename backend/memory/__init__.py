"""Memory: the per-agent memory stream, retrieval scoring and reflections."""
