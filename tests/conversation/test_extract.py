"""The incremental "dialogue" extractor must agree with json.loads however the reply is chunked."""

from __future__ import annotations

import json

import pytest

from backend.conversation.extract import FieldExtractor

REPLIES = [
    {"dialogue": "こんにちは、ひかりさん！", "emotion": "happy", "is_conversation_end": False},
    {"emotion": "sad", "dialogue": 'He said "no".\nThen\tleft \\ again', "is_conversation_end": True},
    {"meta": {"dialogue": "nested, not this"}, "dialogue": "top level 😀 wins", "emotion": "neutral"},
    {"dialogue": "", "emotion": "neutral", "is_conversation_end": False},
    {"notes": ["a", "dialogue"], "dialogue": "after an array", "emotion": "relaxed"},
]


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("reply", REPLIES)
@pytest.mark.parametrize("ascii_only", [False, True])
def test_every_chunk_size_gives_the_parsed_value(reply: dict, ascii_only: bool) -> None:
    raw = json.dumps(reply, ensure_ascii=ascii_only)
    for size in range(1, len(raw) + 1):
        extractor = FieldExtractor("dialogue")
        pieces = [extractor.feed(chunk) for chunk in _chunks(raw, size)]
        assert "".join(pieces) == reply["dialogue"], (size, pieces)
        assert extractor.value == reply["dialogue"]
        assert extractor.done


def test_surrogate_pair_split_between_chunks() -> None:
    raw = '{"dialogue": "A\\ud83d\\ude00B"}'
    split = raw.index("\\ude00")
    extractor = FieldExtractor()
    first = extractor.feed(raw[: split + 2])  # ends inside the second escape
    assert first == "A"  # the high half is held back until its low half arrives
    assert first + extractor.feed(raw[split + 2 :]) == "A😀B"


def test_prose_and_code_fence_before_the_object_are_skipped() -> None:
    raw = 'Sure! Here it is: ```json\n{"dialogue": "hi [there]", "emotion": "happy"}\n```'
    extractor = FieldExtractor()
    assert "".join(extractor.feed(c) for c in _chunks(raw, 3)) == "hi [there]"


def test_streams_text_before_the_value_is_closed() -> None:
    extractor = FieldExtractor()
    assert extractor.feed('{"dialogue": "Hel') == "Hel"
    assert not extractor.done
    assert extractor.feed('lo", "emotion"') == "lo"
    assert extractor.done
    assert extractor.feed(': "happy"}') == ""
