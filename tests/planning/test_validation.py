"""Plan validation and repair (pure functions): each kind of broken plan is detected and repaired."""

from __future__ import annotations

import pytest

from backend.planning.schemas import PlanItem, PlanReplyItem
from backend.planning.validation import PlanUnrepairable, fallback_plan, plan_problems, repair_plan

KNOWN = {"home", "cafe", "park", "library"}


def item(start: float, end: float, poi: str = "cafe", activity: str = "x") -> dict[str, object]:
    return {"start": start, "end": end, "poi_id": poi, "activity": activity}


def repair(items: list[dict[str, object]], start: float = 7.0, end: float = 22.0):
    return repair_plan(items, known_pois=KNOWN, home="home", start=start, end=end, language="ja")


def spans(items: list[PlanItem]) -> list[tuple[float, float, str | None]]:
    return [(it.start, it.end, it.poi_id) for it in items]


def problems(items: list[PlanItem], start: float = 7.0, end: float = 22.0) -> list[str]:
    return plan_problems(items, known_pois=KNOWN, home="home", start=start, end=end)


def test_a_sound_plan_is_kept_as_is() -> None:
    plan = [item(7, 9, "home"), item(9, 12, "library"), item(12, 18, "park"), item(18, 22, "home")]
    repaired, repairs = repair(plan)
    assert repairs == []
    assert spans(repaired) == [(7, 9, "home"), (9, 12, "library"), (12, 18, "park"), (18, 22, "home")]
    assert problems(repaired) == []


def test_unknown_place_is_detected_and_replaced_by_home() -> None:
    raw = [
        PlanItem(**item(7, 12, "library")),
        PlanItem(**item(12, 15, "moon_base")),
        PlanItem(**item(15, 22)),
    ]
    assert any("moon_base" in p for p in problems(raw))
    repaired, repairs = repair([it.model_dump() for it in raw])
    assert spans(repaired)[1] == (12, 15, "home")
    assert any("moon_base" in r for r in repairs)
    assert problems(repaired) == []


def test_mostly_unknown_places_cannot_be_repaired() -> None:
    with pytest.raises(PlanUnrepairable, match="do not exist"):
        repair([item(7, 12, "x"), item(12, 17, "y"), item(17, 22, "cafe")])


def test_overlap_is_detected_and_trimmed() -> None:
    raw = [item(7, 12, "library"), item(11, 15, "cafe"), item(15, 22, "park")]
    assert any("overlaps" in p for p in problems([PlanItem(**r) for r in raw]))
    repaired, repairs = repair(raw)
    assert spans(repaired) == [(7, 12, "library"), (12, 15, "cafe"), (15, 22, "park")]
    assert any("overlapped" in r for r in repairs)


def test_an_item_swallowed_by_an_earlier_one_is_dropped() -> None:
    repaired, _ = repair([item(7, 15, "library"), item(9, 11, "cafe"), item(15, 22, "park")])
    assert spans(repaired) == [(7, 15, "library"), (15, 22, "park")]


def test_out_of_hours_is_detected_and_clipped() -> None:
    raw = [item(5, 12, "library"), item(12, 23.5, "park"), item(23.5, 24, "cafe")]
    found = problems([PlanItem(**r) for r in raw])
    assert any("starts at 05:00" in p for p in found) and any("ends at 24:00" in p for p in found)
    repaired, repairs = repair(raw)
    assert spans(repaired) == [(7, 12, "library"), (12, 22, "park")]
    assert sum("outside" in r for r in repairs) == 3  # two clipped, one dropped entirely


def test_gaps_are_detected_and_filled_with_home() -> None:
    raw = [item(9, 11, "library"), item(12, 18, "park")]
    found = problems([PlanItem(**r) for r in raw])
    assert any("gap" in p for p in found) and any("starts at 09:00" in p for p in found)
    repaired, repairs = repair(raw)
    assert spans(repaired) == [
        (7, 9, "home"),
        (9, 11, "library"),
        (11, 12, "home"),
        (12, 18, "park"),
        (18, 22, "home"),
    ]
    assert repaired[0].activity == "家で過ごす"
    assert sum("gap" in r for r in repairs) == 3


