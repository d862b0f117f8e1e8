"""Intentions: what each agent means to do (the Generative Agents paper's "currently"), whispers (its inner
voice), appointments read from them, and what it told to whom.

Owns the `intention` and `told` tables. Imports memory (a whisper is a memory), world, llm, text; is imported
by conversation (the turn prompt carries the intentions and one untold item), planning (the morning revision,
appointments kept in plans) and api.
"""
