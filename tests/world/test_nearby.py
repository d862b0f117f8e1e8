"""The places a prompt offers (world/nearby.py): at most the cap however big the town, always where the agent
is, its home and its plan's and news's places, then those its memories name, then the nearest."""

from __future__ import annotations

from backend.world.nearby import Spot, offered, position_of

TOWN = [Spot(f"p{i:03d}", f"Place {i}", x=float(i), z=0.0) for i in range(300)]
TOWN += [Spot("corner_cafe", "Corner Cafe", 500.0, 0.0), Spot("ben_home", "Ben's cottage", 400.0, 0.0)]


def test_the_cap_holds_and_what_matters_comes_first() -> None:
    chosen = offered(TOWN, cap=8, here="Place 150", home="ben_home", named=["p299", None, "nowhere"],
                     text="Mia told me about a party at the Corner Cafe.", position=(150.0, 0.0))  # fmt: skip
    ids = [spot.id for spot in chosen]
    assert len(ids) == 8
    assert ids[:4] == ["p150", "ben_home", "p299", "corner_cafe"]  # here, home, the plan's, a named one
    assert set(ids[4:]) == {"p149", "p151", "p148", "p152"}  # then the nearest to where it stands


def test_a_small_town_is_offered_whole_and_unknown_ids_are_skipped() -> None:
    small = TOWN[:5]
    assert [s.id for s in offered(small, cap=12, named=["zzz"])] == [s.id for s in small]


def test_without_a_position_the_home_is_the_centre_and_then_ids_order() -> None:
    ids = [s.id for s in offered(TOWN, cap=3, home="p010")]
    assert ids == ["p010", "p009", "p011"]
    assert [s.id for s in offered(TOWN[:300], cap=2)] == ["p000", "p001"]


def test_japanese_names_are_found_in_text_without_spaces() -> None:
    town = [Spot("cafe", "中央カフェ"), Spot("park", "公園"), Spot("shrine", "神社")]
    chosen = offered(town, cap=2, text="ひかりが明日の17時に中央カフェでパーティーを開くって")
    assert chosen[0].id == "cafe"


def test_a_position_is_read_from_unitys_report() -> None:
    assert position_of({"x": 1, "y": 2, "z": 3.5}) == (1.0, 3.5)
    assert position_of(None) is None and position_of({"x": "a"}) is None
