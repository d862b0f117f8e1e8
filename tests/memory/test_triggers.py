"""Memory triggers: every pattern of triggers.json, precedence, and how each kind retrieves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.config import Settings
from backend.memory import triggers
from backend.memory.models import Memory, ScoredMemory, Search
from backend.scripted import ScriptedLLM
from backend.text import normalise
from tests.conftest import make_client
from tests.memory.agents import add_agent
from tests.memory.helpers import add, call, service

DATA = json.loads(triggers.TRIGGERS_FILE.read_text(encoding="utf-8"))

#: One or more example lines per pattern of the data file (a new pattern without one fails the test below).
EXAMPLES: dict[str, list[str]] = {
    # past
    "(?<!の)前に": ["前にここで会ったよね?", "ずっと前に聞いた話だけど"],
    "以前": ["以前この店に来たことある?"],
    "あの(時|とき|頃|ころ)": ["あの時のケーキ美味しかったね", "あのころは楽しかったな"],
    "(覚|おぼ)えて(る|い|ま)": ["私のこと覚えてる?", "おぼえていますか"],
    "この前|このあいだ|こないだ": ["この前の祭り楽しかったね", "こないだはありがとう"],
    "初めて|はじめて": ["初めて会った日のこと", "はじめて話したのはどこだっけ"],
    "昔": ["昔の話を聞かせて"],
    "思い出": ["一緒に思い出を作ったよね"],
    "\\bremember\\b": ["Do you remember me?", "REMEMBER the festival?"],
    "\\brecall\\b": ["Can you recall the storm?"],
    "\\blast time\\b": ["Last time we met you were sad."],
    "\\bback then\\b": ["Back then the bakery was tiny."],
    "\\bthat time\\b": ["That time at the lake was fun."],
    "\\bthe other day\\b": ["I saw you the other day."],
    "\\bfirst (time|met)\\b": ["When we first met, it rained.", "The first time I saw the sea"],
    "\\blong ago\\b|\\bused to\\b": ["Long ago this was a farm.", "You used to sing here."],
    # recent
    "今日は?(何|なに)(を)?(し|や)": ["今日何した?", "今日はなにをしてたの?", "今日は何やってた?"],
    "最近は?(何|なに)(を)?(し|や)": ["最近何してた?", "最近はなにをやってるの"],
    "最近どう": ["最近どう?"],
    "(何|なに)(を)?して(た|る|い)": ["さっき何してたの?", "なにしているの?"],
    "昨日は?(何|なに)": ["昨日は何をしたの?"],
    "今日は?どうだった": ["今日はどうだった?"],
    "\\bwhat did you do\\b": ["What did you do today?"],
    "\\bwhat have you been (up to|doing)\\b": [
        "What have you been up to?",
        "what have you been doing lately",
    ],
    "\\bwhat were you doing\\b": ["What were you doing this morning?"],
    "\\bwhat are you (up to|doing)\\b": ["What are you up to?"],
    "\\bhow was your (day|morning|afternoon|evening)\\b": ["How was your day?", "how was your evening"],
    "\\bwhat'?s new\\b": ["What's new with you?", "whats new"],
    # knowledge
    "教えて": ["パンの焼き方を教えて"],
    "って(何|なに)|とは(何|なに)": ["マカロンって何?", "祭りとはなにか"],
    "どうやって|どうすれば|どうしたら": ["どうやって作るの?", "どうすれば上手になる?", "どうしたらいい?"],
    "知って(る|い|ま)": ["駅への道を知ってる?", "知っていますか"],
    "(やり|作り|使い)方|方法": ["ケーキの作り方", "釣りのやり方", "一番いい方法は"],
    "なぜ|なんで(?!も)|どうして": ["なぜ空は青いの?", "なんで雨が降るの", "どうして猫は丸くなるの"],
    "\\bhow (do|does|did|can|could|should|to)\\b": ["How do I bake bread?", "How to fish?"],
    "\\bwhat (is|are)\\b": ["What is a macaron?", "What are stars made of?"],
    "\\bwhat does .+ mean\\b": ["What does 'umami' mean?"],
    "\\bexplain\\b": ["Please explain the rules."],
    "\\btell me about\\b": ["Tell me about the mountains."],
    "\\bdo you know\\b": ["Do you know the baker?"],
    "\\bwhy (is|are|do|does|did)\\b": ["Why is the sky blue?"],
}

ENTRIES = [(kind, pattern) for kind in triggers.KINDS for pattern in DATA[kind]]


def test_every_pattern_in_the_file_has_examples_and_vice_versa() -> None:
    assert sorted(p for _, p in ENTRIES) == sorted(EXAMPLES)
    assert DATA["precedence"] == ["past", "recent", "knowledge"]


@pytest.mark.parametrize(("kind", "pattern"), ENTRIES)
def test_each_pattern_matches_its_examples_and_they_classify_as_its_kind(kind: str, pattern: str) -> None:
    for example in EXAMPLES[pattern]:
        assert re.search(pattern, normalise(example)), example
        assert triggers.classify(example) == kind, example


@pytest.mark.parametrize(
    "line",
    [
        "こんにちは!",
        "いい天気だね",
        "駅の前に集合ね",
        "なんでもないよ",
        "Nice weather today.",
        "See you at the bakery.",
        "",
    ],
)
def test_ordinary_lines_trigger_nothing(line: str) -> None:
    assert triggers.classify(line) is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("この前何してたの?", "past"),  # an explicit earlier time beats "what were you doing"
        ("覚えてる?作り方を教えてくれたよね", "past"),
        ("最近何してた?教えて", "recent"),
        ("ＲＥＭＥＭＢＥＲ　ＭＥ?", "past"),  # full-width letters are normalised
        ("ｷｮｳﾅﾆｼﾃﾀ?", None),  # half-width katakana is normalised to katakana, which no pattern uses
    ],
)
def test_precedence_and_normalisation(line: str, kind: str | None) -> None:
    assert triggers.classify(line) == kind


def test_a_bad_pattern_file_is_refused_with_its_name(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "t.json"
    path.write_text(
        json.dumps({"precedence": ["past", "recent", "knowledge"], "past": ["("]}), encoding="utf-8"
    )
    with pytest.raises(ValueError, match="bad past pattern"):
        triggers.load(path)


# --- retrieval per kind ---
@pytest.fixture
def town(client: TestClient) -> TestClient:
    return build_town(client)


def build_town(client: TestClient) -> TestClient:
    add_agent(client)
    add(client, "ヒカリとカフェで初めて会った", importance=6, day=1, time_of_day=10.0)
    add(client, "広場でソラと凧あげをした", importance=3, day=3, time_of_day=9.0)
    add(client, "図書館で星の本を読んだ", importance=4, day=3, time_of_day=11.0)
    add(client, "パン屋でクロワッサンを買った", importance=2, day=3, time_of_day=13.0)
    add(client, "明日はヒカリとカフェに行く", type="plan", importance=5, day=3, time_of_day=14.0)
    add(
        client, "ヒカリはカフェのケーキ作りが上手だ", type="reflection", importance=7, day=2, time_of_day=20.0
    )
    add(client, "星を眺めると心が落ち着く", type="reflection", importance=6, day=3, time_of_day=21.0)
    return client


def turn(client: TestClient, line: str | None, query: str, k: int = 3) -> list[ScoredMemory]:
    ask = triggers.TurnAsk(query, partner_line=line, day=3, time_of_day=18.0, k=k)
    found: list[ScoredMemory] = call(client, service(client).retrieve_for_turn, "default", "aoi", ask)
    return found


def test_recent_returns_the_latest_observations_in_time_order(town: TestClient) -> None:
    found = turn(town, "今日何した?", "ヒカリ 今日何した?")
    assert [f.memory.content for f in found] == [
        "広場でソラと凧あげをした",
        "図書館で星の本を読んだ",
        "パン屋でクロワッサンを買った",
    ]
    assert [f.recency for f in found] == sorted(f.recency for f in found) and found[-1].recency == 1.0
    assert all(f.relevance == 0.0 and f.score == f.recency for f in found)
    # Memories stamped after the turn's game time have not happened yet.
    ask = triggers.TurnAsk("x", partner_line="今日何した?", day=3, time_of_day=10.0, k=5)
    early = call(town, service(town).retrieve_for_turn, "default", "aoi", ask)
    assert [f.memory.content for f in early] == ["ヒカリとカフェで初めて会った", "広場でソラと凧あげをした"]


def test_past_searches_observations_and_reflections_by_relevance(town: TestClient) -> None:
    found = turn(town, "ヒカリと初めて会った時のこと覚えてる?", "ヒカリと初めて会った時のこと覚えてる?")
    assert found[0].memory.content == "ヒカリとカフェで初めて会った"
    assert {f.memory.type for f in found} <= {"observation", "reflection"}
    plain = call(
        town, service(town).retrieve, "default", "aoi", "ヒカリ カフェ", k=10, day=3, time_of_day=18.0
    )
    assert "plan" in {p.memory.type for p in plain}  # the normal retrieval would include the plan


def test_knowledge_puts_reflections_first(town: TestClient) -> None:
    found = turn(town, "星のことを教えて", "星のことを教えて", k=4)
    kinds = [f.memory.type for f in found]
    assert kinds[:2] == ["reflection", "reflection"] and len(found) == 4
    assert found[0].memory.content == "星を眺めると心が落ち着く"


def test_no_trigger_is_the_normal_retrieval(town: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = service(town)
    seen: list[tuple[str, Search]] = []
    original = memory.retriever.rank

    async def spy(key: tuple[str, str], query: str, search: Search) -> object:
        seen.append((query, search))
        return await original(key, query, search)

    monkeypatch.setattr(memory.retriever, "rank", spy)
    found = turn(town, "いい天気だね", "ヒカリ カフェ", k=2)
    assert seen == [("ヒカリ カフェ", Search(k=2, day=3, time_of_day=18.0))] and len(found) == 2
    turn(town, None, "ヒカリ カフェ", k=2)
    assert seen[-1] == ("ヒカリ カフェ", Search(k=2, day=3, time_of_day=18.0))


@pytest.mark.parametrize(
    "line", [None, "今日何した?", "ヒカリと初めて会った時のこと覚えてる?", "星のことを教えて", "いい天気だね"]
)
def test_recall_gives_the_texts_retrieve_would_give(
    town: TestClient, settings: Settings, scripted: ScriptedLLM, tmp_path: Path, line: str | None
) -> None:
    """A turn's prompt takes the texts from the index (`recall_for_turn`); they are what the row-fetching
    `retrieve_for_turn` returns for the same world, in the same order, and they count as accessed too."""
    query = f"ヒカリ {line or ''}"
    other = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'twin.db'}"})
    with make_client(other, scripted) as twin:
        build_town(twin)
        ask = triggers.TurnAsk(query, partner_line=line, day=3, time_of_day=18.0, k=3)
        recalled = call(twin, service(twin).recall_for_turn, "default", "aoi", ask)
        texts = [item.content for item in recalled]
        with Session(twin.app.state.engine) as session:  # type: ignore[attr-defined]
            stored = {row.content: row for row in session.exec(select(Memory))}
    rows = turn(town, line, query)
    assert texts == [found.memory.content for found in rows] and len(texts) == 3
    assert [item.id for item in recalled] == [stored[text].id for text in texts]
    for text in texts:  # accessed at the turn's time (a memory stamped later keeps its own time)
        row = stored[text]
        assert (row.last_accessed_day, row.last_accessed_time_of_day) >= (3, 18.0)
    assert any(stored[text].created_time_of_day < 18.0 for text in texts)
