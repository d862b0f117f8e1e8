"""HTTP routers. The only layer that knows about status codes.

Owns: no tables. It turns requests into calls on the concepts' services and repositories and their answers
(and `MachiError`s, `errors.py`) into HTTP; `deps.py` holds the `Annotated[..., Depends]` aliases routes get
their session, settings and services from.
Imports: security, the concepts below it (conversation, council, planning, interview, intention, memory,
emotion, world, llm, events, jobs, storage) and the basics (config, errors, gametime, ids, tasks). Never
app, cli or protocol (the wire contract is exported from the models declared here and in the concepts).
"""
