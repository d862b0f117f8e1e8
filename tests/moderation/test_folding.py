"""`fold`: what the word list compares, and the look-alike table it folds Latin look-alikes with."""

from __future__ import annotations

import unicodedata

import pytest

from backend.moderation import WordList, fold
from backend.moderation.lookalikes import derive, lookalikes


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("f\u0336ü\u200bc\u00adk", "fuck"),  # strike-through, an accent, a zero-width space, a soft hyphen
        ("fu\u0441k wh\u043ere", "fuck whore"),  # Cyrillic с and о
        ("ⓕ𝐮ｃ🅺", "fuck"),
        ("İstanbul", "istanbul"),  # casefolding's combining dot goes too
        ("セックス ｾｯｸｽ セツクス", "せつくす せつくす せつくす"),  # small kana to full size
        ("ｶﾞｷﾞ か゛", "がぎ が"),  # voicing marks, half-width or written apart, join their kana
        ("死\U000e0041\ufe0f\u2060ね", "死ね"),  # a tag character, a variation selector, a word joiner
        ("line\u0000one\ttwo\n\nthree", "lineone two three"),
    ],
)
def test_fold_takes_the_disguises_off(text: str, folded: str) -> None:
    assert fold(text) == folded


def test_fold_keeps_the_voicing_marks_that_make_another_word() -> None:
    assert fold("ばか") != fold("はか") and fold("が") == "が"
    words = WordList.parse("harassment:ばか\n")
    for said in ("バカじゃないの", "ﾊﾞｶ", "は゛か", "ば\u200bか"):
        assert words.find(said) is not None, said
    assert words.find("はかない夢だった") is None  # はか is not ばか with its marks dropped


def test_fold_leaves_japanese_text_as_it_is_but_for_the_kana() -> None:
    assert fold("中央カフェで死角、二子玉川〇〇さん") == "中央かふえで死角、二子玉川〇〇さん"


def test_the_shipped_table_folds_latin_look_alikes_and_never_japanese() -> None:
    table = lookalikes()
    assert table["\u0441"] == "c" and table["\u03bf"] == "o" and table["\U0001f1eb"] == "f"
    japanese = [c for c in table if "KATAKANA" in unicodedata.name(c, "") or "CJK" in unicodedata.name(c, "")]
    assert japanese == []
    assert all(letter.isascii() and letter.isalnum() and len(letter) == 1 for letter in table.values())


def test_the_table_is_derived_from_confusables_lines() -> None:
    lines = [
        "0441 ;\t0063 ;\tMA\t# ( с → c ) CYRILLIC SMALL LETTER ES → LATIN SMALL LETTER C\t#",
        "FF43 ;\t0063 ;\tMA\t# ( ｃ → c ) FULLWIDTH LATIN SMALL LETTER C (NFKC makes it c already)",
        "006D ;\t0072 006E ;\tMA\t# ( m → rn ) two letters, not one",
        "30CE ;\t002F ;\tMA\t# ( ノ → / ) KATAKANA LETTER NO",
        "4E00 ;\t30FC ;\tMA\t# ( 一 → ー ) CJK UNIFIED IDEOGRAPH-4E00",
        "3007 ;\t004F ;\tMA\t# ( 〇 → O ) IDEOGRAPHIC NUMBER ZERO (a Japanese hidden letter, kept)",
        "0399 ;\t006C ;\tMA\t# ( Ι → l ) GREEK CAPITAL LETTER IOTA",
    ]
    derived = dict(derive(lines))
    assert derived["\u0441"] == "c" and derived["\u0399"] == "l"
    assert not {"\uff43", "m", "\u30ce", "\u4e00", "\u3007"} & derived.keys()
    assert derived["\U0001f1eb"] == "f"  # regional indicators come from the character names
