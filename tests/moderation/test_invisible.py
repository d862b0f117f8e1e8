"""What is kept of invisible characters in stored visitor text, and whether a text shows anything at all."""

from __future__ import annotations

import pytest

from backend.moderation import clean, is_blank, visible


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\u0000\u0001\u200b",
        "  \t\n",
        "\u3164\u2800\u115f",  # Hangul fillers and the braille blank look like nothing
        "\ufe0f\U000e0100\U000e0041\U000e007f",  # variation selectors and tag characters
        "\u0301\u0336",  # combining marks with nothing to sit on
        "\u202e\u2066\ufeff\u00ad",  # bidi controls, a byte-order mark, a soft hyphen
        "\u3000\u00a0\u2028",  # ideographic and no-break spaces, a line separator
    ],
)
def test_a_text_of_invisible_characters_is_blank(text: str) -> None:
    assert is_blank(text) and visible(text) == ""


@pytest.mark.parametrize("text", ["a", "。", "😀", "\u200bあ", "!", "\ue000"])
def test_a_text_with_one_thing_to_see_is_not_blank(text: str) -> None:
    assert not is_blank(text)


def test_visible_keeps_what_shows() -> None:
    assert visible("a\u200bb c\u0301\u3164!") == "abc!"


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("\x00hi\x07 there\r\nok\tthen\rbye", "hi there\nok\tthen\nbye"),  # controls; line ends as \n
        ("hi\U000e0049\U000e0047\U000e004e\U000e007f", "hi"),  # tag characters (hidden ASCII)
        ("fu\u00adck \u202eevil\u202c \ufeffyes\u2060", "fuck evil yes"),
        ("\ud800broken", "broken"),  # a lone surrogate, which no database stores
        ("👨\u200d👩\u200d👧 and 🏳\ufe0f\u200d🌈", "👨\u200d👩\u200d👧 and 🏳\ufe0f\u200d🌈"),  # joined emoji
        ("\u200dhi\u200d \u200d\u200d x\u200c\u200cy", "hi  x\u200cy"),  # loose joiners and runs of them
        ("❤\ufe0f 葛\U000e0100城", "❤\ufe0f 葛\U000e0100城"),  # one selector after a character is kept
        ("😀" + "\U000e0100" * 12 + " \ufe0f", "😀\U000e0100 "),  # a run of selectors carries hidden text
        ("こんにちは、中央カフェです", "こんにちは、中央カフェです"),
    ],
)
def test_clean_drops_what_should_not_be_stored(text: str, stored: str) -> None:
    assert clean(text) == stored
