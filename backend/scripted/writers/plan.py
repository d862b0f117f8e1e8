"""Scripted writer for daily plans: a plausible day from the facts' places, persona and window."""

from __future__ import annotations

from typing import Any

from backend.intention.appointment import Place, find_appointment
from backend.planning.schemas import MAX_ITEM_HOURS, PlanItem
from backend.planning.validation import keep_appointments
from backend.scripted import news
from backend.scripted.engine import WriterContext

#: Activities by kind of place, Japanese and English; `{name}` is the place's name.
ACTIVITIES: dict[str, tuple[list[str], list[str]]] = {
    "cafe": (
        ["{name}でコーヒーを飲みながら一息つく", "{name}で友だちとおしゃべりする", "{name}で本を読む"],
        ["have coffee at {name}", "chat with friends at {name}", "read a book at {name}"],
    ),
    "park": (
        ["{name}を散歩する", "{name}のベンチでひなたぼっこ", "{name}で花を眺める"],
        ["take a walk in {name}", "sit on a bench in {name}", "look at the flowers in {name}"],
    ),
    "library": (
        ["{name}で調べものをする", "{name}で静かに勉強する", "{name}で新しい本を探す"],
        ["look things up at {name}", "study quietly at {name}", "browse new books at {name}"],
    ),
    "restaurant": (
        ["{name}で昼ごはんを食べる", "{name}で日替わり定食を味わう"],
        ["have lunch at {name}", "try the daily special at {name}"],
    ),
    "hall": (
        ["{name}で町のことを話し合う", "{name}で書類を整理する"],
        ["discuss town matters at {name}", "sort out papers at {name}"],
    ),
    "shop": (["{name}で買い物をする"], ["go shopping at {name}"]),
    "station": (["{name}で人の流れを眺める"], ["watch the trains at {name}"]),
}
GENERIC = (["{name}で過ごす", "{name}に立ち寄る"], ["spend time at {name}", "drop by {name}"])
HOME_MORNING = ("家で朝ごはんを食べて身支度する", "have breakfast and get ready at home")
HOME_EVENING = ("家でくつろいで一日を振り返る", "relax at home and look back on the day")
#: Traits that draw a character to a kind of place.
AFFINITY = {
    "library": ("本", "読書", "勉強", "知", "分析", "book", "read", "study", "curious", "analytical"),
    "cafe": ("社交", "話", "明る", "コーヒー", "friendly", "social", "cheerful", "coffee"),
    "park": ("自然", "散歩", "穏やか", "花", "nature", "walk", "calm", "gentle"),
    "hall": ("責任", "まとめ", "慎重", "responsible", "careful", "leader"),
}


def _quarter(value: float) -> float:
    return round(value * 4) / 4


