"""Persisted background jobs: rows written with what they are about, run by a runner in each worker process
(and in a single "all" process); API processes only commit them. Claims take leases (runner.py), so any
number of runners share one database.

Owns: the `job` table (models.py; all of its SQL in repo.py) and the runner (runner.py), a registry of
handlers by job kind. The jobs layer knows no handler: each concept defines its kinds and payloads (e.g.
conversation/jobs.py, memory/jobs.py) and the app registers their handlers on its one runner (backend/app.py).

Imports: storage, config, gametime, tasks (nothing above the infrastructure layer).
"""
