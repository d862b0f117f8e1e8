"""The dashboard's pages over plain HTTP (no browser): routes, escaping, links to the JSON API, static files."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient

from backend.api.dashboard import CAPABILITY_PROBES
from backend.config import Settings
from backend.scripted import ScriptedLLM
from tests.conftest import make_client

PAGES = [
    "/",
    "/agents/aoi",
    "/conversations",
    "/conversations/s1",
    "/council",
    "/council/c1",
    "/llm-calls",
    "/llm-calls/1",
]


def _boot(html: str) -> dict:
    found = re.search(r'<script id="machi-boot" type="application/json">(.*?)</script>', html, re.S)
    assert found, "page has no boot record"
    return json.loads(found.group(1))


def _demo(settings: Settings, scripted: ScriptedLLM) -> TestClient:
    return make_client(settings, scripted, load_demo_world=True)


def test_every_page_renders_utf8_html_linking_its_json_api(settings: Settings, scripted: ScriptedLLM) -> None:
    with _demo(settings, scripted) as client:
        opening = {"agent_id": "aoi", "target_id": "hikari", "session_id": "s1", "time_of_day": 9.0}
        assert client.post("/v1/conversation/turn", json=opening).status_code == 200
        for path in PAGES:
            response = client.get(path)
            assert response.status_code == 200, path
            assert response.headers["content-type"] == "text/html; charset=utf-8"
            assert 'href="/v1/' in response.text or 'href="/health"' in response.text, path
            assert '<meta charset="utf-8">' in response.text
        agent = client.get("/agents/aoi").text
        assert "葵" in agent and 'href="/v1/agents/aoi/memories"' in agent
        assert "葵の家" in agent  # home shown by its point of interest's name


def test_static_files_are_served(client: TestClient) -> None:
    css = client.get("/static/machi.css")
    assert css.status_code == 200 and "Noto Sans CJK JP" in css.text
    js = client.get("/static/js/pages/agent.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert client.get("/static/../backend/config.py").status_code == 404


def test_boot_record_names_world_and_the_endpoints_this_server_has(client: TestClient) -> None:
    boot = _boot(client.get("/", params={"world": "exhibit-2"}).text)
    assert boot["world"] == "exhibit-2" and boot["page"] == "town"
    assert set(boot["caps"]) == set(CAPABILITY_PROBES)
    # The app wires these concepts today; a missing router would turn its flag false.
    for name in ("agents", "pois", "memories", "retrieve", "conversations", "llm_calls", "health", "events"):
        assert boot["caps"][name] is True, name


def test_links_between_pages_keep_the_world(client: TestClient) -> None:
    html = client.get("/conversations", params={"world": "exhibit-2"}).text
    assert 'href="/council?world=exhibit-2"' in html
    assert 'href="/council"' in client.get("/conversations").text


def test_unknown_agent_and_bad_world_get_html_problem_pages(client: TestClient) -> None:
    missing = client.get("/agents/nobody")
    assert missing.status_code == 404 and "nobody" in missing.text
    assert "text/html" in missing.headers["content-type"]
    bad = client.get("/", params={"world": "no spaces"})
    assert bad.status_code == 422 and "text/html" in bad.headers["content-type"]


def test_persona_text_is_escaped(client: TestClient) -> None:
    evil = "<script>alert(1)</script>"
    put = client.put("/v1/agents/mallory", json={"name": evil, "backstory": evil, "traits": [evil]})
    assert put.status_code == 201
    html = client.get("/agents/mallory").text
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_agent_page_inlines_the_stored_plan_for_the_day(client: TestClient) -> None:
    client.put("/v1/pois/cafe", json={"name": "中央カフェ", "position": {"x": 0, "z": 0}})
    client.put("/v1/agents/aoi", json={"name": "葵", "home_poi": "cafe"})
    assert _boot(client.get("/agents/aoi").text)["plan"] is None
    assert client.post("/v1/agents/aoi/plan", json={"day": 2}).status_code == 200
    boot = _boot(client.get("/agents/aoi", params={"day": 2}).text)
    assert boot["day"] == 2 and boot["plan"]["items"], "the day's plan should come inline"


def test_an_unknown_world_names_the_worlds_that_exist(settings: Settings, scripted: ScriptedLLM) -> None:
    with _demo(settings, scripted) as client:
        assert 'id="world-notice"' not in client.get("/").text  # the demo town is there
        html = client.get("/", params={"world": "typo"}).text
        assert "World “typo” has no agents or places" in html
        assert re.search(
            r'<a href="/" data-world="default">default</a>\s*<span[^>]*>6 agents · 9 places', html
        )
        assert client.put(
            "/v1/agents/kai", json={"name": "海"}, headers={"X-Machi-World": "exhibit"}
        ).is_success
        listed = client.get("/", params={"world": "typo"}).text
        assert 'href="/?world=exhibit" data-world="exhibit"' in listed and "1 agent · 0 places" in listed
        # A world in use never names the others (world isolation).
        in_exhibit = client.get("/", params={"world": "exhibit"}).text
        assert 'id="world-notice"' not in in_exhibit and 'data-world="default"' not in in_exhibit


def test_an_empty_server_says_how_a_world_begins(client: TestClient) -> None:
    html = client.get("/").text
    assert "No world on this server has agents or places yet" in html and "PUT /v1/agents/{id}" in html


def test_agent_state_shows_as_a_label_with_the_raw_id_in_its_title(client: TestClient) -> None:
    client.put("/v1/agents/aoi", json={"name": "葵"})
    report = {"state": "wandering_in_poi", "location_name": "公園", "day": 1, "time_of_day": 9.0}
    assert client.post("/v1/agents/aoi/state", json=report).is_success
    html = client.get("/agents/aoi").text
    assert '<span class="chip state" title="wandering_in_poi" lang="ja">散策中</span>' in html
    assert _boot(html)["state_labels"]["wandering_in_poi"] == "散策中"


def test_the_visitors_filter_and_panel_follow_the_address_and_the_world(client: TestClient) -> None:
    only = client.get("/conversations", params={"visitors": "1", "world": "exhibit-2"}).text
    assert _boot(only)["visitors"] is True and _boot(only)["caps"]["players"] is True
    assert re.search(r'<input type="checkbox" id="conv-visitors" name="visitors" value="1" checked>', only)
    assert "checked" not in client.get("/conversations").text.split('id="conv-visitors"')[1].split(">")[0]
    town = client.get("/", params={"world": "exhibit-2"}).text
    assert 'href="/conversations?world=exhibit-2&amp;visitors=1"' in town
    assert 'href="/conversations?visitors=1"' in client.get("/").text


def test_an_unknown_conversation_is_a_404_page_leading_back_to_the_list(client: TestClient) -> None:
    """It was a 200 page with an active judge button."""
    client.put("/v1/agents/aoi", json={"name": "葵"}, headers={"X-Machi-World": "expo"})
    missing = client.get("/conversations/doesnotexist", params={"world": "expo"})
    assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
    assert "No such conversation" in missing.text and "“doesnotexist”" in missing.text
    assert 'href="/conversations?world=expo"' in missing.text
    assert 'id="judge' not in missing.text and "machi-boot" in missing.text


def test_an_unknown_world_is_named_as_such_with_the_worlds_there_are(client: TestClient) -> None:
    """An agent or conversation asked for in a mistyped world: the world is what is unknown, not the agent."""
    client.put("/v1/agents/aoi", json={"name": "葵"}, headers={"X-Machi-World": "expo2026"})
    for path in ("/agents/aoi", "/conversations/s1"):
        page = client.get(path, params={"world": "expo2025"})
        assert page.status_code == 404
        assert "No such world" in page.text and "World “expo2025” is unknown" in page.text
        assert '<a href="/?world=expo2026">expo2026</a>' in page.text
    known = client.get("/agents/nobody", params={"world": "expo2026"})
    assert known.status_code == 404 and "There is no agent “nobody” in world “expo2026”" in known.text
