"""Scripted writer for conversation turns (`TurnReply`): a short in-character line from the turn's facts.

It greets by time of day on the first line, picks up a word from the partner's last line, brings up the
place, the speaker's plan, a memory or a topic from its backstory (never one it already used in this
conversation), says goodbye when the partner did, and after a few turns sometimes (deterministically,
from the seeded random source) wraps up and says goodbye itself. Polite speakers (敬語/丁寧/polite in their
speaking style) get です/ます endings.
"""

from __future__ import annotations

import re
from typing import Any

from backend.emotion.plutchik import CALM_LABEL, INTENSITY_LABELS
from backend.intention.appointment import find_hour
from backend.llm.echo import prompt_lines
from backend.scripted import news
from backend.scripted.engine import WriterContext
from backend.text import keywords, normalise

#: From this turn on the speaker may decide to leave; the chance per turn.
LEAVE_FROM_TURN = 4
LEAVE_CHANCE = 0.25
_POLITE_MARKS = ("敬語", "丁寧", "です", "ます", "polite", "formal")
_SAD_WORDS = ("疲れ", "悲し", "寂し", "つらい", "落ち込", "tired", "sad", "lonely", "rough")
#: Words too common to make a topic of (including the ones these templates themselves use, so the
#: partner's echo of a template never becomes the next topic).
_COMMON = frozenset(
    "一番 今日 明日 昨日 最近 本当 時間 自分 前話 話 話題 絶対 今朝 今夜 今度 一緒 thing things lately today really "
    "something wait sounds great nice remember planning hello morning evening didn't talking "
    "tomorrow alright about think thinking feels stop".split()
)


def _polite(facts: dict[str, Any]) -> bool:
    style = str((facts.get("speaker") or {}).get("speaking_style") or "").lower()
    return any(mark in style for mark in _POLITE_MARKS)


def _end(ctx: WriterContext, polite: str, casual: str) -> str:
    return polite if _polite(ctx.facts) else casual


def _excluded(facts: dict[str, Any]) -> set[str]:
    """Words not worth talking about: the two names and the place (already obvious to both)."""
    words = {str((facts.get(k) or {}).get("name") or "").lower() for k in ("speaker", "partner")} | _COMMON
    words.update(w.lower() for w in keywords(str(facts.get("location") or ""), limit=8))
    return words


def _fresh_words(text: str, facts: dict[str, Any], limit: int = 3) -> list[str]:
    skip = _excluded(facts)
    # Short English words are mostly function words ("into", "tell"); real topics are longer.
    found = [w for w in keywords(text, limit=limit + 12) if w.lower() not in skip]
    return [w for w in found if not w.isascii() or len(w) >= 5][:limit]


def _greeting(ctx: WriterContext, partner: str, hour: float) -> str:
    if ctx.ja:
        word = "おはよう" if hour < 11 else ("こんばんは" if hour >= 18 else "こんにちは")
        if word == "おはよう" and _polite(ctx.facts):
            word = "おはようございます"
        return f"{word}、{partner}{_end(ctx, 'さん', '')}！"
    word = "Good morning" if hour < 11 else ("Good evening" if hour >= 18 else "Hi")
    return f"{word}, {partner}!"


def _remarks(ctx: WriterContext) -> list[str]:
    """Candidate second sentences about the place, the plan, a memory or the speaker's own interests."""
    facts = ctx.facts
    place, activity = facts.get("location"), facts.get("plan_activity")
    out: list[str] = []
    if place:
        out.append(
            f"{place}で会えるなんて嬉しい{_end(ctx, 'です', 'な')}。"
            if ctx.ja
            else f"Nice to run into you at {place}."
        )
    if activity:
        out.append(f"このあと「{activity}」の予定{_end(ctx, 'なんです', 'なんだ')}。" if ctx.ja
                   else f"I'm planning to {activity} after this.")  # fmt: skip
    out.extend(_memory_remarks(ctx))
    persona = str((facts.get("speaker") or {}).get("persona") or "")
    for word in _fresh_words(persona, facts, limit=2):
        out.append(f"最近、{word}のことばかり考えて{_end(ctx, 'いるんです', 'るんだ')}。" if ctx.ja
                   else f"Lately I can't stop thinking about {word}.")  # fmt: skip
    out.append(_small_talk(ctx))
    return out


