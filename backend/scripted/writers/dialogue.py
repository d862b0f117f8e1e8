"""Scripted writer for conversation turns (`TurnReply`): a short in-character line from the turn's facts.

It greets by time of day on the first line, picks up a word from the partner's last line, brings up the
place, the speaker's plan, a memory or a topic from its backstory (never one it already used in this
conversation), says goodbye when the partner did, and after a few turns sometimes (deterministically,
from the seeded random source) wraps up and says goodbye itself. Polite speakers (敬語/丁寧/polite in their
speaking style) get です/ます endings (chat.py: greetings, small talk, goodbyes).

News it has to tell (`facts["tell"]`) is said from its slots, as the prompt's fact line gives them (what,
when said from today, where, whose), in the speaker's language (news.tell_slots), never by splicing the
item's words. What it says is kept honest by lines.py: never of itself in the third person, never small
talk heard passed on as news, never a sentence the conversation already holds.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from backend.emotion.plutchik import CALM_LABEL, INTENSITY_LABELS
from backend.intention.appointment import find_hour
from backend.intention.fact import Slots
from backend.llm.echo import prompt_lines
from backend.scripted import lines, news
from backend.scripted.chat import end as _end
from backend.scripted.chat import goodbye as _goodbye
from backend.scripted.chat import greeting as _greeting
from backend.scripted.chat import part_of_day as _part
from backend.scripted.chat import small_talk as _small_talk
from backend.scripted.chat import you as _you
from backend.scripted.engine import WriterContext
from backend.text import STOP_WORDS, keywords, normalise

#: From this turn on the speaker may decide to leave; the chance per turn.
LEAVE_FROM_TURN = 4
LEAVE_CHANCE = 0.25
_SAD_WORDS = ("疲れ", "悲し", "寂し", "つらい", "落ち込", "tired", "sad", "lonely", "rough")
#: Words too common to make a topic of (including the ones these templates themselves use, so the
#: partner's echo of a template never becomes the next topic).
_COMMON = frozenset(
    "一番 今日 明日 昨日 最近 本当 時間 自分 前話 話 話題 予定 用事 今週 質問 絶対 今朝 今夜 今度 一緒 thing things lately today really "
    "something wait sounds great nice remember planning hello morning evening didn't talking "
    "tomorrow alright about think thinking feels stop often afternoon night along together".split()
)
_COMMON_JA = frozenset(w for w in _COMMON if not w.isascii())
#: Words with nothing to pick up ("えっ、right？" is no reply): fillers, pronouns, adverbs, modal verbs.
_EMPTY = frozenset(
    "right there their these those would could should maybe really sure going being other every where which "
    "while after before still since again never always anyone someone everyone anything nothing thing stuff "
    "because though okay great sorry thanks coming tonight can't don't won't didn't isn't yours mine ours yeah actually pretty little kind "
    "かな こと もの とき ところ みんな 本当 ちょっと".split()
)


def _excluded(facts: dict[str, Any]) -> set[str]:
    """Words not worth talking about: the two names and the place (already obvious to both)."""
    words = {str((facts.get(k) or {}).get("name") or "").lower() for k in ("speaker", "partner")} | _COMMON
    words.update(w.lower() for w in keywords(str(facts.get("location") or ""), limit=8))
    return words


def _fresh_words(text: str, facts: dict[str, Any], ja: bool, limit: int = 3) -> list[str]:
    skip = _excluded(facts)
    found = [w for w in keywords(text, limit=limit + 12) if w.lower() not in skip | _EMPTY | STOP_WORDS]
    # Short English words are mostly function words; a word not in the speaker's language is not one it
    # would pick up ("えっ、right？" in a Japanese line).
    found = [w for w in found if (not w.isascii() or len(w) >= 5) and (w.isascii() != ja)]
    # A kanji run that holds a common word is a phrase cut at its kana ("絶対行" of 絶対行くよ), not a topic.
    return [w for w in found if w.isascii() or not any(c in w for c in _COMMON_JA)][:limit]


def _vary(ctx: WriterContext, key: str, options: list[str]) -> str:
    """One of `options`, the same all through a conversation (the candidates are compared across calls) and
    another with the next partner or day, so one speaker does not open each talk with the same line."""
    facts = ctx.facts
    seed = f"{(facts.get('speaker') or {}).get('id')}|{(facts.get('partner') or {}).get('id')}|{facts.get('day')}|{key}"
    return options[int(hashlib.sha1(seed.encode()).hexdigest()[:8], 16) % len(options)]


def _to(ctx: WriterContext, sentence: str) -> str:
    """The sentence said to this partner: an opener with the partner's name unless it already names them
    ("ねえ葵、最近…", "Kai, lately…"), so one speaker's remark is not the same sentence to everyone."""
    partner = str((ctx.facts.get("partner") or {}).get("name") or "")
    if not partner or partner in sentence:
        return sentence
    name = _you(ctx, partner)
    if ctx.ja:
        return _vary(ctx, sentence, [f"ねえ{name}、", f"{name}、", f"{name}だから言うけど、"]) + sentence
    keep = sentence.startswith(("I ", "I'")) or sentence[1:2].isupper()
    return f"{partner}, {sentence if keep else sentence[:1].lower() + sentence[1:]}"


