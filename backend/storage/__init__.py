"""Storage: the SQLModel engine, sessions and additive migrations.

Owns: `machi_flight` (named leases: single-flight work across processes, `flights.py`); the engine and
sessions, the schema's additive migrations (under a migration lock), the database's process lock (servers
and workers shared, rewriting commands alone), the batched pruning of the tables it is given
(`retention.Rule`, wired in app.py) and the fast-path row builder (`rows.py`).
Imports: the basics (config, errors, gametime, tasks); no concept's models (`db.MODEL_MODULES` names them
by import path). Its `cli.py` (`machi db vacuum`) is an entry point and takes the rules from app.
"""
