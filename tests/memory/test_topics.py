"""Topics of a conversation (what person memory and conversation reflections say it was about): whole
Japanese words, not runs that cut across two words, and not filler; memory tags are left as they were."""

from __future__ import annotations

import pytest

from backend.memory.tags import memory_tags
from backend.memory.topics import STOP_TOPICS, topics
from backend.text import keywords


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # この前 + 話した: the kanji run 前話 spans two words; 話 is a verb stem here.
        ("そういえば、この前話した図書館のこと、覚えてる？", ["図書館"]),
        ("えっ、図書館？本当に？", ["図書館"]),
        ("このあと「カフェで一息」の予定なんだ。", ["カフェ"]),
        ("美味しいケーキだったね。ちょっと一息つこう", ["ケーキ"]),
        ("今日はいい日になりそうだね。", []),
        # Kanji and katakana written together are one name.
        ("中央カフェで会えるなんて嬉しいな。", ["中央カフェ"]),
        ("最近、絵本のことばかり考えてるんだ。", ["絵本"]),
        ("お茶でも飲もうか。", ["お茶"]),
        # Counters are not topics.
        ("3日目に2回話した", []),
        ("I really love the bakery near the station", ["bakery", "station"]),
    ],
)
def test_topics_are_whole_words(text: str, expected: list[str]) -> None:
    assert topics(text, limit=5) == expected


def test_topics_rank_by_frequency_then_first_appearance_and_skip_names() -> None:
    text = "ヒカリさんと公園へ。図書館で本を借りて、公園のベンチで読んだ。ヒカリは図書館が好き。カフェも。"
    assert topics(text, limit=3, exclude=["ヒカリ"]) == [
        "公園",
        "図書館",
        "ベンチ",
    ]  # ベンチ before カフェ: seen first
    assert topics(text, limit=1, exclude=["ヒカリ"]) == ["公園"]
    assert "ヒカリ" in topics(text, limit=5)
    assert topics("", limit=3) == []


def test_no_topic_is_a_stop_word_or_a_word_fragment() -> None:
    lines = [
        "こんにちは、ひかりさん！中央カフェで会えるなんて嬉しいです。",
        "うんうん、わかる気がします。そういえば、この前話した図書館のこと、覚えています？",
        "えっ、図書館？本当に？今日は一息つこう。ちょっと時間ある？",
    ]
    found = topics(" ".join(lines), limit=10)
    assert found == ["図書館", "中央カフェ"]
    assert not set(found) & STOP_TOPICS


def test_memory_tags_and_keywords_are_unchanged_by_topics() -> None:
    # Retrieval and dedup keep their own tokenisation: the fragment 前話 is still a keyword and a tag there.
    text = "この前話した図書館のこと"
    assert keywords(text) == ["図書館", "前話"]
    assert memory_tags(text)[:2] == ["図書館", "前話"]