def _remarks(ctx: WriterContext) -> list[str]:
    """Candidate second sentences about the place, the plan, a memory or the speaker's own interests."""
    facts = ctx.facts
    place, activity = facts.get("location"), facts.get("plan_activity")
    partner = str((facts.get("partner") or {}).get("name") or "")
    name, part = _you(ctx, partner), _part(ctx)
    out: list[str] = []
    # Each remark is said to this partner, at this place and part of the day: a town of speakers at one
    # place with one plan item would otherwise say the same sentence to everyone all day.
    if place:
        out.append(_vary(ctx, "place", [f"{part}の{place}で{name}に会えるなんて嬉しい{_end(ctx, 'です', 'な')}。",
                                        f"{name}、{part}の{place}は落ち着いてる{_end(ctx, 'ですね', 'ね')}。",
                                        f"{name}は{part}にもよく{place}に来る{_end(ctx, 'んですか', 'の')}？"]
                         if ctx.ja else [f"Nice to run into you at {place} this {part}, {partner}.",
                                         f"{place} is quiet this {part}, isn't it, {partner}?",
                                         f"Do you often come to {place} in the {part}, {partner}?"]))  # fmt: skip
    if activity:
        out.append(_vary(ctx, "plan", [f"{name}と話したら、「{activity}」の予定{_end(ctx, 'なんです', 'なんだ')}。",
                                       f"{part}のうちに「{activity}」をするつもり{_end(ctx, 'です', 'なんだ')}、{name}は？",
                                       f"実は{name}、このあと「{activity}」{_end(ctx, 'なんです', 'なんだ')}。"]
                         if ctx.ja else [f"After this I'm planning to {activity}, {partner}.",
                                         f"Later this {part} I'm going to {activity}. And you, {partner}?",
                                         f"I should {activity} this {part}, {partner}."]))  # fmt: skip
    out.extend(_memory_remarks(ctx))
    persona = str((facts.get("speaker") or {}).get("persona") or "")
    you = (
        (f"{partner}{_end(ctx, 'さん', '')}" if partner else "あなた")
        if ctx.ja
        else (f", {partner}" if partner else "")
    )
    for word in _fresh_words(persona, facts, ctx.ja, limit=2):
        out.append(_to(ctx, _vary(ctx, word, [f"最近、{word}のことばかり考えて{_end(ctx, 'いるんです', 'るんだ')}。",
                                     f"そうそう、{word}のことでちょっと悩んでて。",
                                     f"{word}の話なら、いくらでもできる{_end(ctx, 'んです', 'よ')}。",
                                     f"{word}のこと、{you}はどう思う？",
                                     f"今週は{word}のことで手一杯だった{_end(ctx, 'んです', 'よ')}。",
                                     f"{word}について、ちょっと新しいことを思いついた{_end(ctx, 'んです', 'んだ')}。"]
                         if ctx.ja else [f"Lately I can't stop thinking about {word}.",
                                         f"I've been busy with {word} all week.",
                                         f"Ask me anything about {word}!",
                                         f"What do you make of {word}{you}?",
                                         f"I had a new idea about {word} this week.",
                                         f"{word.capitalize()} has kept me on my toes lately."])))  # fmt: skip
    out.append(_small_talk(ctx))
    return out


