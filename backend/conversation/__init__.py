"""Conversation: turns between two agents, end rules, transcripts.

Owns: the `conversation` and `turn` tables (models.py; all of their SQL in repo.py), the conversation job
kinds and payloads (jobs.py; their handlers are in aftermath.py, registered on the app's job runner in
backend/app.py).

Imports: memory, emotion, intention, world (agents, the agent cache), llm, events, jobs, storage, and the
basics (config, errors, gametime, text, ids, logs, tasks). Not planning: the speaker's plan item comes
through a function the app passes in. Errors are raised as backend.errors; api/ maps them to HTTP answers
and stream events.
"""
