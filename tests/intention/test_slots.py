"""News as facts: the slots of invitations and appointments in Japanese and English, None for small talk,
and the third-person fact line. Day 1 is a Monday (RETRIEVAL_DAY_ONE_WEEKDAY's default); said at 08:00."""

from __future__ import annotations

from typing import Any

import pytest

from backend.intention.appointment import Place
from backend.intention.slots import Slots, extract

PLACES_JA = [Place("cafe", "中央カフェ"), Place("park", "公園"), Place("library", "図書館")]
PLACES_EN = [
    Place("corner_cafe", "Corner Café"),
    Place("town_square", "Town Square"),
    Place("bakery", "Sunny Bakery", ("the bakery",)),
    Place("park", "Park"),
    Place("library", "Library"),
]
PEOPLE_JA = {"aoi": "葵", "ren": "蓮", "hikari": "ひかり", "mia": "ミア"}
PEOPLE_EN = {"mia": "Mia", "ben": "Ben", "sam": "Sam", "grace": "Grace", "oliver": "Oliver"}

# (text, what, day, hour, where, expected others: host, invited, part)
JA = [
    ("明日の17時に公園で誕生日会をするよ。みんな来てね", "birthday", 2, 17.0, "park", {"invited": ("everyone",)}),
    ("今夜7時に中央カフェでパーティーを開くんだけど、来ない？", "party", 1, 19.0, "cafe", {"invited": ("you",)}),
    ("夜7時から公園で花火大会があるよ", "fireworks", 1, 19.0, "park", {}),
    ("明日の19時に図書館で読書会を開きます", "book_club", 2, 19.0, "library", {"host": None}),
    ("土曜日に公園でピクニックしない？", "picnic", 6, None, "park", {"invited": ("you",)}),
    ("3日目の10時に中央カフェで打ち合わせ", "meeting", 3, 10.0, "cafe", {}),
    ("明後日の午後3時に中央カフェでお茶会をします", "tea", 3, 15.0, "cafe", {}),
    ("明日の夕方、公園でバーベキューをやるから来てね", "barbecue", 2, 18.0, "park",
     {"part": "evening", "invited": ("you",)}),
    ("来週の土曜日に蓮の家で誕生日パーティーをするんだ", "birthday", 13, None, None, {"host": "ren"}),
    ("蓮が明日の夜7時に図書館で読書会を開くって", "book_club", 2, 19.0, "library", {"host": "ren"}),
    ("葵さんが金曜日の18時半に中央カフェで送別会を開くそうです", "farewell", 5, 18.5, "cafe", {"host": "aoi"}),
    ("明日のお昼12時に公園でランチしよう", "lunch", 2, 12.0, "park", {"invited": ("you",)}),
    ("19:00に中央カフェで飲み会、みんなおいで！", "drinks", 1, 19.0, "cafe", {"invited": ("everyone",)}),
    ("今日の午後7時、公園で夏祭りがあります", "festival", 1, 19.0, "park", {}),
    ("明日の朝9時に公園で散歩しませんか", "walk", 2, 9.0, "park", {"invited": ("you",)}),
    ("今晩8時にうちで上映会をするんだけど、ひかりも来ない？", "movie", 1, 20.0, None,
     {"invited": ("you", "hikari")}),
    ("十九時に公園に集まろう", "party", 1, 19.0, "park", {"invited": ("you",)}),
    ("明日18時から中央カフェで歓迎会を開催します。ぜひ参加してください", "welcome", 2, 18.0, "cafe",
     {"invited": ("you",)}),
    ("2日目の夜に公園で盆踊り大会", "dance", 2, 20.0, "park", {"part": "night"}),
    ("日曜日の朝、公園で朝市がある", "market", 7, 9.0, "park", {"part": "morning"}),
    ("明日の正午に図書館前で待ち合わせね", "meetup", 2, 12.0, "library", {}),
    ("水曜日の19時半に中央カフェでミーティングを開きます", "meeting", 3, 19.5, "cafe", {}),
    ("明日の晩、中央カフェでディナーをご一緒しませんか", "dinner", 2, 18.0, "cafe", {"invited": ("you",)}),
    ("今日の15時に公園でサッカーの試合があるよ", "game", 1, 15.0, "park", {}),
    ("ミアが明日の19時に中央カフェでパーティーを開くんだって。みんな招待されてるよ", "party", 2, 19.0, "cafe",
     {"host": "mia", "invited": ("everyone",)}),
    ("明日の夜8時に公園でコンサートがあるから一緒に行こう", "concert", 2, 20.0, "park", {"invited": ("you",)}),
    ("4日目の朝10時に図書館で勉強会をします", "study", 4, 10.0, "library", {}),
    ("週末に公園でバザーを開くので、よかったら来てください", "market", 6, None, "park", {"invited": ("you",)}),
    ("蓮くんの誕生日会、明日の18時から中央カフェだよ！", "birthday", 2, 18.0, "cafe", {"host": "ren"}),
    ("明日の19時、公園で会おう", "meetup", 2, 19.0, "park", {}),
    ("夜の7時に中央カフェでカラオケ大会！みんな来てね", "karaoke", 1, 19.0, "cafe", {"invited": ("everyone",)}),
    ("１９時に中央カフェでパーティー。葵が「みんなに来てほしい」って", "party", 1, 19.0, "cafe",
     {"host": "aoi", "invited": ("everyone",)}),
    ("葵ちゃんの誕生日パーティー、明日7時から公園でやるって！", "birthday", 2, 19.0, "park", {"host": "aoi"}),
    ("あさっての18時、中央カフェ集合ね", "meetup", 3, 18.0, "cafe", {}),
    ("明日パーティーあるんだけど来る？", "party", 2, None, None, {"invited": ("you",)}),
]  # fmt: skip
EN = [
    ("Tomorrow at 7pm I am throwing a party at the Corner Cafe. Everyone is welcome!", "party", 2, 19.0,
     "corner_cafe", {"host": None, "invited": ("everyone",)}),
    ("Mia is hosting a party at Corner Cafe tomorrow at seven in the evening.", "party", 2, 19.0, "corner_cafe",
     {"host": "mia"}),
    ("Want to come to my birthday party on Saturday at 7 p.m. at the park?", "birthday", 6, 19.0, "park",
     {"invited": ("you",)}),
    ("Let's meet at the library tomorrow evening", "meetup", 2, 18.0, "library", {"part": "evening"}),
    ("There's a fireworks show at the park tonight at 9.", "fireworks", 1, 21.0, "park", {}),
    ("Ben's having a barbecue in the Town Square on Sunday at noon, you should come!", "barbecue", 7, 12.0,
     "town_square", {"host": "ben", "invited": ("you",)}),
    ("Would you like to join us for dinner at the Corner Café at 19:00 tomorrow?", "dinner", 2, 19.0,
     "corner_cafe", {"invited": ("you",)}),
    ("The book club meets at the library on day 3 at 6 pm.", "book_club", 3, 18.0, "library", {}),
    ("I'm organizing a picnic in the park tomorrow morning, want to come?", "picnic", 2, 9.0, "park",
     {"part": "morning", "host": None, "invited": ("you",)}),
    ("Grace is throwing a surprise party for Oliver at Sunny Bakery tonight at 8 o'clock.", "party", 1, 20.0,
     "bakery", {"host": "grace"}),
    ("Come to the festival at Town Square the day after tomorrow at 5pm!", "festival", 3, 17.0,
     "town_square", {}),
    ("We're having a get-together at the Corner Cafe at half past six this evening.", "party", 1, 18.5,
     "corner_cafe", {}),
    ("Meeting at the library tomorrow at 10 a.m., everybody please come.", "meeting", 2, 10.0, "library",
     {"invited": ("everyone",)}),
    ("Sam is holding a concert at the park on Friday at 8 in the evening", "concert", 5, 20.0, "park",
     {"host": "sam"}),
    ("How about lunch at Sunny Bakery at 12:30 tomorrow?", "lunch", 2, 12.5, "bakery", {}),
    ("Tea party at the Corner Cafe at 3pm today - you're invited!", "tea", 1, 15.0, "corner_cafe",
     {"invited": ("you",)}),
    ("Tonight at 7 we're watching a movie at the town square, join us!", "movie", 1, 19.0, "town_square",
     {"invited": ("you",)}),
    ("I invited Ben and Sam to my birthday party tomorrow at 6pm at the park.", "birthday", 2, 18.0, "park",
     {"invited": ("ben", "sam")}),
    ("Mia's birthday party is on day 4 at 19:00 at the Corner Cafe.", "birthday", 4, 19.0, "corner_cafe",
     {"host": "mia"}),
    ("Don't forget the town meeting at the library at seven tonight.", "meeting", 1, 19.0, "library", {}),
    ("There's a karaoke night at the Corner Cafe next Friday at 9 pm, everyone's welcome.", "karaoke", 5, 21.0,
     "corner_cafe", {"invited": ("everyone",)}),
    ("Join me for a walk in the park tomorrow at 6 in the morning?", "walk", 2, 6.0, "park",
     {"invited": ("you",)}),
    ("The dance starts at 8 p.m. tomorrow in the Town Square.", "dance", 2, 20.0, "town_square", {}),
    ("We should have a potluck dinner at the park this Saturday evening.", "dinner", 6, 18.0, "park",
     {"part": "evening", "invited": ("you",)}),
    ("Oliver is planning a study group at the library on Wednesday at 4pm.", "study", 3, 16.0, "library",
     {"host": "oliver"}),
    ("Practice is at the park tomorrow at 7:30 am.", "practice", 2, 7.5, "park", {}),
    ("Ben says there's a wedding at Town Square on Sunday at 11 a.m.", "wedding", 7, 11.0, "town_square",
     {"host": "ben"}),
    ("Would you come to my housewarming at 7pm on Thursday?", "party", 4, 19.0, None, {"invited": ("you",)}),
    ("Let's get lunch tomorrow at noon at Sunny Bakery.", "lunch", 2, 12.0, "bakery", {"invited": ("you",)}),
    ("Breakfast at the bakery tomorrow at 8am, hope you can come!", "breakfast", 2, 8.0, "bakery",
     {"invited": ("you",)}),
    ("The farmers' market opens at 9 in the morning on day 2 in the Town Square.", "market", 2, 9.0,
     "town_square", {}),
    ("Hey Ben, would you like to come to our fireworks party at the park at 9 tonight?", "fireworks", 1, 21.0,
     "park", {"invited": ("you", "ben")}),
    ("Can you come to the party at 7?", "party", 1, 19.0, None, {"invited": ("you",)}),  # a party's 7 is 19:00
    ("Party's at seven, Corner Cafe, don't be late.", "party", 1, 19.0, "corner_cafe", {}),
    ("I'll be at the Corner Cafe around 7 tonight if you want to hang out.", "meetup", 1, 19.0, "corner_cafe", {}),
]  # fmt: skip
SMALL_TALK = [
    "Good morning, Oliver.",
    "おはよう、葵。",
    "いい天気だね。",
    "How are you today?",
    "See you tomorrow!",
    "また明日ね！",
    "I love this town.",
    "昨日のパーティー楽しかったね",
    "The party yesterday was great.",
    "ありがとう、助かったよ。",
    "Nice to meet you, Ben.",
    "今日はちょっと疲れたな。",
    "What a lovely morning!",
    "このパン、おいしいね。",
    "I read a good book last night.",
    "最近どう？",
    "Did you enjoy the festival last week?",
    "今日のご飯おいしかった",
    "I had lunch at the Corner Cafe.",
    "I went to the park at 7.",
    "2時間も待ったよ。",
    "Thanks, see you around.",
    "The café opens at 8am.",
    "明日の朝7時に起きなきゃ",
    "I'll see you at the party!",
    "パーティーは好き？",
    "明日は雨らしいよ",
    "Ben, would you pass me the salt?",
]