_HEARD_JA = re.compile(r"^(?P<name>.+?)が「(?P<line>.+)」と言った$")
_HEARD_EN = re.compile(r'^(?P<name>.+?) told me: "(?P<line>.+)"$')
_SAID = re.compile(r"^.+?に「.+」と話した$|^I told .+?: \".+\"$")


def _short(text: str, limit: int = 36) -> str:
    first = (news.sentences(text) or [text])[0].rstrip("。.!！?？")
    return first if len(first) <= limit else first[:limit].rstrip() + "…"


def _memory_remarks(ctx: WriterContext) -> list[str]:
    """Remarks that say what a memory says (news someone told the speaker, something it thought), in words
    taken from the memory; the speaker's own lines, plans and the partner's own words are left out, and so are
    small talk heard (no news), lines in another language and memories of the speaker in the third person
    ("蓮は蓮の家に着いた" in 蓮's memory: an observation, not something 蓮 would say of itself)."""
    me = str((ctx.facts.get("speaker") or {}).get("name") or "")
    partner = str((ctx.facts.get("partner") or {}).get("name") or "")
    out: list[str] = []
    thoughts: list[str] = []
    for memory in [str(m) for m in ctx.facts.get("memories") or []][:6]:
        if news.is_invitation(memory):
            continue  # an event is told (once per person, see intention/telling.py), not mused about
        heard = _HEARD_JA.match(memory) or _HEARD_EN.match(memory)
        if heard:
            name, line = heard["name"], _short(heard["line"])
            # Small talk ("Good morning, Oliver.") and goodbyes are no news: never retold (judged on the whole
            # line: the cut one may have lost its "see you"); nor a line that called the speaker by name.
            if name in (partner, me) or not lines.is_news(heard["line"], (name, partner, me)):
                continue
            if me and me in heard["line"]:
                continue
            if not lines.in_language(line, ctx.ja) or lines.names_self(line, me, ctx.ja):
                continue
            out.append(_to(ctx, f"そういえば、{name}が「{line}」って言って{_end(ctx, 'いました', 'たよ')}。" if ctx.ja
                           else f'By the way, {name} told me "{line}."'))  # fmt: skip
        elif not _SAID.match(memory) and not re.match(r"^(\d+日目の予定|Plan for day)", memory):
            # The sentence that says most (a reflection opens with whom it was: "公園で蓮と話した。").
            thought = _short(max(news.sentences(memory) or [memory], key=len), 40)
            if (
                len(thought) >= 6
                and lines.in_language(thought, ctx.ja)
                and not lines.names_self(thought, me, ctx.ja)
            ):
                thoughts.append(_to(ctx, _thought(ctx, thought, partner)))
    return (out + thoughts)[:3]  # what others said first: it is news to the partner, a thought less so


def _thought(ctx: WriterContext, thought: str, partner: str) -> str:
    if ctx.ja:
        return str(ctx.pick([f"最近、{thought}って思って{_end(ctx, 'いるんです', 'るんだ')}。",
                             f"実は、{thought}って気がして{_end(ctx, 'いるんです', 'るんだ')}。",
                             f"{partner}{_end(ctx, 'さん', '')}には話すけど、{thought}って思うんだ。"]))  # fmt: skip
    return str(ctx.pick([f"Something has been on my mind lately. {thought}.", f"Between us, {thought}.",
                         f"You know, {partner}, {thought[:1].lower()}{thought[1:]}."]))  # fmt: skip


def _tell(ctx: WriterContext, partner: str) -> str:
    """The speaker's untold item. News with slots is said from them (what, when from today, where, whose), in
    the speaker's language, as the prompt's fact line gives them; other news in words taken from it, only when
    it is in the speaker's language."""
    item = ctx.facts.get("tell") or {}
    if item.get("slots"):
        return _tell_slots(ctx, item, Slots.from_dict(item["slots"]), partner)
    said = str(item.get("said") or item.get("text") or "")
    if not said or not lines.in_language(said, ctx.ja):
        return ""
    if item.get("own", True):
        return news.own_news(said, partner, ctx.ja)
    return news.passed_on(said, str(item.get("origin_name") or ""), ctx.ja)


