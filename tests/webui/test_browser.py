"""The dashboard in a real browser: Debian's chromium driven by Playwright against the real server (uvicorn,
demo world, scripted model) after a short conversation. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import math
import re
import shutil
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

#: Debian's chromium, found on PATH like any tool (a machine without it skips these tests).
CHROMIUM = shutil.which("chromium") or ""
try:
    from playwright.sync_api import Browser, ConsoleMessage, Page, expect
except ImportError:  # pragma: no cover - depends on the machine
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)
if not CHROMIUM:  # pragma: no cover
    pytest.skip(
        "chromium is not on PATH (apt-get install chromium fonts-noto-cjk, or run .ci/webui.sh)",
        allow_module_level=True,
    )

from backend.transfer.demo import bundled_world  # noqa: E402
from tests.webui.server import SESSION_ID, SHOTS, TIMEOUT_MS, running_server, simulate, wait_idle  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Live views refresh at once on an event, and at the latest on their safety-net poll (about 10 s).
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def town(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The running server after a simulated afternoon: states, a plan, a conversation, a council."""
    with (
        running_server(tmp_path_factory.mktemp("webui")) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        world = simulate(http)
        council = http.post(
            "/v1/council",
            json={"title": "公園に図書コーナーを作る", "background": "子どもが本に触れる場所を増やしたい"},
        )
        assert council.status_code == 202, council.text
        council_id = council.json()["id"]
        deadline = time.monotonic() + 60
        while http.get(f"/v1/council/{council_id}").json()["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, "the council did not finish"
            time.sleep(0.2)
        wait_idle(http)
        yield {"base": base, "http": http, "council_id": council_id, **world}


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page that fails the test on any console error or uncaught exception."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="ja-JP")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    yield page
    context.close()
    assert not errors, "\n".join(errors)


def shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header stays on top of a full-page shot
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_town_shows_map_agents_feed_and_model_status(page: Page, town: dict[str, Any]) -> None:
    page.goto(town["base"] + "/")
    expect(page.locator("#roster .roster-item")).to_have_count(6)
    expect(page.locator("#town-map .poi")).to_have_count(9)
    expect(page.locator("#town-map .poi-label", has_text="中央カフェ")).to_be_visible()
    aoi_pin = page.locator('#town-map .agent-pin[data-agent="aoi"]')
    expect(aoi_pin).to_contain_text("葵")
    # States read as words; the raw id stays in the title.
    expect(aoi_pin.locator(".pin-state")).to_have_text("会話中")
    expect(aoi_pin.locator("text", has_text="talking")).to_have_count(0)
    expect(aoi_pin.locator("title")).to_contain_text("(talking)")
    aoi_row = page.locator('#roster .roster-item[data-agent="aoi"] .roster-state')
    expect(aoi_row).to_have_text("会話中 · 中央カフェ")
    expect(aoi_row).to_have_attribute("title", "talking")
    first = town["replies"][0]
    line = page.locator(".feed-line", has_text=first["dialogue"])
    expect(line).to_be_visible()
    expect(line.locator(".emo")).to_have_text(first["emotion"])
    expect(page.locator("#llm-status")).to_contain_text("scripted")
    expect(page.locator("#llm-status")).to_contain_text("ms")
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "socket")
    shoot(page, "town")


def _boxes(page: Page, selector: str) -> list[dict[str, Any]]:
    """Client rectangles of every element matching `selector`, with the agent or place they belong to."""
    return page.evaluate(
        """(sel) => Array.from(document.querySelectorAll(sel)).flatMap((n) => {
            const r = n.getBoundingClientRect();
            if (!r.width || !r.height) return [];  // an empty state line takes no room
            const owner = n.closest("[data-agent], [data-poi]");
            return [{x0: r.left, y0: r.top, x1: r.right, y1: r.bottom,
                     who: owner ? (owner.dataset.agent || owner.dataset.poi) : ""}];
        })""",
        selector,
    )


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


def test_map_pins_never_cover_place_labels_or_each_other(page: Page, town: dict[str, Any]) -> None:
    # Crowd the café: 葵 and ひかり talk there already; 蓮 and 春花 report it too (no position: they stand
    # on its mark). The three sisters share one home, so three more pins start on one spot.
    http: httpx.Client = town["http"]
    for agent_id in ("ren", "haruka"):
        report = {"state": "wandering_in_poi", "location_name": "中央カフェ", "day": 1, "time_of_day": 14.6}
        assert http.post(f"/v1/agents/{agent_id}/state", json=report).is_success
    page.goto(town["base"] + "/")
    page.add_style_tag(content=".agent-pin { transition: none !important; }")
    expect(page.locator('#town-map .agent-pin[data-agent="ren"] .pin-state')).to_have_text("散策中")
    page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    pins = _boxes(
        page, "#town-map .agent-pin .pin, #town-map .agent-pin .pin-label, #town-map .agent-pin .pin-state"
    )
    places = _boxes(page, "#town-map .poi-label, #town-map .poi-mark")
    assert len(places) == 18 and len(pins) >= 12  # 9 marks and labels; 6 pins, names and 4 states
    covered = [(p["who"], q["who"]) for p in pins for q in places if _overlap(p, q)]
    assert covered == [], f"agent pins cover place labels: {covered}"
    crossed = [(p["who"], q["who"]) for p in pins for q in pins if p["who"] < q["who"] and _overlap(p, q)]
    assert crossed == [], f"agent pins overlap: {crossed}"
    shoot(page, "town-crowded")


def test_agent_page_shows_persona_memories_emotion_and_plan(page: Page, town: dict[str, Any]) -> None:
    http: httpx.Client = town["http"]
    memories = http.get("/v1/agents/aoi/memories", params={"limit": 5}).json()["memories"]
    emotion = http.get("/v1/agents/aoi/emotion").json()
    page.goto(town["base"] + "/agents/aoi")
    expect(page.locator("#agent-name")).to_contain_text("葵")
    expect(page.locator("#mem-rows")).to_contain_text(memories[0]["content"])
    expect(page.locator("#emotion-label")).to_contain_text(emotion["label"])
    expect(page.locator("#emotion-axes .axis-row")).to_have_count(8)
    expect(page.locator("#radar .radar-shape")).to_have_count(1)
    expect(page.locator("#plan .plan-list li.current")).to_contain_text("now 14:30")
    expect(page.locator("#reflections .reflection").first).to_contain_text("ひかり")
    page.locator("#reflections summary").first.click()
    expect(page.locator("#reflections .evidence li").first).not_to_contain_text("older than")
    shoot(page, "agent")


def test_agent_page_shows_what_is_on_its_mind(page: Page, town: dict[str, Any]) -> None:
    http: httpx.Client = town["http"]
    text = "明日の19時に公園で花火大会を開く"
    assert (
        http.post("/v1/agents/ren/whisper", json={"text": text, "day": 1, "time_of_day": 9}).status_code
        == 200
    )
    page.goto(town["base"] + "/agents/ren")
    expect(page.locator("#intentions li").first).to_contain_text(text)
    page.goto(town["base"] + "/agents/hikari")
    expect(page.locator("#intentions")).to_contain_text("Nothing in particular")


def test_plan_card_shows_the_whole_day_at_1280x800(page: Page, town: dict[str, Any]) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(town["base"] + "/agents/aoi")
    items = page.locator("#plan .plan-list li")
    expect(items.first).to_be_visible()
    count = len(town["http"].get("/v1/agents/aoi/plan", params={"day": 1}).json()["items"])
    expect(items).to_have_count(count)
    # No box between the last item and the card scrolls or clips: the whole plan is on the page.
    # (Read in one go: the plan is redrawn as the agent's state refreshes.)
    clipped = page.evaluate(
        """() => {
            const last = document.querySelector("#plan .plan-list li:last-child");
            const out = [];
            for (let n = last.parentElement; n && !n.matches("section.card"); n = n.parentElement) {
                if (n.scrollHeight > n.clientHeight + 1) out.push(n.id || n.className);
            }
            const card = last.closest("section.card");
            if (card.scrollHeight > card.clientHeight + 1) out.push("card");
            const r = last.getBoundingClientRect(), c = card.getBoundingClientRect();
            if (r.bottom > c.bottom) out.push("outside the card");
            last.scrollIntoView({ block: "center" });
            const v = last.getBoundingClientRect();
            const hit = document.elementFromPoint(v.left + 8, (v.top + v.bottom) / 2);
            if (!last.contains(hit)) out.push("the last item is not on screen once scrolled to");
            return out;
        }"""
    )
    assert clipped == [], f"the plan scrolls inside {clipped}"
    page.screenshot(path=str(SHOTS / "agent-1280x800.png"))


def test_people_card_of_a_town_acquaintance_says_known_from_before(
    page: Page, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with (
        running_server(tmp_path_factory.mktemp("town25")) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        assert http.post("/v1/world/import", json=bundled_world("town25")).status_code == 200
        page.goto(base + "/agents/hikari")
        card = page.locator('#people .person[data-person="aoi"]')
        expect(card.locator(".person-met")).to_have_attribute("data-count", "0")
        expect(card.locator(".person-met")).to_contain_text("known from before")
        expect(card).to_contain_text("幼なじみ")
        page.goto("about:blank")  # the page polls its server: leave before that server stops


def test_people_card_shows_one_labelled_count(page: Page, town: dict[str, Any]) -> None:
    known = town["http"].get("/v1/agents/aoi/people/hikari").json()
    page.goto(town["base"] + "/agents/aoi")
    card = page.locator('#people .person[data-person="hikari"]')
    count = known["interaction_count"]
    expect(card.locator(".person-met")).to_have_attribute("data-count", str(count))
    word = "1 conversation" if count == 1 else f"{count} conversations"
    expect(card.locator(".person-met")).to_contain_text(f"{word} · last day {known['last_met_day']}")
    text = card.inner_text()
    # No second, different count of meetings in the summary (the stand-in model once froze one there).
    assert all(int(n) == count for n in re.findall(r"(\d+)回話した", text)), text
    assert " met " not in text and "×" not in text
    # Topics are words said in the conversation, not fragments of two words or filler.
    said = "".join(town["http"].get(f"/v1/conversations/{SESSION_ID}").json()["transcript"])
    noted = re.findall(r"ひかりは(.+?)の話をしていた", text)
    assert noted and all(topic in said for topic in noted), (noted, said)
    for fragment in ("前話", "本当", "一息", "今日"):
        assert fragment not in text, f"{fragment} in the people card: {text}"


def test_memory_table_filters_by_type_and_text(page: Page, town: dict[str, Any]) -> None:
    # A memory the text filter must find, whatever the scripted conversation happened to say.
    http: httpx.Client = town["http"]
    known = {"type": "reflection", "content": "ひかりに図書館？と聞かれて、道を教えた", "importance": 4}
    assert http.post("/v1/agents/aoi/memories", json=known).status_code == 201
    page.goto(town["base"] + "/agents/aoi")
    expect(page.locator("#mem-rows tr").first).to_have_attribute("data-type", "reflection")
    page.select_option("#mem-type", "plan")
    expect(page.locator("#mem-rows tr[data-type]")).to_have_count(1)
    expect(page.locator("#mem-rows tr").first).to_have_attribute("data-type", "plan")
    page.select_option("#mem-type", "")
    page.fill("#mem-q", "図書館？")
    expect(page.locator("#mem-rows tr[data-type]").first).to_contain_text("図書館")
    expect(page.locator("#mem-count")).to_contain_text("matching")


def test_retrieval_probe_shows_the_components_for_a_japanese_query_and_touches_nothing(
    page: Page, town: dict[str, Any]
) -> None:
    http: httpx.Client = town["http"]

    def accessed() -> dict[int, tuple[int, float]]:
        rows = http.get("/v1/agents/aoi/memories", params={"limit": 200}).json()["memories"]
        return {m["id"]: (m["last_accessed_day"], m["last_accessed_time_of_day"]) for m in rows}

    before = accessed()
    page.goto(town["base"] + "/agents/aoi")
    page.fill("#probe-query", "カフェ")
    page.click("#probe-form button[type=submit]")
    hits = page.locator("#probe-results .hit")
    expect(hits.first).to_be_visible()
    assert accessed() == before  # a look, not a recall (touch: false)
    expect(hits.first.locator(".score")).to_have_attribute("title", re.compile(r"relevance.*time"))
    for component in ("recency", "importance", "relevance", "time"):
        expect(hits.first.locator(f'[data-component="{component}"] .component-value')).to_have_text(
            re.compile(r"^\d\.\d\d$")
        )
    expect(hits.first).to_contain_text("カフェ")
    shoot(page, "agent-probe")
    # The probe stayed on the page: it answered in place, not by a form GET that reloads it.
    assert "query=" not in page.url


def test_a_probe_link_runs_the_probe_when_the_page_opens(page: Page, town: dict[str, Any]) -> None:
    page.goto(town["base"] + "/agents/aoi?query=%E3%82%AB%E3%83%95%E3%82%A7&k=5")
    expect(page.locator("#probe-query")).to_have_value("カフェ")
    expect(page.locator("#probe-k")).to_have_value("5")
    hits = page.locator("#probe-results .hit")
    expect(hits.first).to_contain_text("カフェ")
    assert hits.count() <= 5


def test_a_memory_posted_through_the_api_appears_without_reload(page: Page, town: dict[str, Any]) -> None:
    page.goto(town["base"] + "/agents/aoi")
    expect(page.locator("#mem-rows tr[data-type]").first).to_be_visible()
    page.evaluate("window.__sameDocument = true")
    text = "公園の桜がきれいに咲いていた <b>まだ</b> 散っていない"
    posted = town["http"].post(
        "/v1/agents/aoi/memories", json={"type": "observation", "content": text, "importance": 6}
    )
    assert posted.status_code == 201, posted.text
    row = page.locator(f"#memory-{posted.json()['id']}")
    expect(row).to_contain_text(text)  # shown as text: the markup is not interpreted
    assert page.evaluate("window.__sameDocument") is True, "the page reloaded"
    assert page.locator("#mem-rows b").count() == 0


def test_conversation_list_and_transcript(page: Page, town: dict[str, Any]) -> None:
    page.goto(town["base"] + "/conversations")
    row = page.locator(f'#conv-rows tr[data-session="{SESSION_ID}"]')
    expect(row).to_contain_text("葵")
    expect(row).to_contain_text("ひかり")
    shoot(page, "conversations")
    row.get_by_role("link", name=f"{len(town['replies'])} turns").click()
    expect(page.locator("#transcript .turn")).to_have_count(len(town["replies"]))
    for reply in town["replies"]:
        turn = page.locator(f'#transcript .turn[data-turn="{reply["turn_index"]}"]')
        expect(turn).to_contain_text(reply["dialogue"])
        expect(turn.locator(".emo")).to_have_text(reply["emotion"])
    expect(page.locator("#conv-meta")).to_contain_text("distance")
    shoot(page, "conversation")


def test_a_conversation_of_one_line_reads_1_turn(page: Page, town: dict[str, Any]) -> None:
    """Counts are pluralised ("1 turns" before)."""
    body = {"agent_id": "natsumi", "target_id": "haruka", "session_id": "one-line", "time_of_day": 15.0}
    assert town["http"].post("/v1/conversation/turn", json=body).status_code == 200
    page.goto(town["base"] + "/conversations")
    row = page.locator('#conv-rows tr[data-session="one-line"]')
    expect(row.get_by_role("link", name="1 turn", exact=True)).to_be_visible()


def test_lines_unity_relayed_before_the_first_server_turn_are_shown(page: Page, town: dict[str, Any]) -> None:
    http: httpx.Client = town["http"]
    names = town["names"]
    history = [
        f"{names['aoi']}: ねえ、{names['hikari']}！",
        f"{names['hikari']}: あ、{names['aoi']}。どうしたの？",
    ]
    session = "webui-relayed"
    speaker, target = "aoi", "hikari"
    for _ in range(3):
        body = {"agent_id": speaker, "target_id": target, "session_id": session, "location_name": "中央カフェ",
                "history": history, "time_of_day": 15.0, "day": 1}  # fmt: skip
        reply = http.post("/v1/conversation/turn", json=body)
        assert reply.status_code == 200, reply.text
        history = [*history, f"{names[speaker]}: {reply.json()['dialogue']}"]
        if reply.json()["is_conversation_end"]:
            break
        speaker, target = target, speaker
    wait_idle(http)
    stored = http.get(f"/v1/conversations/{session}").json()
    page.goto(f"{town['base']}/conversations/{session}")
    bubbles = page.locator("#transcript .turn")
    expect(bubbles).to_have_count(len(stored["transcript"]))
    assert stored["turn_count"] == len(stored["transcript"]) == len(history)
    relayed = page.locator("#transcript .turn.relayed")
    expect(relayed).to_have_count(2)
    expect(relayed.nth(0)).to_contain_text("ねえ、")
    expect(relayed.nth(0).locator("strong")).to_have_text(names["aoi"])
    expect(relayed.nth(1)).to_have_class(re.compile(r"\bright\b"))  # ひかり's side
    expect(relayed.first.locator(".chip.relayed")).to_have_attribute("title", re.compile("Unity"))
    for turn in stored["turns"]:
        expect(page.locator(f'#transcript .turn[data-turn="{turn["turn_index"]}"]')).to_contain_text(
            turn["dialogue"]
        )
    expect(page.locator("#conv-meta")).to_contain_text(f"{len(history)} · 2 relayed from Unity")
    shoot(page, "conversation-relayed")


def test_judge_scores_a_conversation_from_its_page(page: Page, town: dict[str, Any]) -> None:
    page.goto(f"{town['base']}/conversations/{SESSION_ID}")
    page.click("#judge-button")
    expect(page.locator("#judge .scores li").first).to_be_visible()
    expect(page.locator("#judge")).to_contain_text("/ 10")


def test_council_record_round_by_round(page: Page, town: dict[str, Any]) -> None:
    record = town["http"].get(f"/v1/council/{town['council_id']}").json()
    page.goto(town["base"] + "/council")
    expect(page.locator("#council-rows")).to_contain_text("公園に図書コーナーを作る")
    shoot(page, "councils")
    page.get_by_role("link", name="公園に図書コーナーを作る").click()
    rounds = record["record"]["rounds"]
    expect(page.locator("#council-rounds .round")).to_have_count(len(rounds))
    first = page.locator('#council-rounds .round[data-round="1"] .member')
    expect(first).to_have_count(len(record["members"]))
    for opinion in rounds[0]["opinions"]:
        card = page.locator(
            f'#council-rounds .round[data-round="1"] .member[data-member="{opinion["agent_id"]}"]'
        )
        expect(card).to_contain_text(opinion["name"])
        expect(card.locator(".stance")).to_have_text(opinion["stance"])
    expect(page.locator("#council-consensus")).to_contain_text(record["outcome"].split("_")[0])
    shoot(page, "council")


def test_llm_calls_filters_and_full_prompt(page: Page, town: dict[str, Any]) -> None:
    calls = town["http"].get("/v1/llm-calls", params={"purpose": "dialogue"}).json()["calls"]
    page.goto(town["base"] + "/llm-calls")
    expect(page.locator("#call-rows tr[data-call]").first).to_be_visible()
    shoot(page, "llm-calls")
    page.fill("#f-purpose", "dialogue")
    page.click("#call-filters button[type=submit]")
    expect(page.locator("#call-rows tr[data-call]")).to_have_count(len(calls))
    page.check("#f-errors")
    page.click("#call-filters button[type=submit]")
    expect(page.locator("#call-rows")).to_contain_text("No calls match")
    page.goto(f"{town['base']}/llm-calls/{calls[0]['id']}")
    detail = town["http"].get(f"/v1/llm-calls/{calls[0]['id']}").json()
    expect(page.locator("#call-messages .message")).to_have_count(len(detail["messages"]))
    expect(page.locator("#call-messages")).to_contain_text(detail["messages"][-1]["content"][:40])
    expect(page.locator("#call-reply")).to_contain_text("dialogue")
    shoot(page, "llm-call")


def test_without_the_event_socket_the_page_falls_back_to_polling(page: Page, town: dict[str, Any]) -> None:
    # The server accepts the socket and closes it at once, as a proxy without WebSocket support would.
    page.route_web_socket(re.compile(r"/v1/events"), lambda ws: ws.close())
    page.goto(town["base"] + "/agents/hikari")
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "polling")
    posted = town["http"].post(
        "/v1/agents/hikari/memories", json={"type": "observation", "content": "図書館で静かに本を読んだ"}
    )
    assert posted.status_code == 201
    expect(page.locator(f"#memory-{posted.json()['id']}")).to_contain_text("図書館で静かに本を読んだ")


def test_pages_work_in_another_world(page: Page, town: dict[str, Any]) -> None:
    http: httpx.Client = town["http"]
    headers = {"X-Machi-World": "exhibit"}
    assert http.put(
        "/v1/pois/plaza", json={"name": "広場", "position": {"x": 0, "z": 0}}, headers=headers
    ).is_success
    assert http.put("/v1/agents/kai", json={"name": "海", "home_poi": "plaza"}, headers=headers).is_success
    http.post(
        "/v1/agents/kai/memories",
        json={"type": "observation", "content": "広場で凧を揚げた"},
        headers=headers,
    )
    page.goto(town["base"] + "/?world=exhibit")
    expect(page.locator("#roster .roster-item")).to_have_count(1)
    expect(page.locator("#roster")).to_contain_text("海")
    page.locator("#roster a").click()
    expect(page).to_have_url(re.compile(r"/agents/kai\?world=exhibit$"))
    expect(page.locator("#mem-rows")).to_contain_text("広場で凧を揚げた")


def test_an_unknown_world_says_so_and_links_the_worlds_that_exist(page: Page, town: dict[str, Any]) -> None:
    page.goto(town["base"] + "/?world=nowhere")
    notice = page.locator("#world-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("“nowhere” has no agents or places")
    default = notice.locator('a[data-world="default"]')
    expect(default).to_contain_text("default")
    expect(notice.locator("li", has=page.locator('a[data-world="default"]'))).to_contain_text("6 agents")
    shoot(page, "town-unknown-world")
    default.click()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("#roster .roster-item")).to_have_count(6)
    expect(page.locator("#world-notice")).to_have_count(0)


def test_an_emotion_change_appears_without_reload(page: Page, town: dict[str, Any]) -> None:
    """蓮 has not talked yet: his page shows the resting baseline until a turn's evaluation lands."""
    http: httpx.Client = town["http"]
    page.goto(town["base"] + "/agents/ren")
    expect(page.locator("#emotion-source")).to_contain_text("resting baseline")
    turn = {"agent_id": "ren", "target_id": "aoi", "session_id": "s-live-emotion", "location_name": "公園",
            "history": [], "time_of_day": 15.0}  # fmt: skip
    assert http.post("/v1/conversation/turn", json=turn).status_code == 200
    deadline = time.monotonic() + 30
    while not (state := http.get("/v1/agents/ren/emotion").json())["evaluated"]:
        assert time.monotonic() < deadline, "the emotion evaluation did not land"
        time.sleep(0.1)
    expect(page.locator("#emotion-source")).to_contain_text("updated")
    expect(page.locator("#emotion-label")).to_contain_text(state["label"])
    joy = str(math.floor(state["values"]["joy"] + 0.5))  # as JavaScript's Math.round
    expect(page.locator('#emotion-axes [data-axis="joy"] .axis-value')).to_have_text(joy)