def _check(found: Slots | None, what: str, day: int | None, hour: float | None, where: str | None,
           others: dict[str, Any]) -> None:  # fmt: skip
    assert found is not None
    assert (found.what, found.day, found.hour, found.where) == (what, day, hour, where), found
    for name, value in others.items():
        assert getattr(found, name) == value, (name, found)


@pytest.mark.parametrize(("text", "what", "day", "hour", "where", "others"), JA)
def test_japanese_invitations_and_appointments(
    text: str, what: str, day: int, hour: float | None, where: str | None, others: dict[str, Any]
) -> None:
    found = extract(text, language="ja", today=1, places=PLACES_JA, people=PEOPLE_JA, now=8.0)
    _check(found, what, day, hour, where, others)


@pytest.mark.parametrize(("text", "what", "day", "hour", "where", "others"), EN)
def test_english_invitations_and_appointments(
    text: str, what: str, day: int, hour: float | None, where: str | None, others: dict[str, Any]
) -> None:
    found = extract(text, language="en", today=1, places=PLACES_EN, people=PEOPLE_EN, now=8.0)
    _check(found, what, day, hour, where, others)


@pytest.mark.parametrize("text", SMALL_TALK)
def test_small_talk_and_the_past_are_no_news(text: str) -> None:
    people = {**PEOPLE_JA, **PEOPLE_EN}
    assert extract(text, language="en", today=1, places=PLACES_JA + PLACES_EN, people=people, now=8.0) is None


