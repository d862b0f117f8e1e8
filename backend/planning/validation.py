"""Plan validation and repair: pure functions, no database, no model.

A plan the server stores is always *sound*: items are ordered, do not overlap, lie within the window
(waking hours, or the rest of the day when replanning), cover it without gaps, and name known points of
interest. A model's plan is repaired towards that (unknown place -> home, overlaps trimmed, out-of-hours
clipped, gaps filled with home); a plan too broken to repair honestly raises `PlanUnrepairable`, so the
caller can re-ask the model or fall back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from backend.gametime import format_clock as _format_clock
from backend.planning.schemas import PlanItem

#: Items shorter than this (hours) after trimming are dropped rather than kept as slivers.
MIN_ITEM_HOURS = 1 / 60
#: A model plan whose own items cover less than this share of the window is not worth repairing (the rest
#: is filled at home). A quarter: SmolLM2's plans often give a few activities of two or three hours (44% of
#: the day: refused twice at one half, the day was the fallback's); one hour of a day is still refused.
MIN_COVERAGE = 0.25
HOME_ACTIVITY = {"ja": "家で過ごす", "en": "Time at home"}


def format_clock(hours: float) -> str:
    """Like gametime.format_clock, but the end of the day reads 24:00, not 00:00."""
    return "24:00" if hours >= 24 else _format_clock(hours)


class PlanUnrepairable(ValueError):
    """The proposed plan cannot be repaired into a sound one without inventing most of it."""


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, BaseModel):
        return item.model_dump()
    if isinstance(item, Mapping):
        return dict(item)
    raise PlanUnrepairable(f"a plan item is not an object: {item!r:.60}")


def repair_plan(
    items: Sequence[Any],
    *,
    known_pois: Collection[str],
    home: str | None,
    start: float,
    end: float,
    language: str = "ja",
) -> tuple[list[PlanItem], list[str]]:
    """Turn a proposed plan into a sound one over [start, end).

    Args:
        items: proposed items in order (dicts or models with poi_id, activity, and `hours` or a start and
            an end in hours of the day); one timed by its hours begins where the items before it end.
        known_pois: ids of the world's points of interest, or a mapping of id to name (with names, an
            activity that only names a place is rewritten as spending time there).
        home: the point used for unknown places and gaps (None when the world has no place at all).
        start, end: the window to cover, e.g. wake and sleep hours.
        language: "ja" or "en", for the filler activity.

    Returns:
        The sound items and a list of human-readable repairs (empty when the plan was already sound).

    Raises:
        PlanUnrepairable: no usable items, most places unknown, or too little of the window covered.
    """
    if end <= start:
        raise ValueError(f"empty window {start:g}-{end:g}")
    if not items:
        raise PlanUnrepairable("the plan has no items")
    repairs: list[str] = []
    laid_out = _laid_out(items, start)
    proposed = _known_places(laid_out, known_pois, home, repairs, language)
    clipped = _clip(proposed, start, end, repairs)
    ordered = sorted(clipped, key=lambda it: (it["start"], it["end"]))
    if [id(it) for it in ordered] != [id(it) for it in clipped]:
        repairs.append("items reordered by start time")
    trimmed = _trim_overlaps(ordered, repairs)
    covered = sum(it["end"] - it["start"] for it in trimmed)
    if covered < MIN_COVERAGE * (end - start):
        share = 100 * covered / (end - start)
        raise PlanUnrepairable(
            f"the plan covers only {share:.0f}% of {format_clock(start)}-{format_clock(end)}"
        )
    filled = _fill_gaps(trimmed, start, end, home, HOME_ACTIVITY.get(language, HOME_ACTIVITY["en"]), repairs)
    return [PlanItem.model_validate(it) for it in _merged(filled, repairs)], repairs


def _merged(items: list[dict[str, Any]], repairs: list[str]) -> list[dict[str, Any]]:
    """Back-to-back items at the same place doing the same thing are one (a small model repeats an item)."""
    result: list[dict[str, Any]] = []
    for item in items:
        last = result[-1] if result else None
        same = last is not None and (last["poi_id"], last["activity"]) == (item["poi_id"], item["activity"])
        if last is not None and same and abs(last["end"] - item["start"]) < 1e-9:
            repairs.append(
                f"{format_clock(item['start'])}-{format_clock(item['end'])} repeats the item before: merged"
            )
            result[-1] = {**last, "end": item["end"]}
        else:
            result.append(item)
    return result


def _laid_out(items: Sequence[Any], start: float) -> list[dict[str, Any]]:
    """Items in the reply's order, each with a start and an end: one timed by its `hours` (as the schema
    asks) begins where the day so far ends (the window's start, then the latest end before it); one that
    gives its start or end is taken at its word."""
    result, cursor = [], start
    for raw in items:
        item = _as_dict(raw)
        hours = item.get("hours")
        if item.get("start") is None and isinstance(hours, int | float):
            item = {**item, "start": cursor}
        if (
            item.get("end") is None
            and isinstance(hours, int | float)
            and isinstance(item["start"], int | float)
        ):
            item = {**item, "end": min(24.0, float(item["start"]) + float(hours))}
        if isinstance(item.get("end"), int | float):
            cursor = max(cursor, float(item["end"]))
        result.append(item)
    return result


def _known_places(
    items: Sequence[Any], known: Collection[str], home: str | None, repairs: list[str], language: str
) -> list[dict[str, Any]]:
    result, unknown = [], 0
    for item in items:
        try:
            begin, finish = float(item["start"]), float(item["end"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanUnrepairable(f"a plan item has no usable start/end: {item!r:.80}") from exc
        poi = item.get("poi_id")
        if poi not in known and poi != home:
            unknown += 1
            repairs.append(f"unknown place {poi!r} at {format_clock(begin)} replaced by home")
            poi = home
        activity = _activity(str(item.get("activity") or "").strip()[:200], poi, known, language, repairs)
        result.append({"start": begin, "end": finish, "poi_id": poi, "activity": activity or "…"})
    if unknown * 2 > len(result):
        raise PlanUnrepairable(f"{unknown} of {len(result)} items name places that do not exist")
    return result


def _activity(
    activity: str, poi: str | None, known: Collection[str], language: str, repairs: list[str]
) -> str:
    """An activity whose meaning is clear though its words are not: a place's id or name alone means being
    there ("library" -> "Spend time at 図書館"); an id-like "fresco_baking" means "fresco baking"."""
    names = known if isinstance(known, Mapping) else {}
    said = activity.casefold()
    if said and any(said in (pid.casefold(), str(name).casefold()) for pid, name in names.items()):
        name = names.get(poi, poi) or ""
        written = FALLBACK_ACTIVITY.get(language, FALLBACK_ACTIVITY["en"]).format(name=name)
        repairs.append(f"activity {activity!r} named only a place: {written!r}")
        return written
    if "_" in activity and " " not in activity and activity.isascii():
        written = " ".join(activity.replace("_", " ").split())
        repairs.append(f"activity {activity!r} written as words: {written!r}")
        return written
    return activity


def _clip(items: list[dict[str, Any]], start: float, end: float, repairs: list[str]) -> list[dict[str, Any]]:
    kept = []
    for item in items:
        if item["end"] <= item["start"]:
            repairs.append(f"item at {format_clock(item['start'])} ends before it starts: dropped")
            continue
        begin, finish = max(item["start"], start), min(item["end"], end)
        if (begin, finish) != (item["start"], item["end"]):
            what = "dropped" if finish - begin < MIN_ITEM_HOURS else "clipped to"
            repairs.append(
                f"{format_clock(item['start'])}-{format_clock(item['end'])} outside "
                f"{format_clock(start)}-{format_clock(end)}: {what} the window"
            )
        if finish - begin >= MIN_ITEM_HOURS:
            kept.append({**item, "start": begin, "end": finish})
    return kept


def _trim_overlaps(items: list[dict[str, Any]], repairs: list[str]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    for item in items:
        if result and item["start"] < result[-1]["end"]:
            new_start = result[-1]["end"]
            repairs.append(
                f"{format_clock(item['start'])}-{format_clock(item['end'])} overlapped the previous item: "
                f"starts at {format_clock(new_start)}"
            )
            if item["end"] - new_start < MIN_ITEM_HOURS:
                continue
            item = {**item, "start": new_start}
        result.append(item)
    return result


def _fill_gaps(
    items: list[dict[str, Any]], start: float, end: float, home: str | None, activity: str, repairs: list[str]
) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    cursor = start
    for item in items:  # trimmed already: every item starts at or after the previous end
        gap = item["start"] - cursor
        if gap >= MIN_ITEM_HOURS:
            repairs.append(f"gap {format_clock(cursor)}-{format_clock(item['start'])} filled with home")
            result.append({"start": cursor, "end": item["start"], "poi_id": home, "activity": activity})
        elif gap > 0:
            item = {**item, "start": cursor}  # a sliver of rounding: stretch the item over it
        result.append(item)
        cursor = item["end"]
    if end - cursor >= MIN_ITEM_HOURS:
        repairs.append(f"gap {format_clock(cursor)}-{format_clock(end)} filled with home")
        result.append({"start": cursor, "end": end, "poi_id": home, "activity": activity})
    elif result:
        result[-1]["end"] = end
    return result


def plan_problems(
    items: Sequence[PlanItem], *, known_pois: Collection[str], home: str | None, start: float, end: float
) -> list[str]:
    """Why a plan is not sound (empty list when it is). Used before storing, and by tests."""
    problems: list[str] = []
    if not items:
        return ["the plan has no items"]
    if abs(items[0].start - start) > 1e-6:
        problems.append(f"starts at {format_clock(items[0].start)}, not {format_clock(start)}")
    if abs(items[-1].end - end) > 1e-6:
        problems.append(f"ends at {format_clock(items[-1].end)}, not {format_clock(end)}")
    for index, item in enumerate(items):
        if item.end <= item.start:
            problems.append(f"item {index} is empty or reversed")
        if item.poi_id not in known_pois and item.poi_id != home:
            problems.append(f"item {index} names unknown place {item.poi_id!r}")
        if index and abs(item.start - items[index - 1].end) > 1e-6:
            kind = "overlaps" if item.start < items[index - 1].end else "leaves a gap after"
            problems.append(f"item {index} {kind} item {index - 1}")
    return problems


FALLBACK_ACTIVITY = {
    "ja": "{name}で過ごす",
    "en": "Spend time at {name}",
}


def fallback_plan(
    pois: Sequence[tuple[str, str, str]],
    *,
    home: str | None,
    start: float,
    end: float,
    language: str = "ja",
) -> list[PlanItem]:
    """A safe, deterministic plan when the model cannot give one: home, a few public places, home.

    Args:
        pois: (id, name, kind) of the world's points of interest, in a stable order.
        home, start, end, language: as for `repair_plan`.
    """
    public = [(pid, name) for pid, name, kind in pois if pid != home and kind != "home"][:3]
    home_text = HOME_ACTIVITY.get(language, HOME_ACTIVITY["en"])
    template = FALLBACK_ACTIVITY.get(language, FALLBACK_ACTIVITY["en"])
    span = end - start
    items: list[dict[str, Any]] = []
    if public and span >= 3:
        morning = min(1.0, span / 4)
        block = min(2.0, (span - 2 * morning) / len(public))
        cursor = start + morning
        items.append({"start": start, "end": cursor, "poi_id": home, "activity": home_text})
        for pid, name in public:
            items.append(
                {
                    "start": cursor,
                    "end": cursor + block,
                    "poi_id": pid,
                    "activity": template.format(name=name),
                }
            )
            cursor += block
        items.append({"start": cursor, "end": end, "poi_id": home, "activity": home_text})
    else:
        items.append({"start": start, "end": end, "poi_id": home, "activity": home_text})
    known = {pid for pid, _, _ in pois}
    try:
        repaired, _ = repair_plan(items, known_pois=known, home=home, start=start, end=end, language=language)
    except (PlanUnrepairable, ValueError):  # a window too short to hold an item: the fallback is still total
        return [PlanItem(start=start, end=max(end, start), poi_id=home, activity=home_text)]
    return repaired


def keep_appointments(
    items: Sequence[PlanItem],
    appointments: Sequence[tuple[float, float, str, str]],
    *,
    start: float,
    end: float,
) -> tuple[list[PlanItem], list[str]]:
    """A sound plan with each appointment (start, end, poi_id, activity) in [start, end) kept at its time and
    place: an item at that place already overlapping it stays; otherwise the appointment is put in, and the
    items it covers are cut around it. Returns the plan and what was changed (empty when nothing was)."""
    result = [item.model_dump() for item in items]
    repairs: list[str] = []
    for begin, finish, poi_id, activity in appointments:
        begin, finish = max(begin, start), min(finish, end)
        if finish - begin < MIN_ITEM_HOURS:
            continue
        if any(it["poi_id"] == poi_id and it["start"] < finish and it["end"] > begin for it in result):
            continue
        cut: list[dict[str, Any]] = []
        for it in result:
            if it["end"] <= begin or it["start"] >= finish:
                cut.append(it)
                continue
            if it["start"] < begin - MIN_ITEM_HOURS:
                cut.append({**it, "end": begin})
            if it["end"] > finish + MIN_ITEM_HOURS:
                cut.append({**it, "start": finish})
        cut.append({"start": begin, "end": finish, "poi_id": poi_id, "activity": activity[:200]})
        result = _fill_gaps(sorted(cut, key=lambda it: it["start"]), start, end, poi_id, activity, [])
        repairs.append(f"appointment {format_clock(begin)}-{format_clock(finish)} at {poi_id!r} kept")
    return [PlanItem.model_validate(it) for it in result], repairs