def test_unordered_items_are_sorted() -> None:
    repaired, repairs = repair([item(15, 22, "park"), item(7, 15, "library")])
    assert spans(repaired) == [(7, 15, "library"), (15, 22, "park")]
    assert "items reordered by start time" in repairs


def test_reversed_items_are_dropped() -> None:
    repaired, repairs = repair([item(7, 16, "library"), item(18, 17, "cafe"), item(16, 22, "park")])
    assert spans(repaired) == [(7, 16, "library"), (16, 22, "park")]
    assert any("ends before it starts" in r for r in repairs)


@pytest.mark.parametrize(
    "raw",
    [
        [],
        [item(7, 8, "cafe")],
        [item(1, 3, "cafe"), item(23, 24, "park")],
        [{"poi_id": "cafe"}],
        ["nonsense"],
    ],
)
def test_plans_beyond_repair_raise(raw: list[object]) -> None:
    with pytest.raises(PlanUnrepairable):
        repair(raw)  # type: ignore[arg-type]


def test_a_sliver_left_by_rounding_is_absorbed_not_a_gap_item() -> None:
    repaired, _ = repair([item(7, 12.001, "library"), item(12.01, 22, "park")])
    assert len(repaired) == 2 and repaired[1].start == repaired[0].end


def test_window_for_replanning_is_respected() -> None:
    repaired, _ = repair([item(10, 16, "cafe"), item(16, 22, "park")], start=13.25, end=22)
    assert spans(repaired) == [(13.25, 16, "cafe"), (16, 22, "park")]


def test_model_clock_strings_are_read_as_hours() -> None:
    parsed = PlanReplyItem.model_validate(
        {"start": "08:30", "end": "9:45", "poi_id": "cafe", "activity": "a"}
    )
    assert (parsed.start, parsed.end) == (8.5, 9.75)


def test_fallback_plan_is_sound_and_deterministic() -> None:
    pois = [("home", "家", "home"), ("cafe", "中央カフェ", "cafe"), ("park", "公園", "park")]
    first = fallback_plan(pois, home="home", start=7, end=22, language="ja")
    assert first == fallback_plan(pois, home="home", start=7, end=22, language="ja")
    assert problems(first) == []
    assert {it.poi_id for it in first} == {"home", "cafe", "park"}
    assert "中央カフェ" in next(it.activity for it in first if it.poi_id == "cafe")


def test_fallback_without_any_place_stays_home_all_day() -> None:
    plan = fallback_plan([], home=None, start=6, end=21, language="en")
    assert spans(plan) == [(6, 21, None)] and plan[0].activity == "Time at home"


def test_items_timed_by_their_hours_follow_each_other_from_the_window_start() -> None:
    # The schema asks for where, what and how long: each item begins where the day so far ends.
    reply = [{"poi_id": "cafe", "activity": "x", "hours": 5}, {"poi_id": "park", "activity": "y", "hours": 6},
             {"poi_id": "home", "activity": "z", "hours": 4}]  # fmt: skip
    items, repairs = repair(reply)
    assert spans(items) == [(7, 12, "cafe"), (12, 18, "park"), (18, 22, "home")] and repairs == []
    items, _ = repair(reply, start=10.5)  # a replan from 10:30: the last item is clipped to the window
    assert spans(items)[0] == (10.5, 15.5, "cafe") and spans(items)[-1] == (21.5, 22, "home")