def test_days_are_read_from_the_day_said_and_the_weekday_of_day_one() -> None:
    said = {"places": PLACES_JA, "people": PEOPLE_JA, "language": "ja"}
    # Day 1 a Saturday: 土曜日 is today; 日曜日 tomorrow; day 3 said as 明日 on day 2.
    saturday = extract("土曜日の19時に公園で花火大会", today=1, day_one_weekday=5, **said)
    assert saturday is not None and (saturday.day, saturday.weekday) == (1, 5)
    assert extract("日曜日の19時に公園で花火大会", today=1, day_one_weekday=5, **said).day == 2  # type: ignore[union-attr]
    assert extract("明日の19時に公園で花火大会", today=2, **said).day == 3  # type: ignore[union-attr]
    # No day word: the next such hour (heard in the morning: tonight; heard at night: tomorrow).
    assert extract("19時に公園で花火大会", today=1, now=9.0, **said).day == 1  # type: ignore[union-attr]
    assert extract("19時に公園で花火大会", today=1, now=21.0, **said).day == 2  # type: ignore[union-attr]
    # A bare hour is after noon only where the text says so.
    assert extract("7時に公園で花見をしよう", today=1, **said).hour == 7.0  # type: ignore[union-attr]


def test_the_fact_line_is_third_person_in_either_language() -> None:
    found = extract("明日の19時に中央カフェでパーティーを開くから、みんな来てね", language="ja", today=1,
                    places=PLACES_JA, people=PEOPLE_JA)  # fmt: skip
    assert found is not None
    ja = found.describe("ja", host_name="ミア")
    assert ja == "ミアが中央カフェでパーティーを開く。明日（2日目）の19時。みんな招待されている。"
    en = found.describe("en", host_name="Mia", stance="heard", heard_from="Ben")
    assert (
        en
        == "Mia is hosting a party at 中央カフェ, tomorrow (day 2) at 7pm; everyone is invited. You heard it from Ben."
    )
    # Said from a later day: 明日 becomes 今日.
    assert found.describe("ja", host_name="ミア", today=2).startswith(
        "ミアが中央カフェでパーティーを開く。今日（2日目）"
    )
    # The host's own words ("来ない？") invite whoever it tells; heard, they invited the reader.
    own = extract("Tomorrow at 7pm I'm throwing a party at Corner Cafe, want to come?", language="en", today=1,
                  places=PLACES_EN, people=PEOPLE_EN)  # fmt: skip
    assert own is not None
    host = own.describe("en", host_name="Mia", stance="host")
    assert host == ("Mia is hosting a party at Corner Café, tomorrow (day 2) at 7pm; whoever Mia tells is "
                    "invited. You are the host.")  # fmt: skip
    assert "you are invited" in own.describe("en", host_name="Mia", stance="heard", heard_from="Ben")
    for line in (ja, en, host):
        assert not any(word in f" {line.lower()} " for word in (" i ", " i'm ", " my ", "私", "僕"))
    # The listener's own memory of hearing it is in its own voice, never "you" (a small model copies it).
    kept = own.describe("en", host_name="Mia", stance="remembered", heard_from="Ben")
    assert kept.endswith("; I am invited. I heard it from Ben.") and "you" not in kept.lower()
    assert found.describe("ja", host_name="ミア", stance="remembered", heard_from="ベン").endswith(
        "みんな招待されている。ベンから聞いた。"
    )


