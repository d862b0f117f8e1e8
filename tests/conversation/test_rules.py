"""Farewell detection, the end-rule precedence, emotion presets and fallback lines."""

from __future__ import annotations

from backend.config import DEFAULT_FAREWELLS
from backend.conversation import rules


def test_farewells_in_japanese_and_english() -> None:
    for text in [
        "じゃあ、またね！",
        "それではさようなら。",
        "ﾊﾞｲﾊﾞｲ",
        "また明日ね",
        "OK, BYE!",
        "See you later",
        "Goodbye.",
    ]:
        assert rules.has_farewell(text, DEFAULT_FAREWELLS), text
    for text in ["また来たの？", "Maybe later", "the byers family", "こんにちは", "a goodbyes-list"]:
        assert not rules.has_farewell(text, DEFAULT_FAREWELLS), text


def test_a_japanese_farewell_must_end_an_utterance() -> None:
    # No spaces between Japanese words: the phrase is found inside the line, but only counts where the
    # utterance stops after it (softeners such as ね, なさい, ー and punctuation or an emoji may follow).
    for text in [
        "また明日!",
        "おやすみなさーい",
        "じゃあねー",
        "またね〜😊",
        "またね、楽しかった",
        "バイバイっ",
        "またねw",
    ]:
        assert rules.has_farewell(text, DEFAULT_FAREWELLS), text
    for text in [
        "また明日も雨かな",  # "rain again tomorrow"
        "明日はおやすみ？",  # "is tomorrow your day off?"
        "おやすみの日は何してる？",
        "またねむいな",  # "sleepy again"
        "また明日はどうする？",
        "お疲れさま！今日も忙しかった？",  # a greeting between colleagues, not in the default list
    ]:
        assert not rules.has_farewell(text, DEFAULT_FAREWELLS), text


def test_full_width_latin_is_normalised() -> None:
    assert rules.has_farewell("ＢＹＥ！", DEFAULT_FAREWELLS)


def test_end_precedence_max_turns_then_farewell_then_model() -> None:
    common = {"max_turns": 8, "phrases": DEFAULT_FAREWELLS}
    assert rules.decide_end(
        model_flag=True, new_line="またね", partner_last=None, turn_count=8, **common
    ) == ("max_turns")
    assert rules.decide_end(
        model_flag=True, new_line="またね", partner_last=None, turn_count=3, **common
    ) == ("farewell")
    assert rules.decide_end(
        model_flag=False, new_line="うん", partner_last="じゃあね", turn_count=3, **common
    ) == ("farewell")
    assert (
        rules.decide_end(model_flag=True, new_line="うん", partner_last="そう", turn_count=3, **common)
        == "model"
    )
    assert (
        rules.decide_end(model_flag=False, new_line="うん", partner_last="そう", turn_count=7, **common)
        is None
    )


def test_the_models_end_flag_counts_from_the_second_line() -> None:
    # Small models set the flag on most opening lines: a conversation is not over before it began.
    common = {"max_turns": 8, "phrases": DEFAULT_FAREWELLS}
    opener = {"new_line": "こんにちは！", "partner_last": None}
    assert rules.decide_end(model_flag=True, turn_count=1, **opener, **common) is None
    assert rules.decide_end(model_flag=True, turn_count=2, **opener, **common) == "model"
    # A goodbye and the turn limit still end the first line.
    assert rules.decide_end(
        model_flag=True, new_line="またね", partner_last=None, turn_count=1, **common
    ) == ("farewell")
    assert rules.decide_end(model_flag=False, turn_count=1, **opener, max_turns=1, phrases=[]) == "max_turns"


def test_emotion_mapping_keeps_presets_and_maps_synonyms() -> None:
    assert rules.preset_emotion("happy") == "happy"
    assert rules.preset_emotion(" Joy ") == "happy"
    assert rules.preset_emotion("anger") == "angry"
    assert rules.preset_emotion("悲しい") == "sad"
    assert rules.preset_emotion("bewildered-ish") == "neutral"
    assert rules.preset_emotion(None) == "neutral"


def test_fallback_lines_are_stable_per_agent_and_language() -> None:
    assert rules.fallback_line("aoi", "ja") == rules.fallback_line("aoi", "ja")
    assert rules.fallback_line("aoi", "ja") in rules.FALLBACK_LINES["ja"]
    assert rules.fallback_line("aoi", "en") in rules.FALLBACK_LINES["en"]
    farewell = rules.fallback_line("aoi", "ja", farewell=True)
    assert rules.has_farewell(farewell, DEFAULT_FAREWELLS)


def test_ensure_farewell_appends_only_when_missing() -> None:
    assert rules.ensure_farewell("うん、またね", "aoi", "ja", DEFAULT_FAREWELLS) == "うん、またね"
    added = rules.ensure_farewell("楽しかった", "aoi", "ja", DEFAULT_FAREWELLS)
    assert added.startswith("楽しかった。") and rules.has_farewell(added, DEFAULT_FAREWELLS)
    english = rules.ensure_farewell("That was fun", "emma", "en", DEFAULT_FAREWELLS)
    assert english.startswith("That was fun. ") and rules.has_farewell(english, DEFAULT_FAREWELLS)


def test_line_text_strips_the_speaker_prefix() -> None:
    assert rules.line_text("ひかり: 今日は天気がいいね") == "今日は天気がいいね"
    assert rules.line_text("ひかり：またね") == "またね"