_HEARD_JA = re.compile(r"^(?P<name>.+?)が「(?P<line>.+)」と言った$")
_HEARD_EN = re.compile(r'^(?P<name>.+?) told me: "(?P<line>.+)"$')
_SAID = re.compile(r"^.+?に「.+」と話した$|^I told .+?: \".+\"$")


def _short(text: str, limit: int = 36) -> str:
    first = (news.sentences(text) or [text])[0].rstrip("。.!！?？")
    return first if len(first) <= limit else first[:limit].rstrip() + "…"


def _memory_remarks(ctx: WriterContext) -> list[str]:
    """Remarks that say what a memory says (what someone told the speaker, something it thought), in words
    taken from the memory; the speaker's own lines, plans and the partner's own words are left out."""
    partner = str((ctx.facts.get("partner") or {}).get("name") or "")
    out: list[str] = []
    thoughts: list[str] = []
    for memory in [str(m) for m in ctx.facts.get("memories") or []][:6]:
        if news.is_invitation(memory):
            continue  # an event is told (once per person, see intention/telling.py), not mused about
        heard = _HEARD_JA.match(memory) or _HEARD_EN.match(memory)
        if heard:
            name, line = heard["name"], _short(heard["line"])
            if name == partner or len(line) < 10:  # "うんうん、わかるよ" is not worth passing on
                continue
            out.append(f"そういえば、{name}が「{line}」って言って{_end(ctx, 'いました', 'たよ')}。" if ctx.ja
                       else f'By the way, {name} told me "{line}."')  # fmt: skip
        elif not _SAID.match(memory) and not re.match(r"^(\d+日目の予定|Plan for day)", memory):
            # The sentence that says most (a reflection opens with whom it was: "公園で蓮と話した。").
            thought = _short(max(news.sentences(memory) or [memory], key=len), 40)
            if len(thought) >= 6:
                thoughts.append(_thought(ctx, thought, partner))
    return (out + thoughts)[:3]  # what others said first: it is news to the partner, a thought less so


def _thought(ctx: WriterContext, thought: str, partner: str) -> str:
    if ctx.ja:
        return str(ctx.pick([f"最近、{thought}って思って{_end(ctx, 'いるんです', 'るんだ')}。",
                             f"実は、{thought}って気がして{_end(ctx, 'いるんです', 'るんだ')}。",
                             f"{partner}{_end(ctx, 'さん', '')}には話すけど、{thought}って思うんだ。"]))  # fmt: skip
    return str(ctx.pick([f"Something has been on my mind lately. {thought}.", f"Between us, {thought}.",
                         f"You know, {partner}, {thought[:1].lower()}{thought[1:]}."]))  # fmt: skip


def _tell(ctx: WriterContext, partner: str) -> str:
    """The speaker's untold item said in words taken from it: its own news as an invitation, or passed on."""
    item = ctx.facts.get("tell") or {}
    said = str(item.get("said") or item.get("text") or "")
    if not said:
        return ""
    if item.get("own", True):
        return news.own_news(said, partner, ctx.ja)
    return news.passed_on(said, str(item.get("origin_name") or ""), ctx.ja)


def _clock(hour: float, ja: bool) -> str:
    whole, half = int(hour), hour % 1 >= 0.5
    if ja:
        return f"{whole}時" + ("半" if half else "")
    return f"{whole}:{'30' if half else '00'}"


