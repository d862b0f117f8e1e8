"""Visitors on the dashboard, in a real browser: a visitor's conversation carries a 来場者 badge, a group lists
everyone (struck through once they left), the list filters to visitors, a held-back line is marked with
what held it back and never shows what was typed, and the town lists the visitors."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

CHROMIUM = shutil.which("chromium") or ""
try:
    from playwright.sync_api import Browser, Page, expect
except ImportError:  # pragma: no cover - depends on the machine
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)
if not CHROMIUM:  # pragma: no cover
    pytest.skip(
        "chromium is not on PATH (apt-get install chromium fonts-noto-cjk, or run .ci/webui.sh)",
        allow_module_level=True,
    )

from tests.webui.server import SESSION_ID, SHOTS, TIMEOUT_MS, running_server, simulate, wait_idle  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect.set_options(timeout=TIMEOUT_MS)

YUKI = "player:yuki"
PAIR, GROUP = "webui-visitor-1", "webui-group-1"
ROUGH = "うるさい、死ね"


def _visitor_says(
    http: httpx.Client, session: str, text: str, history: list[str], **extra: Any
) -> dict[str, Any]:
    body = {"session_id": session, "player_id": YUKI, "agent_id": "aoi", "text": text,
            "location_name": "中央カフェ", "history": history, "time_of_day": 15.0, "day": 1, **extra}  # fmt: skip
    reply = http.post("/v1/conversation/player-turn", json=body)
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = reply.json()
    return data


def _said(reply: dict[str, Any], names: dict[str, str]) -> list[str]:
    return [reply["player_line"], f"{names[reply['speaker_id']]}: {reply['dialogue']}"]


def _visit(http: httpx.Client, names: dict[str, str]) -> dict[str, Any]:
    """ユキ talks with 葵 (her second line held back), then joins 葵 and ひかり and says goodbye to them."""
    assert http.put("/v1/players/yuki", json={"display_name": "ユキ", "language": "ja"}).status_code == 201
    first = _visitor_says(http, PAIR, "こんにちは！", [])
    rough = _visitor_says(http, PAIR, ROUGH, _said(first, names))
    assert rough["player_blocked"] and rough["deflected"]
    members = [YUKI, "aoi", "hikari"]
    hello = _visitor_says(http, GROUP, "みんな、こんにちは！", [], participants=members)
    history = _said(hello, names)
    turn = {"agent_id": "hikari", "target_id": "aoi", "session_id": GROUP, "location_name": "中央カフェ",
            "history": history, "time_of_day": 15.1, "day": 1, "participants": members}  # fmt: skip
    hikari = http.post("/v1/conversation/turn", json=turn)
    assert hikari.status_code == 200, hikari.text
    history.append(f"{names['hikari']}: {hikari.json()['dialogue']}")
    bye = _visitor_says(http, GROUP, "またね！", history, participants=members)
    assert YUKI not in bye["participants"]
    wait_idle(http)
    return {"rough_index": rough["player_turn_index"]}


@pytest.fixture(scope="module")
def booth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The running server after a conversation of two agents and two with the visitor ユキ."""
    with (
        running_server(tmp_path_factory.mktemp("visitors")) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        world = simulate(http)
        yield {"base": base, "http": http, **world, **_visit(http, world["names"])}


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page that fails the test on any uncaught exception or console error."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="ja-JP")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    yield page
    context.close()
    assert not errors, "\n".join(errors)


def test_conversation_list_badges_visitors_and_filters_to_them(page: Page, booth: dict[str, Any]) -> None:
    stored = booth["http"].get(f"/v1/conversations/{GROUP}").json()
    assert [p["left"] for p in stored["participants"] if p["id"] == YUKI] == [True]
    page.goto(booth["base"] + "/conversations")
    pair = page.locator(f'#conv-rows tr[data-session="{PAIR}"]')
    visitor = pair.locator(f'.participant[data-kind="player"][data-participant="{YUKI}"]')
    expect(visitor).to_contain_text("ユキ")
    expect(visitor.locator(".visitor-chip")).to_have_text("来場者")
    expect(visitor.locator(".visitor")).to_have_attribute("title", f"visitor · {YUKI}")
    expect(visitor.locator("a")).to_have_count(0)  # a visitor has no agent page to link to
    group = page.locator(f'#conv-rows tr[data-session="{GROUP}"]')
    expect(group.locator(".participant")).to_have_count(3)
    expect(group.locator(".chip.group")).to_have_text("group of 3")
    expect(group.locator(f'.participant.left[data-participant="{YUKI}"]')).to_have_attribute(
        "title", "left the conversation"
    )
    expect(group.locator(".participant.left")).to_have_count(1)  # 葵 and ひかり are still talking
    struck = group.locator(".participant.left .visitor-name").evaluate(
        "(n) => getComputedStyle(n).textDecorationLine"
    )
    assert struck == "line-through"
    expect(page.locator(f'#conv-rows tr[data-session="{SESSION_ID}"]')).to_have_count(1)
    shoot(page, "conversations-visitors")
    page.check("#conv-visitors")
    expect(page.locator(f'#conv-rows tr[data-session="{SESSION_ID}"]')).to_have_count(0)
    expect(page.locator("#conv-rows tr[data-session]")).to_have_count(2)
    expect(page).to_have_url(re.compile(r"[?&]visitors=1"))
    page.reload()
    expect(page.locator("#conv-visitors")).to_be_checked()
    expect(page.locator("#conv-rows tr[data-session]")).to_have_count(2)


def test_a_held_back_line_is_marked_and_its_text_never_shown(page: Page, booth: dict[str, Any]) -> None:
    turns = booth["http"].get(f"/v1/conversations/{PAIR}").json()["turns"]
    held = next(t for t in turns if t["moderation"])
    assert held["turn_index"] == booth["rough_index"]
    page.goto(f"{booth['base']}/conversations/{PAIR}")
    bubble = page.locator(f'#transcript .turn[data-turn="{held["turn_index"]}"]')
    marker = bubble.locator(".held-back")
    expect(marker).to_have_attribute("data-moderation", "line")
    moderation = held["moderation"]
    expect(marker).to_have_text(f"held back · line · {moderation['source']} · {moderation['category']}")
    expect(marker).to_have_attribute("title", re.compile("visitor's line"))
    expect(bubble.locator(".visitor-chip")).to_have_text("来場者")
    expect(page.locator("#transcript .held-back")).to_have_count(1)
    expect(page.locator("#conv-meta")).to_contain_text("held back")
    expect(page.locator(".participant[data-kind='player']")).to_contain_text("ユキ")
    assert "死ね" not in page.content()
    shoot(page, "conversation-held-back")


def test_town_lists_the_visitors(page: Page, booth: dict[str, Any]) -> None:
    yuki = booth["http"].get("/v1/players/yuki").json()
    page.goto(booth["base"] + "/")
    row = page.locator(f'#visitors .visitor-row[data-player="{YUKI}"]')
    expect(row).to_contain_text("ユキ")
    expect(row.locator(".visitor-chip")).to_have_text("来場者")
    expect(row.locator(".visitor-lines")).to_have_text(f"{yuki['lines']} lines · ")
    expect(row.locator("time")).to_be_visible()
    # ユキ's lines in the live feed carry her badge, not a link to an agent page that does not exist.
    expect(page.locator(f'#feed .feed-who .visitor[data-player="{YUKI}"]').first).to_be_visible()
    shoot(page, "town-visitors")
    page.locator("#visitors-card a", has_text="their conversations").click()
    expect(page.locator("#conv-visitors")).to_be_checked()


def shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
