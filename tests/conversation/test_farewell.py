"""Farewells only where a line ends a talk: not inside an invitation, a question or the middle of more talk."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.config import DEFAULT_FAREWELLS
from backend.conversation import group, rules
from backend.conversation.farewell import ends_with_farewell, has_farewell
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import EMMA, LIAM, add_agents, turn

GOODBYES = [
    # Japanese
    "あ、もう行くの？うん、またね。",  # a question before the goodbye is still a goodbye
    "そろそろ帰るね、おやすみなさい。",
    "ごめん、もう行かなきゃ。バイバイ！",
    "じゃあ、明日17時にカフェでね。またね！",
    "またね！楽しかったよ。",  # a short close after it
    "今日はありがとう。また明日ね〜",
    "うん、わかった。じゃあね、ひかり！",
    # English
    "See you at the party tomorrow!",  # later in a talk, an appointment said in parting
    "Well, I should get going. See you later!",
    "It was great talking to you, see you around!",
    "I'll see you tomorrow then!",
    "Hope to see you soon!",
    "Take care, Ben.",
    "Bye! Thanks for the chat.",
    "Oh, you're off already? Alright, bye for now!",
    "It's time to say goodbye.",
    "Have a good night!",
]
NOT_GOODBYES = [
    # Invitations with a farewell inside
    "明日の17時にカフェでパーティーするから、来てね！またね…じゃなくて、待ってるね",
    "明日パーティーあるんだけど、来ない？またね！",
    "一緒にカフェ行かない？じゃあね",
    "明日みんなで花火しようよ、またね！",
    "土曜の夜、うちでパーティーするからおいでよ。じゃあね！",
    "Come to my party tomorrow at 7, see you there?",
    "Join us at the cafe tomorrow, see you there!",
    "Would you like to come to the party? See you!",
    "You're invited to my party on Saturday, see you!",
    # Questions after the farewell, and farewells followed by more talk
    "またね？",
    "See you soon! Anyway, what about the cake?",
    "Bye? Are you leaving already?",
    "またね！ところで、明日のパーティーのことなんだけど、ケーキは誰が持ってくるの",
    "See you soon, by the way I heard Mia opened a new shop near the station.",
    "See you soon. I'll bring the cake and the drinks and the chairs and we can set up the tables together.",
    "また明日ね。それより、駅前に新しいパン屋さんができたって聞いた？すごく混んでるらしいよ。",
    # A phrase that is part of another sentence, or quoted
    "I'm really excited to see you soon.",
    "Good to see you!",
    "I see you're busy today.",
    "I'll take care of it.",
    "We had a good night at the festival.",
    "She said goodbye and left.",
    "彼女が「またね」って言ってた。",
]


def test_lines_that_end_a_talk_count_as_goodbyes() -> None:
    for text in GOODBYES:
        assert has_farewell(text, DEFAULT_FAREWELLS), text


def test_invitations_questions_and_more_talk_are_no_goodbyes() -> None:
    for text in NOT_GOODBYES:
        assert not has_farewell(text, DEFAULT_FAREWELLS), text


def test_an_opening_line_ends_a_talk_only_when_it_is_nothing_but_a_goodbye() -> None:
    for text in ["またね", "あ、ひかり！またね！", "バイバイ", "Bye!", "See you, Liam!"]:
        assert has_farewell(text, DEFAULT_FAREWELLS, opening=True), text
    for text in [
        "Hi Liam! Mia's party is tomorrow at 7, see you there!",
        "See you at the party tomorrow at the Corner Cafe!",
        "こんにちは、ひかりさん！明日のパーティー楽しみだね、またね！",
        "あ、葵ちゃん！元気？またね！",
    ]:
        assert has_farewell(text, DEFAULT_FAREWELLS) != has_farewell(text, DEFAULT_FAREWELLS, opening=True)
        assert not has_farewell(text, DEFAULT_FAREWELLS, opening=True), text


def test_end_rules_weigh_each_line_as_the_line_it_was() -> None:
    common = {"max_turns": 8, "phrases": DEFAULT_FAREWELLS, "model_flag": False}
    opener = "See you at the party tomorrow at the Corner Cafe!"
    # Said first, it opens the talk; its answer does not end it on its account either.
    assert rules.decide_end(new_line=opener, partner_last=None, turn_count=1, **common) is None
    assert rules.decide_end(new_line="Sure!", partner_last=opener, turn_count=2, **common) is None
    # Said later, it is a goodbye: in the new line and as the partner's last line.
    assert rules.decide_end(new_line=opener, partner_last="Great.", turn_count=5, **common) == "farewell"
    assert rules.decide_end(new_line="Sure!", partner_last=opener, turn_count=6, **common) == "farewell"
    # A group member's opening invitation is no leaving.
    members = ["emma", "liam", "noah"]
    args = {"speaker": "emma", "target": "liam", "members": members, "left": [], "line": opener}
    kept = group.leaving(**args, model_flag=False, turn_count=1, limit=16, phrases=DEFAULT_FAREWELLS)
    gone = group.leaving(**args, model_flag=False, turn_count=4, limit=16, phrases=DEFAULT_FAREWELLS)
    assert kept.left == [] and gone.left == ["emma"]


def test_a_goodbye_after_an_invitation_is_not_said_twice() -> None:
    # The partner said goodbye: a reply that closes with one keeps its invitation and gets no second goodbye.
    line = "明日のパーティー、来てね！またね！"
    assert not has_farewell(line, DEFAULT_FAREWELLS) and ends_with_farewell(line, DEFAULT_FAREWELLS)
    assert rules.ensure_farewell(line, "aoi", "ja", DEFAULT_FAREWELLS) == line
    asked = rules.ensure_farewell("See you! Are you coming tomorrow?", "emma", "en", DEFAULT_FAREWELLS)
    assert asked.startswith("See you! Are you coming tomorrow? ") and ends_with_farewell(
        asked, DEFAULT_FAREWELLS
    )


def test_an_opening_invitation_with_see_you_soon_does_not_end_the_talk(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client, EMMA, LIAM)
    opener = (
        "Liam! I'm throwing a party at the Corner Cafe tomorrow at 7. I'm really excited to see you soon!"
    )
    answer = "Oh, a party? What should I bring?"
    for line in (opener, answer):
        scripted.enqueue(
            {"dialogue": line, "emotion": "happy", "is_conversation_end": False}, purpose="dialogue"
        )
    first = client.post("/v1/conversation/turn", json=turn("emma", "liam", "s-party", [])).json()
    assert first["dialogue"] == opener and first["end_reason"] is None and not first["is_conversation_end"]
    second = client.post(
        "/v1/conversation/turn", json=turn("liam", "emma", "s-party", [f"Emma: {opener}"])
    ).json()
    # Liam is not told Emma said goodbye, no goodbye is appended to his answer, and the talk goes on.
    prompt = "\n".join(str(m["content"]) for m in scripted.calls("dialogue")[-1].messages)
    assert "just said goodbye" not in prompt
    assert second["dialogue"] == answer and second["end_reason"] is None and not second["is_conversation_end"]
    detail = client.get("/v1/conversations/s-party").json()
    assert not detail["ended"] and detail["turn_count"] == 2


def test_a_japanese_opening_invitation_with_mata_ne_inside_does_not_end_the_talk(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    opener = "明日の17時にカフェでパーティーするから、来てね！またね…じゃなくて、待ってるね"
    scripted.enqueue(
        {"dialogue": opener, "emotion": "happy", "is_conversation_end": False}, purpose="dialogue"
    )
    first = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-ja-party", [])).json()
    assert first["dialogue"] == opener and not first["is_conversation_end"]
    scripted.enqueue(
        {"dialogue": "えっ、行きたい！", "emotion": "happy", "is_conversation_end": False}, purpose="dialogue"
    )
    second = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "s-ja-party", [f"ひかり: {opener}"])
    ).json()
    assert second["dialogue"] == "えっ、行きたい！" and not second["is_conversation_end"]