def _answer_invitation(ctx: WriterContext, last: str) -> tuple[str, str]:
    """Accept, ask back or decline an invitation, as this character does for an event at that hour."""
    me = str((ctx.facts.get("speaker") or {}).get("id") or "")
    hour = find_hour(last)
    clock = _clock(hour, ctx.ja) if hour is not None else ""
    if news.likes(ctx.seed, me, last):
        if ctx.rng.random() < 0.25:
            return (f"楽しそう！{clock}からだよ{_end(ctx, 'ね。誰が来るんですか', 'ね、誰が来るの')}？" if ctx.ja
                    else f"That sounds fun! {clock}, right? Who else is coming?"), "happy"  # fmt: skip
        return (f"わあ、行きたい！{clock}だ{_end(ctx, 'ね、必ず行きます', 'ね、絶対行くよ')}。" if ctx.ja
                else f"I'd love to! {clock}, right? I'll be there."), "happy"  # fmt: skip
    return (f"ごめん、その時間は用事があって行けないかも。でも誘ってくれてありがとう{_end(ctx, 'ございます', '')}。"
            if ctx.ja else "Sorry, I might be busy then. Thanks for telling me, though."), "sad"  # fmt: skip


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


def _small_talk(ctx: WriterContext) -> str:
    hour = float(ctx.facts.get("time_of_day") or 12.0)
    part = 0 if hour < 11 else (1 if hour < 17 else 2)
    line = str(ctx.pick(_SMALL_TALK[ctx.language][part]))
    for mark, end in (_POLITE_ENDS if _polite(ctx.facts) else _CASUAL_ENDS).items():
        line = line.replace(mark, end)
    return line


def _remark(ctx: WriterContext) -> str:
    """One remark not yet said in this conversation (so the talk moves on instead of looping)."""
    said = " ".join(str(line) for line in ctx.facts.get("history") or [])
    fresh = [r for r in _remarks(ctx) if r not in said]
    # What a memory says comes first: it is this speaker's own and changes through the day (the place and
    # the plan are the same for everyone there, and a town of them would say the same line all day).
    remembered = [r for r in _memory_remarks(ctx) if r in fresh]
    return str(ctx.pick(remembered or fresh or _remarks(ctx)))


def _answer(ctx: WriterContext, last: str) -> tuple[str, str]:
    """A reply to the partner's last line: (text, emotion)."""
    if any(word in last.lower() for word in _SAD_WORDS):
        return (f"そうなんだ…無理しないで{_end(ctx, 'くださいね', 'ね')}。" if ctx.ja
                else "Oh no... don't push yourself too hard."), "sad"  # fmt: skip
    words = _fresh_words(last, ctx.facts)
    if words:
        word = ctx.pick(words)
        ja = [f"{word}、いい{_end(ctx, 'ですね', 'ね')}！", f"{word}の話、もっと聞かせて{_end(ctx, 'ください', 'よ')}。",
              f"へえ、{word}かあ。知らなかった{_end(ctx, 'です', '')}。", f"えっ、{word}？本当{_end(ctx, 'ですか', 'に')}？"]  # fmt: skip
        en = [f"{word.capitalize()}? That sounds great!", f"Tell me more about {word}.",
              f"Huh, {word}. I didn't know that.", f"Wait, {word}? Really?"]  # fmt: skip
        index = ctx.rng.randrange(len(ja))
        return (ja if ctx.ja else en)[index], ("happy", "neutral", "relaxed", "surprised")[index]
    if last.rstrip().endswith(("?", "？")):
        return (f"うーん、どうだろう。考えてみ{_end(ctx, 'ます', 'る')}。" if ctx.ja
                else "Hmm, good question. Let me think about it."), "neutral"  # fmt: skip
    return (
        f"うんうん、わかる{_end(ctx, '気がします', 'よ')}。" if ctx.ja else "Yeah, I know what you mean."
    ), "relaxed"


