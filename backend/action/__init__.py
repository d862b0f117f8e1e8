"""Action: what a character does in the world besides talking (see README.md).

Owns: the action vocabulary (schemas.py), its prompt text (prompts.py), checking a reply's actions against the
world (validate.py) and an action's reported outcome as the agent's memory (result.py). No tables.
Imports: memory, world, player (sideways and below), and the basics (config, errors, ids, text).
"""
