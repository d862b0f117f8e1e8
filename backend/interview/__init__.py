"""The interview: an agent answers a question from its memory and nothing it remembers changes.

Owns: no table and no state (an interview writes nothing; the model call's trace row is the llm layer's).

Imports: memory (retrieval, person memory), conversation (language rules, prompt pieces), world (the agent),
llm, config, errors.
"""
