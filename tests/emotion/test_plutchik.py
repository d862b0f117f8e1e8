from __future__ import annotations

import pytest

from backend.emotion.plutchik import PLUTCHIK, baseline_for, decay, label, vrm_preset


def state(**values: float) -> dict[str, float]:
    return {name: values.get(name, 0.0) for name in PLUTCHIK}


@pytest.mark.parametrize(
    ("values", "preset"),
    [
        (state(joy=80), "happy"),
        (state(anticipation=60), "happy"),
        (state(anger=70), "angry"),
        (state(disgust=55), "angry"),
        (state(sadness=65), "sad"),
        (state(surprise=60), "surprised"),
        (state(fear=70), "surprised"),
        (state(trust=60), "relaxed"),
        (state(joy=20, trust=20, anger=10), "neutral"),  # low arousal: nothing reaches the threshold
        (state(joy=50, anger=70), "angry"),  # the strongest driver wins
        (state(), "neutral"),
    ],
)
def test_vrm_mapping_table(values: dict[str, float], preset: str) -> None:
    assert vrm_preset(values) == preset


def test_labels_by_intensity_and_language() -> None:
    assert label(state(joy=90), "ja") == "恍惚"
    assert label(state(joy=60), "ja") == "喜び"
    assert label(state(joy=30), "ja") == "平穏"
    assert label(state(anger=35), "ja") == "苛立ち"
    assert label(state(anger=35), "en") == "annoyance"
    assert label(state(joy=10), "en") == "calm"


def test_neighbouring_emotions_make_a_dyad() -> None:
    assert label(state(joy=70, trust=60), "ja") == "愛"
    assert label(state(anticipation=65, joy=55), "en") == "optimism"
    # Not neighbours on the wheel: the stronger one's label.
    assert label(state(joy=70, anger=60), "ja") == "喜び"


def test_decay_halves_the_distance_to_baseline_per_half_life() -> None:
    base = state(joy=20)
    excited = state(joy=100)
    assert decay(excited, base, 60, 60)["joy"] == pytest.approx(60.0)
    assert decay(excited, base, 120, 60)["joy"] == pytest.approx(40.0)
    assert decay(excited, base, 0, 60)["joy"] == 100.0
    assert decay(excited, base, 10_000, 60)["joy"] == pytest.approx(20.0, abs=0.01)


def test_baseline_follows_persona_words() -> None:
    cheerful = baseline_for(["明るい", "好奇心旺盛"])
    shy = baseline_for(["内気"])
    assert cheerful["joy"] > shy["joy"]
    assert cheerful["anticipation"] > shy["anticipation"]
    assert shy["fear"] > cheerful["fear"]
    assert all(0 <= v <= 100 for v in cheerful.values())