def test_slots_round_trip_through_json() -> None:
    found = extract("Mia is hosting a party at the park at 7pm on day 3, Ben is invited", language="en", today=1,
                    places=PLACES_EN, people=PEOPLE_EN)  # fmt: skip
    assert found is not None and found.invited == ("ben",) and found.host == "mia"
    assert Slots.from_dict(found.to_dict()) == found


@pytest.mark.parametrize(
    ("text", "people", "host"),
    [
        (
            'Tom told me: "Mia says "Tomorrow at 7pm I am throwing a party at the Corner Cafe."',
            PEOPLE_EN,
            "mia",
        ),
        ("Ben said Sam told us about a party at the park tomorrow", PEOPLE_EN, "sam"),
        ("蓮が「葵が「明日の19時に公園でパーティーを開く」って」と言った", PEOPLE_JA, "aoi"),
        # A memory of a passed-on line: the one who said it is not the host the line names.
        ("蓮が「葵さんが明日の19時に公園でパーティーを開くって」と言った", PEOPLE_JA, "aoi"),
        ("蓮が「明日の19時に公園でパーティーを開くよ」と言った", PEOPLE_JA, "ren"),
        # A named host still wins over any source: "Mia is hosting" is surer than who told it.
        ('Tom told me: "Mia is hosting a party tomorrow at 7pm."', {**PEOPLE_EN, "tom": "Tom"}, "mia"),
    ],
)
def test_the_innermost_source_is_whose_news_it_is(text: str, people: dict[str, str], host: str) -> None:
    from backend.intention.who import host as host_of

    assert host_of(text, {**people, "tom": "Tom"}) == host
