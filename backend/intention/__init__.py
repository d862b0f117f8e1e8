"""Intentions: what each agent means to do (the Generative Agents paper's "currently"), whispers (its inner
voice), appointments read from them, and what it told to whom.

Owns: the `intention` and `told` tables (all their SQL in repo.py; agents' names and places are read through
world/repo.py, and the one read of memory's table, the rating of heard news, is in repo.py until memory's
repository offers it).
Imports: memory (a whisper is a memory), world, llm, storage, config, errors, gametime, text. Imported by
conversation (the turn prompt carries the intentions and one untold item), planning (the morning revision,
appointments kept in plans), transfer and api.
"""
