"""The scripted engine's everyday talk: greetings by time of day, small talk, goodbyes, and polite
(敬語/丁寧/polite in the speaking style) or casual endings. Used by the dialogue writer."""

from __future__ import annotations

from typing import Any

from backend.scripted.engine import WriterContext

_POLITE_MARKS = ("敬語", "丁寧", "です", "ます", "polite", "formal")


def is_polite(facts: dict[str, Any]) -> bool:
    style = str((facts.get("speaker") or {}).get("speaking_style") or "").lower()
    return any(mark in style for mark in _POLITE_MARKS)


def end(ctx: WriterContext, polite: str, casual: str) -> str:
    return polite if is_polite(ctx.facts) else casual


def greeting(ctx: WriterContext, partner: str, hour: float) -> str:
    if ctx.ja:
        word = "おはよう" if hour < 11 else ("こんばんは" if hour >= 18 else "こんにちは")
        if word == "おはよう" and is_polite(ctx.facts):
            word = "おはようございます"
        name = f"{partner}{end(ctx, 'さん', '')}"
        # One sentence each, with the name: a bare "こんにちは。" is every greeting of the day.
        return str(ctx.pick([f"{word}、{name}！", f"あ、{name}、{word}。", f"{name}、{word}！"]))
    word = "Good morning" if hour < 11 else ("Good evening" if hour >= 18 else "Hi")
    return str(
        ctx.pick(
            [f"{word}, {partner}!", f"Oh, {word.lower()}, {partner}!", f"Hey {partner}, {word.lower()}."]
        )
    )


#: Small talk by time of day (morning, afternoon, evening), when nothing else is left to say.
_SMALL_TALK = {
    "ja": (
        [
            "今日はいい日になりそう{だね}。",
            "朝の空気って気持ちいい{よね}。",
            "今朝はちょっと寝坊しちゃった{んだ}。",
        ],
        ["お昼、何を食べようか迷ってる{んだ}。", "午後はのんびりしたい{な}。", "今日は日差しが強い{ね}。"],
        ["今日もあっという間だった{ね}。", "夕焼けがきれいだった{ね}。", "夜は少し冷えそう{だね}。"],
    ),
    "en": (
        ["It feels like a good day today.", "The morning air is lovely.", "I almost overslept this morning."],
        ["I can't decide what to have for lunch.", "I'd like a slow afternoon.", "The sun is strong today."],
        ["The day went by so fast.", "Did you see the sunset?", "It might get chilly tonight."],
    ),
}
_POLITE_ENDS = {
    "{だね}": "ですね",
    "{よね}": "ですよね",
    "{んだ}": "んです",
    "{な}": "です",
    "{ね}": "ですね",
}
_CASUAL_ENDS = {"{だね}": "だね", "{よね}": "よね", "{んだ}": "んだ", "{な}": "な", "{ね}": "ね"}


def small_talk(ctx: WriterContext) -> str:
    hour = float(ctx.facts.get("time_of_day") or 12.0)
    part = 0 if hour < 11 else (1 if hour < 17 else 2)
    line = str(ctx.pick(_SMALL_TALK[ctx.language][part]))
    partner = str((ctx.facts.get("partner") or {}).get("name") or "")
    if partner:  # said to this partner: "ねえ葵、今日はいい日になりそうだね。"
        opener = (
            ctx.pick([f"ねえ{you(ctx, partner)}、", f"{you(ctx, partner)}、", "そういえば、"])
            if ctx.ja
            else ""
        )
        keep = line.startswith(("I ", "I'"))
        line = opener + line if ctx.ja else f"{partner}, {line if keep else line[:1].lower() + line[1:]}"
    for mark, end in (_POLITE_ENDS if is_polite(ctx.facts) else _CASUAL_ENDS).items():
        line = line.replace(mark, end)
    return line


def you(ctx: WriterContext, partner: str) -> str:
    """How the speaker addresses the partner: "葵さん" (polite) or "葵"; the name itself in English."""
    if not ctx.ja:
        return partner
    return f"{partner}{end(ctx, 'さん', '')}" if partner else "ねえ"


def part_of_day(ctx: WriterContext) -> str:
    """The part of the day in the speaker's words ("朝", "お昼", "夕方", "夜"; "morning"...)."""
    hour = float(ctx.facts.get("time_of_day") or 12.0)
    index = 0 if hour < 11 else (1 if hour < 15 else (2 if hour < 19 else 3))
    return (("朝", "お昼", "夕方", "夜") if ctx.ja else ("morning", "afternoon", "evening", "night"))[index]


def goodbye(ctx: WriterContext, partner: str, leaving: bool) -> str:
    """One sentence with the partner's name (and, leaving, the plan item it leaves for)."""
    activity = ctx.facts.get("plan_activity")
    name = you(ctx, partner)
    if ctx.ja:
        if leaving and activity:
            head = ctx.pick([f"あ、{name}、そろそろ「{activity}」の時間だから、", f"いけない{name}、このあと「{activity}」なんだった、",
                             f"もうこんな時間だ、{name}、「{activity}」に向かわなきゃ、", f"{name}、ごめん、「{activity}」があるから、"])  # fmt: skip
            # Half the time without a goodbye phrase: the talk then ends by the model's own choice ("model").
            return head + ctx.pick(
                ["またね！", "もう行かなくちゃ！", "今日はこれで、またね！", "ごめん、もう行くね。"]
            )
        return str(ctx.pick([f"話せて楽しかった、またね、{name}！", f"じゃあ{name}、またね！", f"うん、{name}、また明日ね。",
                             f"今日はありがとう、{name}、またね！", f"{name}、また話そうね、じゃあね！",
                             f"{name}、またゆっくり話そう、またね！"]))  # fmt: skip
    if leaving and activity:
        head = ctx.pick([f"Oh, {partner}, it's almost time to {activity}, so", f"Oops, {partner}, I still have to {activity}, so",
                         f"Look at the time, {partner}, I need to {activity}, so"])  # fmt: skip
        return head + " " + ctx.pick(["see you!", "bye for now!", "I have to run!", "I must go now."])
    return str(ctx.pick([f"It was nice talking, {partner}, see you!", f"Alright {partner}, bye for now!",
                         f"See you tomorrow, {partner}.", f"Thanks for the chat, {partner}, bye!",
                         f"Let's talk again soon, {partner}, see you!", f"Take care, {partner}, goodbye!"]))  # fmt: skip
