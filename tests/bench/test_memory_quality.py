"""bench/memory_quality.py's data handling (the bench itself prints figures and is not run here)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.memory_quality import JA_DATA, Hit, Question, evidence_ids, ja_score, load_ja, load_locomo, recall


def test_malformed_locomo_evidence_ids_are_normalised() -> None:
    assert evidence_ids(["D:11:26"]) == {"D11:26"}
    assert evidence_ids(["D30:05", "D8:6; D9:17"]) == {"D30:5", "D8:6", "D9:17"}


def test_locomo_sessions_become_game_days_and_questions_keep_known_evidence(tmp_path: Path) -> None:
    turn = {"speaker": "Mel", "dia_id": "D1:1", "text": "hi"}
    data = {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [turn],
        "session_2_date_time": "12:09 am on 10 May, 2023",
        "session_2": [{**turn, "dia_id": "D2:1", "text": "bye"}],
        "session_3_date_time": "9:00 am on 1 June, 2023",  # a date without turns
        "qa": [
            {"question": "q1", "evidence": ["D:2:01"], "category": 2},
            {"question": "q2", "evidence": ["D7:1"], "category": 1},  # no such turn
        ],
    }
    (tmp_path / "c.json").write_text(json.dumps(data))
    items, questions = load_locomo(tmp_path / "c.json", quick=False)
    assert [(i.key, i.text, i.day, round(i.time, 2)) for i in items] == [
        ("D1:1", "Mel: hi", 1, 13.93),
        ("D2:1", "Mel: bye", 3, 0.15),
    ]
    assert [(q.text, q.evidence, q.group, q.day) for q in questions] == [("q1", {"D2:1"}, "temporal", 4)]


def test_japanese_set_is_two_weeks_of_days_with_enough_questions() -> None:
    items, questions = load_ja(JA_DATA)
    per_day = Counter(i.day for i in items)
    assert len(per_day) >= 12 and all(8 <= n <= 15 for n in per_day.values())
    assert len({i.key for i in items}) == len(items)
    assert {key for q in questions for key in q.evidence} <= {i.key for i in items}
    kinds = Counter(q.group for q in questions)
    assert kinds["fact"] >= 32 and kinds["today"] >= 5 and kinds["yesterday"] >= 5
    assert all(q.day == max(per_day) for q in questions)


def test_scores() -> None:
    hits = [Hit(("a",), (3,)), Hit(("b", "c"), (2, 3)), *[Hit((), ())] * 10, Hit(("d",), (1,))]
    assert recall(Question("", {"c", "d"}, "", 3, 12.0), hits, 10) == 0.5
    assert ja_score(Question("", {"c"}, "fact", 3, 12.0), hits) == 1.0
    assert ja_score(Question("", set(), "today", 3, 12.0), hits) == 2.0
    assert ja_score(Question("", set(), "yesterday", 3, 12.0), hits) == 1.0
