"""World: agents (personas and their reported state), points of interest and the world's own bookkeeping.

Owns: the `agent`, `point_of_interest`, `agent_state_event` and `world_meta` tables (all their SQL in
repo.py) and the agent cache (cache.py).
Imports: events, storage, errors, gametime, ids. No other domain concept: memory, emotion, intention,
planning, conversation and council import world; what joins world with them (an agent's detail with its
plan item and emotion, removing an agent with its mind, arrivals as memories) is composed above it (api/).
"""
