"""The word list: Japanese without spaces, kana and width variants, English word boundaries, spelled out."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.errors import ConfigError
from backend.moderation import DEFAULT_WORDS_FILE, Hit, WordList, fold, load_word_list


@pytest.fixture(scope="module")
def default() -> WordList:
    return load_word_list()


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("お前なんか死ねよ", Hit("harassment", "死ね")),
        ("マジでキモいんだけど", Hit("harassment", "きもい")),  # katakana in the text, hiragana in the list
        ("ｺﾛｽぞ", Hit("violence", "ころすぞ")),  # half-width katakana
        ("コロスぞ", Hit("violence", "ころすぞ")),
        ("せっくすしよう", Hit("sexual", "セックス")),  # hiragana in the text, katakana in the list
        ("死　ね", Hit("harassment", "死ね")),  # a full-width space between the characters
        ("ＦＵＣＫ", Hit("harassment", "fuck")),  # full-width letters
        ("fuckあいつ", Hit("harassment", "fuck")),  # Japanese right after an English word is a boundary
        ("Fucking hell", Hit("harassment", "fuck")),
        ("the nazis", Hit("hate", "nazi")),
        ("kys", Hit("self_harm", "kys")),
        ("please just kill yourself", Hit("self_harm", "kill yourself")),
        ("killyourself", Hit("self_harm", "kill yourself")),
        ("自殺したい", Hit("self_harm", "自殺")),
    ],
)
def test_the_default_list_finds(default: WordList, text: str, hit: Hit) -> None:
    assert default.find(text) == hit


@pytest.mark.parametrize("text", ["f.u.c.k", "f u c k", "F-U-C-K", "f_u_c_k", "f. u. c. k"])
def test_spelled_out_letters_are_found(default: WordList, text: str) -> None:
    assert default.find(text) == Hit("harassment", "fuck")


def test_a_spelled_out_phrase_is_the_longer_entry(default: WordList) -> None:
    # "k i l l y o u" is also there; the longer match at the same place wins.
    assert default.find("k i l l y o u r s e l f") == Hit("self_harm", "kill yourself")


@pytest.mark.parametrize(
    "text",
    [
        "こんにちは、今日はいい天気ですね",
        "わたしね、おかしな人に会ったの",  # しね / シナ人 inside ordinary words: neither is in the list
        "あのころすごく楽しかった",  # ころす inside あのころすごく
        "Let's hit the road",  # s-hit across words is not s h i t spelled out
        "I grabbed some grape juice and rapeseed oil",
        "I grew up near Sussex and Essex",
        "What a lovely day for a walk in the park",
    ],
)
def test_the_default_list_lets_ordinary_text_through(default: WordList, text: str) -> None:
    assert default.find(text) is None


def test_english_entries_match_whole_words_only() -> None:
    words = WordList.parse("ass\ncunt\nharassment:tit\n")
    for text in ("first class", "my assistant", "Scunthorpe United", "the title", "petition", "bass guitar"):
        assert words.find(text) is None, text
    assert words.find("what an ass") == Hit("other", "ass")
    assert words.find("ASSES") == Hit("other", "ass")  # a common ending
    assert words.find("Tits!") == Hit("harassment", "tit")


def test_the_earliest_match_in_the_text_is_the_hit() -> None:
    words = WordList.parse("violence:殺す\nharassment:うざい\n")
    assert words.find("うざい、殺すぞ") == Hit("harassment", "うざい")
    assert words.find("殺すぞ、うざい") == Hit("violence", "殺す")


def test_parse_reads_comments_categories_and_blank_lines() -> None:
    words = WordList.parse(
        "# a comment\n\nSexual: レイプ  # trailing comment\nhate:nazi\nplain entry\nhate:nazi\n"
    )
    assert len(words) == 3  # the repeated entry counts once
    assert words.find("れいぷ") == Hit("sexual", "レイプ")
    assert words.find("a Plain   Entry here") == Hit("other", "plain entry")


def test_fold_normalises_width_case_and_kana() -> None:
    assert fold("ＡＢＣ　ｶﾀｶﾅ  Kana") == "abc かたかな kana"


def test_an_operators_file_replaces_the_default(tmp_path: Path) -> None:
    own = tmp_path / "booth.txt"
    own.write_text("# our booth\nharassment:ばか\nspoilers:ending\n", encoding="utf-8")
    words = load_word_list(own)
    assert words.find("バカじゃないの") == Hit("harassment", "ばか")
    assert words.find("tell me the ending") == Hit("spoilers", "ending")
    assert words.find("お前なんか死ねよ") is None  # the default's entries are gone
    assert load_word_list().find("お前なんか死ねよ") is not None


def test_the_default_file_has_both_languages_and_every_category(default: WordList) -> None:
    text = DEFAULT_WORDS_FILE.read_text(encoding="utf-8")
    entries = [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]
    categories = {entry.split(":", 1)[0] for entry in entries}
    assert {"sexual", "violence", "hate", "self_harm", "personal_info", "harassment"} <= categories
    assert any(not e.isascii() for e in entries) and any(e.isascii() for e in entries)
    assert "MODERATION_WORDS_FILE" in text
    assert len(default) == len(entries)


def test_an_unreadable_file_is_a_config_error_naming_the_setting(tmp_path: Path) -> None:
    broken = tmp_path / "latin1.txt"
    broken.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ConfigError, match="MODERATION_WORDS_FILE"):
        load_word_list(broken)


def test_a_hidden_letter_is_never_the_first_nor_the_last_of_a_short_entry() -> None:
    words = WordList.parse("sexual:sex\nharassment:fuck\n")
    assert words.find("s*x") == Hit("sexual", "sex")
    assert words.find("f**k") == words.find("f***") == Hit("harassment", "fuck")
    for text in ("se*", "*ex", "5**(-e*y)", "***", "x = s * x"):
        assert words.find(text) is None, text


def test_signs_between_letters_stay_inside_a_word() -> None:
    words = WordList.parse("harassment:shit\n")
    assert words.find("sh.it") == words.find("sh😀it") == Hit("harassment", "shit")
    for text in ("it's hit or miss", "`${hit.type}`", "s/hi t"):
        assert words.find(text) is None, text


def test_a_japanese_gap_never_crosses_a_sentence_end() -> None:
    words = WordList.parse("harassment:死ね\n")
    assert words.find("死、ね") == Hit("harassment", "死ね")
    for text in ("必死。ねえ、聞いて", "必死！ねむい", "死？ねこ"):
        assert words.find(text) is None, text


def test_an_entry_of_long_vowel_marks_only_is_left_out() -> None:
    words = WordList.parse("ー\nーー\nharassment:うざい\n")
    assert len(words) == 1 and words.find("こんにちは") is None


def test_digits_for_letters_never_outnumber_the_letters() -> None:
    words = WordList.parse("sexual:sex\nharassment:shit\nother:911\nother:h8 you\n")
    for text in ("a 53x zoom lens", "room 5h17", "2 5 3 x 4"):
        assert words.find(text) is None, text
    assert words.find("53x or 5ex") == Hit("sexual", "sex")  # the next match counts
    assert words.find("sh1t") == Hit("harassment", "shit")
    assert words.find("call 911") == Hit("other", "911")  # the entry's own digits are letters here
    assert words.find("h8 u") is None and words.find("h8 you") == Hit("other", "h8 you")
