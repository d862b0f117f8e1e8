"""The interview: an agent answers a question from its memory and nothing it remembers changes."""
