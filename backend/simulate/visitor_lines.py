"""What the scripted visitors of `machi simulate --visitors N` say, in Japanese and in English.

A visit is a greeting, one or two lines of small talk and a farewell that the server's farewell rule knows
(FAREWELL_PHRASES: またね, bye...), so the agent's reply to it ends the conversation. `{name}` is the agent's
display name. A rough line holds an entry of backend/moderation/words.txt, as a booth sometimes hears: the
server holds it back and the agent deflects, which the summary counts.
"""

from __future__ import annotations

import random

GREETINGS: dict[str, list[str]] = {
    "ja": ["こんにちは、{name}さん！", "はじめまして！{name}さんですか？", "あ、{name}さんだ。こんにちは！"],
    "en": ["Hello, {name}!", "Hi there! Are you {name}?", "Good day, {name}. Nice to meet you!"],
}
SMALL_TALK: dict[str, list[str]] = {
    "ja": [
        "この町でおすすめの場所はありますか？",
        "今日は何をしているんですか？",
        "いい天気ですね。",
        "このあたりに美味しいお店はありますか？",
        "最近、町で何か面白いことはありましたか？",
    ],
    "en": [
        "What is your favourite place in this town?",
        "What are you up to today?",
        "Lovely weather, isn't it?",
        "Is there a good place to eat around here?",
        "Has anything interesting happened in town lately?",
    ],
}
FAREWELLS: dict[str, list[str]] = {
    "ja": ["ありがとう、またね！", "じゃあね！", "また来ます、バイバイ！"],
    "en": ["Thanks, bye!", "Bye!", "See you later, goodbye!"],
}
ROUGH: dict[str, list[str]] = {
    "ja": ["うるさいな、死ね！"],
    "en": ["This town is shit."],
}


def visit_lines(rng: random.Random, language: str, agent_name: str, *, rough: bool = False) -> list[str]:
    """The lines of one visit: a greeting, one or two of small talk (one of them rough when `rough`), a
    farewell."""
    lang = language if language in GREETINGS else "ja"
    talk = rng.sample(SMALL_TALK[lang], rng.randint(1, 2))
    if rough:
        talk[rng.randrange(len(talk))] = rng.choice(ROUGH[lang])
    greeting = rng.choice(GREETINGS[lang]).format(name=agent_name)
    return [greeting, *talk, rng.choice(FAREWELLS[lang])]


def farewell(rng: random.Random, language: str) -> str:
    """A farewell line (the agent has to go: the visitor says goodbye early)."""
    return rng.choice(FAREWELLS[language if language in FAREWELLS else "ja"])