def _tell_slots(ctx: WriterContext, item: dict[str, Any], slots: Slots, partner: str) -> str:
    facts = ctx.facts
    people = [facts.get("speaker") or {}, facts.get("partner") or {}, *(facts.get("others") or [])]
    names = {str(p.get("id")): str(p.get("name")) for p in people if p.get("id")}
    host_id = slots.host or str(item.get("origin_id") or "")
    origin = str(item.get("origin_name") or "")
    host = names.get(host_id) or (origin if host_id == item.get("origin_id") else host_id)
    own = host_id == str((facts.get("speaker") or {}).get("id") or "")
    source = str(item.get("heard_from") or origin)
    today = int(facts.get("day") or slots.written_day)
    return news.tell_slots(slots, ja=ctx.ja, today=today, partner=partner, host=host, source=source,
                           own=own, pick=lambda options: str(ctx.pick(options)))  # fmt: skip


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
    partner = str((ctx.facts.get("partner") or {}).get("name") or "")
    name = _you(ctx, partner)
    # One sentence each, to this partner, with the hour: "わあ、行きたい！" is what every guest says.
    if news.likes(ctx.seed, me, last):
        if ctx.rng.random() < 0.25:
            return (f"楽しそう、{clock}から{_end(ctx, 'ですね、誰が来るんですか', 'だね、誰が来るの')}、{name}？" if ctx.ja
                    else f"That sounds fun, {partner}, {clock}, right? Who else is coming?"), "happy"  # fmt: skip
        return (str(ctx.pick([f"わあ、{name}、{clock}だ{_end(ctx, 'ね、必ず行きます', 'ね、絶対行くよ')}！",
                              f"{clock}だ{_end(ctx, 'ね、誘ってくれてありがとうございます、行きます', 'ね、誘ってくれてありがとう、行きたい')}、{name}！"]))
                if ctx.ja else f"I'd love to, {partner}! {clock}, right? I'll be there."), "happy"  # fmt: skip
    return (f"ごめん{name}、{clock}は用事があって行けないかも、でも誘ってくれてありがとう{_end(ctx, 'ございます', '')}。"
            if ctx.ja else f"Sorry, {partner}, I might be busy at {clock}. Thanks for telling me, though."), "sad"  # fmt: skip


def _remark(ctx: WriterContext) -> str:
    """One remark not yet said in this conversation (so the talk moves on instead of looping)."""
    # What this speaker already said to someone (its memories "I told ...") counts too.
    said = " ".join(
        str(line) for line in [*(ctx.facts.get("history") or []), *(ctx.facts.get("memories") or [])]
    )
    remarks = _remarks(ctx)
    fresh = [r for r in remarks if r not in said]
    # What a memory says comes first: it is this speaker's own and changes through the day (the place and
    # the plan are the same for everyone there, and a town of them would say the same line all day).
    remembered = [r for r in _memory_remarks(ctx) if r in fresh]
    # Talk of the weather and the hour only when nothing of this speaker's own is left: a town of 25 saying
    # one of three such lines repeats them all day (a day's sentences should seldom repeat).
    own = [r for r in fresh if r != remarks[-1]]  # _remarks ends with the small talk
    return str(ctx.pick(remembered or own or fresh or remarks))


