"""Emotion: Plutchik's eight values per agent, re-evaluated in the background.

Owns: the `emotionrecord` table (all its SQL in repo.py). The current emotion is the newest evaluation
decayed toward the agent's baseline up to a game time (`EmotionService.current`): the one every reader that
needs an emotion *now* uses. `repo.newest` is that record as evaluated (the agent's detail shows it with its
own day and time); both read the same statement, so they never disagree about which record is newest.
Imports: world (models), llm, events, storage, tasks, config, errors, gametime. Imported by conversation,
planning, council, transfer, api.
"""