def test_a_small_models_durations_are_laid_out_clipped_and_zero_ones_dropped() -> None:
    # SmolLM2's way: a few hours each, some nothing, more than the day holds.
    reply = [{"poi_id": p, "activity": "a", "hours": h} for p, h in
             [("library", 2), ("library", 4), ("park", 0), ("cafe", 3), ("library", 8), ("park", 3)]]  # fmt: skip
    items, repairs = repair(reply)
    assert spans(items) == [(7, 13, "library"), (13, 16, "cafe"), (16, 22, "library")]  # 2 + 4 h merged
    assert any("ends before it starts: dropped" in r for r in repairs)  # the 0-hour item
    assert any("clipped to the window" in r for r in repairs)  # library 16:00 + 8 hours
    assert len([r for r in repairs if "dropped" in r]) == 2  # and park, after the day was full
    # A few activities covering under half the day (SmolLM2's plans): kept, the rest of the day at home.
    few = [{"poi_id": "cafe", "activity": "a", "hours": 3}, {"poi_id": "park", "activity": "b", "hours": 4}]
    items, repairs = repair(few)
    assert spans(items) == [(7, 10, "cafe"), (10, 14, "park"), (14, 22, "home")]
    assert any("home" in r for r in repairs)
    # Durations that cover too little of the day (3 of 15 hours): not worth repairing.
    with pytest.raises(PlanUnrepairable):
        repair(
            [{"poi_id": "cafe", "activity": "a", "hours": 1}, {"poi_id": "park", "activity": "b", "hours": 2}]
        )


def test_an_activity_that_only_names_a_place_or_reads_like_an_id_is_written_in_words() -> None:
    names = {"home": "家", "cafe": "中央カフェ", "park": "公園", "library": "図書館"}
    reply = [
        item(7, 12, "library", "library"),
        item(12, 18, "park", "中央カフェ"),
        item(18, 22, "cafe", "fresco_baking"),
    ]
    items, repairs = repair_plan(reply, known_pois=names, home="home", start=7, end=22, language="ja")
    assert [it.activity for it in items] == ["図書館で過ごす", "公園で過ごす", "fresco baking"]
    assert len(repairs) == 3
    # Without names (ids only) an activity is kept as written; a sentence with an underscore is left alone.
    kept, _ = repair([item(7, 22, "park", "library")])
    assert kept[0].activity == "library"
    assert repair([item(7, 22, "park", "read my_notes here")])[0][0].activity == "read my_notes here"


def test_the_plan_schema_asks_for_hours_not_times_and_at_least_one_item() -> None:
    from backend.llm.base import json_schema_for
    from backend.planning.schemas import plan_reply_for

    sent = json_schema_for(plan_reply_for(("cafe", "park")))["properties"]["items"]
    assert list(sent["items"]["properties"]) == ["poi_id", "activity", "hours"] and sent["minItems"] == 1
    assert sent["items"]["properties"]["hours"]["maximum"] == 8  # no one item takes the whole day
    # A reply that gives a start and an end anyway is taken at its word; one with no time at all is not valid.
    assert PlanReplyItem.model_validate({"poi_id": "cafe", "activity": "a", "start": 9, "end": 10}).start == 9
    with pytest.raises(ValueError, match="hours"):
        PlanReplyItem.model_validate({"poi_id": "cafe", "activity": "a"})
    # More hours than a day (a server whose grammar ignores the bound) means the rest of the day.
    assert PlanReplyItem.model_validate({"poi_id": "cafe", "activity": "a", "hours": 3000}).hours == 24


def test_back_to_back_repeats_of_an_item_are_merged() -> None:
    reply = [{"poi_id": "park", "activity": "walk", "hours": 2} for _ in range(3)]
    reply.append({"poi_id": "cafe", "activity": "tea", "hours": 9})
    items, repairs = repair(reply)
    assert spans(items) == [(7, 13, "park"), (13, 22, "cafe")]
    assert sum("merged" in r for r in repairs) == 2


def test_the_fallback_plan_is_total_even_for_a_sliver_of_a_day() -> None:
    from backend.planning.validation import fallback_plan

    for start, end in ((7.0, 7.001), (23.99, 24.0), (7.0, 7.0)):
        items = fallback_plan(
            [("cafe", "カフェ", "cafe"), ("home", "家", "home")], home="home", start=start, end=end
        )
        assert len(items) == 1 and items[0].poi_id == "home" and items[0].start == start


def test_an_awake_window_shorter_than_an_hour_is_refused_on_write(client) -> None:  # type: ignore[no-untyped-def]
    reply = client.put("/v1/agents/aoi", json={"name": "葵", "wake_hour": 7, "sleep_hour": 7.001})
    assert reply.status_code == 422 and "sleep_hour" in reply.text
    assert (
        client.put("/v1/agents/aoi", json={"name": "葵", "wake_hour": 7, "sleep_hour": 8}).status_code == 201
    )