def _pick_places(ctx: WriterContext, pois: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """Places for the day: those the traits draw to first, then a seeded shuffle of the rest."""
    traits = " ".join(ctx.facts.get("persona", {}).get("traits", [])).lower()
    liked = {kind for kind, words in AFFINITY.items() if any(w.lower() in traits for w in words)}
    shuffled = list(pois)
    ctx.rng.shuffle(shuffled)
    shuffled.sort(key=lambda p: 0 if p.get("kind") in liked else 1)
    return shuffled[:count]


def _activity(ctx: WriterContext, poi: dict[str, Any]) -> str:
    ja_list, en_list = ACTIVITIES.get(str(poi.get("kind")), GENERIC)
    return str(ctx.pick(ja_list if ctx.ja else en_list)).format(name=poi.get("name", poi.get("id")))


def write_plan(ctx: WriterContext) -> dict[str, Any]:
    """Home in the morning, a few places through the day (lunch at a restaurant near noon), home at night.

    Items follow each other as the schema asks (where, what, for how many hours), so the reply names no
    start or end; an item is at most MAX_ITEM_HOURS long (the repair fills what is left with home)."""
    window = ctx.facts.get("window") or {}
    start = float(window.get("start", ctx.facts.get("wake_hour", 7.0)))
    end = float(window.get("end", ctx.facts.get("sleep_hour", 22.0)))
    home = ctx.facts.get("home_poi")
    pois = [p for p in ctx.facts.get("pois", []) if p.get("id") != home and p.get("kind") != "home"]
    if not home and ctx.facts.get("pois"):
        home = ctx.facts["pois"][0]["id"]
    lang = 0 if ctx.ja else 1
    span = end - start
    if not pois or span < 3:
        return {"items": _in_hours([_item(home or "", HOME_EVENING[lang], start, end)])}
    morning = min(1.0, span / 5) if start < 10 else 0.0
    evening = min(2.0, span / 5)
    places = _pick_places(ctx, pois, max(1, min(len(pois), int((span - morning - evening) // 2))))
    restaurant = next((p for p in pois if p.get("kind") == "restaurant"), None)
    if restaurant and restaurant not in places and start < 12 < end - evening:
        places.insert(min(1, len(places)), restaurant)
    items: list[dict[str, Any]] = []
    if morning:
        items.append(_item(home, HOME_MORNING[lang], start, start + morning))
    cursor, out_until = start + morning, end - evening
    block = (out_until - cursor) / len(places)
    for index, poi in enumerate(places):
        finish = out_until if index == len(places) - 1 else _quarter(cursor + block)
        if finish > cursor:
            items.append(_item(poi["id"], _activity(ctx, poi), cursor, finish))
        cursor = max(cursor, finish)
    if end > cursor:
        items.append(_item(home, HOME_EVENING[lang], cursor, end))
    return {"items": _in_hours(_with_appointments(ctx, items, start, end))}


def _item(poi_id: str | None, activity: str, start: float, end: float) -> dict[str, Any]:
    return {"poi_id": poi_id, "activity": activity, "start": start, "end": end}


def _in_hours(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The day as the schema asks for it: in order, each item's hours (one longer than MAX_ITEM_HOURS in
    parts: back-to-back repeats are merged again by the repair)."""
    out = []
    for item in items:
        left = item["end"] - item["start"]
        while left > 1e-9:
            hours = min(MAX_ITEM_HOURS, left)
            out.append({"poi_id": item["poi_id"], "activity": item["activity"], "hours": round(hours, 4)})
            left -= hours
    return out


def _appointments(ctx: WriterContext) -> list[tuple[float, float, str, str]]:
    """Appointments for the day in the intentions, and in important memories of events the character likes
    (a time and a known place, Japanese or English)."""
    facts, day = ctx.facts, int(ctx.facts.get("day") or 1)
    places = [Place(str(p.get("id")), str(p.get("name") or p.get("id"))) for p in facts.get("pois", [])]
    texts = [(str(line), day, 0.0) for line in facts.get("intentions") or []]
    me = str(facts.get("agent_id") or "")
    for memory in facts.get("important_dated") or []:
        content = str(memory.get("content") or "")
        if news.is_invitation(content) and news.likes(ctx.seed, me, content):
            texts.append((content, int(memory.get("day") or day), float(memory.get("time_of_day") or 0.0)))
    found = []
    for text, written, hour in texts:
        made = find_appointment(text, places, written_day=written, written_hour=hour)
        if made is not None and made.day == day:
            found.append((made.start, made.end, made.poi_id, _appointment_activity(ctx, made.poi_id, places)))
    return found


def _appointment_activity(ctx: WriterContext, poi_id: str, places: list[Place]) -> str:
    name = next((p.name for p in places if p.id == poi_id), poi_id)
    return f"{name}での約束に行く" if ctx.ja else f"keep an appointment at {name}"


def _with_appointments(
    ctx: WriterContext, items: list[dict[str, Any]], start: float, end: float
) -> list[dict[str, Any]]:
    wanted = [a for a in _appointments(ctx) if start <= a[0] < end]
    if not wanted:
        return items
    kept, _ = keep_appointments([PlanItem.model_validate(it) for it in items], wanted, start=start, end=end)
    return [it.model_dump() for it in kept]


WRITERS = {"PlanReply": write_plan}