def _answer(ctx: WriterContext, last: str) -> tuple[str, str]:
    """A reply to the partner's last line: (text, emotion)."""
    if any(word in last.lower() for word in _SAD_WORDS):
        return (f"そうなんだ…無理しないで{_end(ctx, 'くださいね', 'ね')}。" if ctx.ja
                else "Oh no... don't push yourself too hard."), "sad"  # fmt: skip
    words = _fresh_words(last, ctx.facts, ctx.ja)
    if words:
        word = ctx.pick(words)
        # One sentence each, around the word: a bare "知らなかった。" after it is what a town says all day.
        partner = str((ctx.facts.get("partner") or {}).get("name") or "")
        # Most of the time said to the partner by name: "レストランか、いいなあ。" is what a town says all day.
        called = bool(partner) and ctx.rng.random() < 0.7
        to, by = (f"、{_you(ctx, partner)}", f"{_you(ctx, partner)}、") if called else ("", "")
        en_to = f", {partner}" if called else ""
        ja = [f"{word}、いい{_end(ctx, 'ですね', 'ね')}{to}！", f"{by}{word}の話、もっと聞かせて{_end(ctx, 'ください', 'よ')}。",
              f"へえ、{word}のことは知らなかった{_end(ctx, 'です', 'なあ')}{to}。", f"えっ、{by}{word}って本当{_end(ctx, 'ですか', 'に')}？",
              f"なるほど、{by}{word}{_end(ctx, 'ですか', 'ね')}。", f"{by}{word}って、どんな感じ{_end(ctx, 'ですか', 'なの')}？",
              f"{word}か、いいなあ{to}。"]  # fmt: skip
        en = [f"{word.capitalize()} sounds great{en_to}!", f"Tell me more about {word}{en_to}.",
              f"Huh, I didn't know that about {word}{en_to}.", f"Wait, {word}, really{en_to}?",
              f"Ah, {word}, I see{en_to}.", f"What's {word} like{en_to}?", f"{word.capitalize()}, how lovely{en_to}."]  # fmt: skip
        index = ctx.rng.randrange(len(ja))
        feel = ("happy", "neutral", "relaxed", "surprised", "neutral", "neutral", "happy")[index]
        return (ja if ctx.ja else en)[index], feel
    partner = str((ctx.facts.get("partner") or {}).get("name") or "")
    name = _you(ctx, partner)
    if last.rstrip().endswith(("?", "？")):
        # Said to this partner, in this part of the day: opener x body, one sentence.
        opener = ctx.pick([f"うーん、{name}、", f"そうだなあ、{name}、", f"{name}にそう聞かれると、"] if ctx.ja
                          else [f"Hmm, {partner}, ", f"Well, {partner}, ", f"Good question, {partner}, "])  # fmt: skip
        body = ctx.pick([f"どうだろう、考えてみ{_end(ctx, 'ます', 'る')}。", f"すぐには答えられない{_end(ctx, 'です', 'な')}。",
                         f"{_part(ctx)}の頭じゃうまく言えない{_end(ctx, 'です', 'や')}。", f"いい質問{_end(ctx, 'ですね', 'だね')}。"]
                        if ctx.ja else ["let me think about it.", "I'm not sure yet.", f"ask me again later this {_part(ctx)}.",
                                        "I'd have to think."])  # fmt: skip
        return f"{opener}{body}", "neutral"
    # No bare reaction: the interjection opens the remark that follows ("そっか、…"), so
    # write_turn joins it without a break.
    return str(ctx.pick(["そっか、", "なるほど、", "たしかに、", "うんうん、", "へえ、", "そうなんだ、"] if ctx.ja
                        else [f"I see, {partner}.", f"Fair enough, {partner}.", f"Mm, I get it, {partner}.",
                              f"That makes sense, {partner}.", f"Right, I hear you, {partner}."])), "relaxed"  # fmt: skip


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
    me = str((ctx.facts.get("speaker") or {}).get("name") or "")
    history = [str(line) for line in ctx.facts.get("history") or []]
    # Never of itself in the third person, never a sentence the conversation already holds.
    kept = lines.fresh(lines.without_self(dialogue, me, ctx.ja), history, ctx.ja)
    if not kept and not end:
        extra = [r for r in _remarks(ctx) if lines.fresh(r, history, ctx.ja) == r]
        kept = str(ctx.pick(extra)) if extra else ""
    kept = kept or lines.without_self(dialogue, me, ctx.ja) or dialogue
    dialogue = kept
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
    # Something to tell, else a remark: a bare "うんうん、わかるよ" is what a whole town would say all day;
    # an interjection ("そっか、") opens the sentence after it.
    joint = "" if answer.endswith("、") else space
    answer = f"{answer}{joint}{_tell(ctx, partner) or _remark(ctx)}".strip()
    return _reply(ctx, answer, emotion, False)


WRITERS = {"TurnReply": write_turn}