def _goodbye(ctx: WriterContext, partner: str, leaving: bool) -> str:
    activity = ctx.facts.get("plan_activity")
    if ctx.ja:
        if leaving and activity:
            # Half the time without a goodbye phrase: the talk then ends by the model's own choice ("model").
            head = ctx.pick([f"あ、そろそろ「{activity}」の時間だ。", f"いけない、このあと「{activity}」なんだった。",
                             f"もうこんな時間！「{activity}」に行かないと。"])  # fmt: skip
            return (
                head
                + f"{partner}、"
                + ctx.pick(["またね！", "じゃあ、またね！", "行かなくちゃ！", "ごめん、もう行くね。"])
            )
        return str(
            ctx.pick(
                [
                    f"話せて楽しかった。またね、{partner}！",
                    "じゃあ、またね！",
                    f"うん、{partner}、また明日ね。",
                ]
            )
        )
    if leaving and activity:
        head = ctx.pick([f"Oh, it's almost time to {activity}.", f"Oops, I still have to {activity}.",
                         f"Look at the time! I need to {activity}."])  # fmt: skip
        return (
            head
            + " "
            + ctx.pick(
                [f"See you, {partner}!", "Bye for now!", f"I have to run, {partner}!", "I must go now."]
            )
        )
    return str(
        ctx.pick(
            [
                f"It was nice talking, {partner}. See you!",
                "Alright, bye for now!",
                f"See you tomorrow, {partner}.",
            ]
        )
    )


#: The wheel word (emotion, band 0 mild / 1 basic / 2 intense) a line's expression stands for, for the
#: speaker's `feeling` after it; neutral is calm.
_FEELINGS = {"happy": ("joy", 1), "relaxed": ("joy", 0), "sad": ("sadness", 0), "surprised": ("surprise", 1),
             "angry": ("anger", 0)}  # fmt: skip


def _feeling(ctx: WriterContext, emotion: str) -> str:
    if emotion not in _FEELINGS:
        return CALM_LABEL[ctx.language]
    name, band = _FEELINGS[emotion]
    return INTENSITY_LABELS[ctx.language][name][band]


def _in_prompt(ctx: WriterContext, text: str) -> bool:
    """Whether `text` is a whole line of the prompt (a history line, a memory): the echo check re-asks it."""
    norm = normalise(text).strip(" .。,、!！?？")  # the prompt's lines are held without their end marks
    return any(
        norm in prompt_lines(str(m.get("content") or ""))
        for m in ctx.messages
        if m.get("role") != "assistant"
    )


def _reply(ctx: WriterContext, dialogue: str, emotion: str, end: bool) -> dict[str, Any]:
    space = "" if ctx.ja else " "
    for _ in range(len(_remarks(ctx))):  # never a line of the prompt said again word for word
        if not _in_prompt(ctx, dialogue):
            break
        dialogue = f"{dialogue}{space}{_remark(ctx)}"
    reply = {"dialogue": dialogue, "emotion": emotion, "is_conversation_end": end}
    if "feeling" in ((ctx.schema or {}).get("properties") or {}):
        reply["feeling"] = _feeling(ctx, emotion)
    return reply


def write_turn(ctx: WriterContext) -> dict[str, Any]:
    """The next line of the speaker named in `ctx.facts` (see `backend/conversation/prompts.build_facts`)."""
    facts = ctx.facts
    partner = str((facts.get("partner") or {}).get("name") or ("あなた" if ctx.ja else "you"))
    turn = int(facts.get("turn_index") or 0)
    if facts.get("partner_said_farewell"):
        return _reply(ctx, _goodbye(ctx, partner, leaving=False), "happy", True)
    last_turn = turn + 1 >= int(facts.get("max_turns") or 8)
    if last_turn or (turn >= LEAVE_FROM_TURN and ctx.rng.random() < LEAVE_CHANCE):
        return _reply(ctx, _goodbye(ctx, partner, leaving=True), "relaxed", True)
    space = "" if ctx.ja else " "
    last = str(facts.get("partner_last_line") or "")
    if turn == 0 or not last:
        greeting = _greeting(ctx, partner, float(facts.get("time_of_day") or 12.0))
        return _reply(ctx, f"{greeting}{space}{_tell(ctx, partner) or _remark(ctx)}", "happy", False)
    answer, emotion = _answer_invitation(ctx, last) if news.is_invitation(last) else _answer(ctx, last)
    # Something to tell, else a remark: a bare "うんうん、わかるよ" is what a whole town would say all day.
    answer = f"{answer}{space}{_tell(ctx, partner) or _remark(ctx)}"
    return _reply(ctx, answer, emotion, False)


WRITERS = {"TurnReply": write_turn}
