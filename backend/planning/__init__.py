"""Planning: each agent's daily plan, validated against the world before it is stored.

Owns: the `plan` table (all its SQL in repo.py), the plan work under way per agent and day (planner.py) and
"the plan item at a time" (`service.item_at`, `service.activity_at`: the one reading of a plan by the clock,
for plan/now, the agent's detail and a turn's prompt).
Imports: world, memory, emotion, intention (services given to it), llm, events, storage, tasks, errors,
gametime. Imported by conversation (the speaker's activity), transfer, api.
"""
