"""Storage: the SQLModel engine, sessions and additive migrations.

Owns: no table of its own; the engine and sessions, the schema's additive migrations, the one-server lock
file, the batched pruning of the tables it is given (`retention.Rule`, wired in app.py) and the fast-path
row builder (`rows.py`).
Imports: the basics (config, errors, gametime, tasks); no concept's models (`db.MODEL_MODULES` names them
by import path). Its `cli.py` (`machi db vacuum`) is an entry point and takes the rules from app.
"""
