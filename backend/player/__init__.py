"""Player: a visitor (a person at the booth, not an agent) who talks with the characters.

Owns: the `player` table (all its SQL in repo.py): a display name and language, when the visitor was last
seen, and the wall-clock times of their latest lines (the per-visitor and per-world rate limits, counted in
the database so that every API process shares them).
A player has no plan, emotion or memory stream of its own; the agents it talks with keep person memory of it
under its id (`player:...`), so a returning visitor is recognised within a world.
Imports: storage, errors, gametime, ids.
"""
