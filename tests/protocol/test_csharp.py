"""The Unity package compiles with Mono's mcs against stubs of Unity/UniTask/UniVRM, and its DTOs round-trip
with the real server: C# serialises requests the server accepts, and parses the server's real replies."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.protocol.unity_tools import CSHARP_NEEDS, find_newtonsoft, install_line, missing_tools
from tests.webui.server import running_server

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "unity_protocol" / "csharp"
STUBS = Path(__file__).parent / "csharp_stubs"
PROGRAM = Path(__file__).parent / "csharp" / "RoundTrip.cs"

MISSING = missing_tools(CSHARP_NEEDS)
pytestmark = pytest.mark.skipif(bool(MISSING), reason=install_line(MISSING))


def _newtonsoft() -> Path:
    found = find_newtonsoft()
    assert found is not None  # the skipif above checked
    return found


def _mcs(out: Path, sources: list[Path], target: str) -> None:
    command = [
        "mcs",
        f"-target:{target}",
        f"-out:{out}",
        f"-r:{_newtonsoft()}",
        "-warnaserror+",
        "-nowarn:1591",
    ]
    result = subprocess.run([*command, *map(str, sources)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"mcs failed:\n{result.stdout}\n{result.stderr}"


def _sources(*roots: Path) -> list[Path]:
    return sorted(path for root in roots for path in root.rglob("*.cs"))


def test_every_package_file_compiles_with_mcs(tmp_path: Path) -> None:
    sources = _sources(PACKAGE, STUBS)
    assert any(p.parent.name == "Generated" for p in sources) and any("Samples~" in p.parts for p in sources)
    _mcs(tmp_path / "Machi.Client.dll", sources, "library")


@pytest.fixture(scope="module")
def roundtrip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RoundTrip.exe: the package (Runtime and sample) + the stubs + the test program, in one assembly."""
    folder = tmp_path_factory.mktemp("roundtrip")
    _mcs(folder / "roundtrip.exe", [*_sources(PACKAGE, STUBS), PROGRAM], "exe")
    shutil.copy(_newtonsoft(), folder)
    return folder / "roundtrip.exe"


def _run(exe: Path, *args: str) -> str:
    result = subprocess.run(["mono", str(exe), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout


def test_client_retry_policy_error_parsing_and_sse_parser(roundtrip: Path) -> None:
    assert "selftest ok" in _run(roundtrip, "selftest")


def test_sample_events_client_gets_the_filtered_events_of_a_live_server(
    roundtrip: Path, tmp_path: Path
) -> None:
    """MachiEvents.ReceiveAsync over a real WebSocket: the URL, headers and filters it sends are the server's."""
    with running_server(tmp_path) as base, httpx.Client(base_url=base) as http:
        events = subprocess.Popen(
            ["mono", str(roundtrip), "events", base, "agent.state", "aoi", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while events.poll() is None and time.monotonic() < deadline:
            for agent in ("hikari", "aoi"):  # until the client has subscribed and heard two of aoi's
                report = {"state": "talking", "day": 1, "time_of_day": 9.0}
                http.post(f"/v1/agents/{agent}/state", json=report).raise_for_status()
            time.sleep(0.2)
        out, err = events.communicate(timeout=30)
    assert events.returncode == 0, f"{out}\n{err}"
    received = [json.loads(line) for line in out.splitlines()]
    assert len(received) == 2
    for event in received:
        assert (event["type"], event["world"], event["agent"], event["state"]) == (
            "agent.state",
            "default",
            "aoi",
            "talking",
        )
        assert _is_time(event["at"])


def test_requests_serialised_by_csharp_are_accepted_and_replies_parse_back(
    roundtrip: Path, client: TestClient, tmp_path: Path
) -> None:
    requests_dir, replies_dir, echoed_dir = (tmp_path / d for d in ("requests", "replies", "echoed"))
    for folder in (requests_dir, replies_dir, echoed_dir):
        folder.mkdir()
    _run(roundtrip, "serialize", str(requests_dir))
    sent = {p.stem: p.read_bytes() for p in requests_dir.glob("*.json")}
    replies = _drive_server(client, sent)
    for name, body in replies.items():
        (replies_dir / name).write_bytes(body)
    _run(roundtrip, "deserialize", str(replies_dir), str(echoed_dir))

    for name, body in replies.items():
        if name.endswith(".sse"):
            continue
        original, echoed = json.loads(body), json.loads((echoed_dir / name).read_text(encoding="utf-8"))
        _assert_same(original, echoed, name)
    stream = json.loads((echoed_dir / "turn.sse.json").read_text(encoding="utf-8"))
    assert stream["dialogue"] and any(e["name"] == "reply" for e in stream["events"])
    visit = json.loads((echoed_dir / "player-turn.sse.json").read_text(encoding="utf-8"))
    assert visit["dialogue"] and visit["player_line"] == "ユキ: やあ、ひかりさん。"
    assert visit["next_speaker"] == "player:cs-guest"


def _drive_server(client: TestClient, sent: dict[str, bytes]) -> dict[str, bytes]:
    """Send the C# requests in the order Unity would; keep each real reply under its DTO's name."""
    # X-Machi-Protocol: MachiClientOptions.ProtocolVersion
    headers = {"Content-Type": "application/json", "X-Machi-Protocol": "2"}
    replies: dict[str, bytes] = {}

    def call(method: str, path: str, body: str | None, name: str | None) -> Any:
        reply = client.request(method, path, content=sent[body] if body else None, headers=headers)
        assert reply.status_code < 300, f"{method} {path} with C# {body}: {reply.status_code} {reply.text}"
        if name:
            replies[name] = reply.content
        return reply

    call("PUT", "/v1/pois/cafe", "poi-cafe", "PoiPublic.cafe.json")
    call("PUT", "/v1/pois/park", "poi-park", None)
    call("PUT", "/v1/agents/aoi", "agent-aoi", "AgentDetail.put.json")
    call("PUT", "/v1/agents/hikari", "agent-hikari", None)
    call("GET", "/health", None, "HealthPublic.json")
    call("GET", "/v1/pois", None, "list-PoiPublic.json")
    call("POST", "/v1/agents/aoi/state", "state", "StateAccepted.json")
    call("POST", "/v1/agents/aoi/plan", "plan", "PlanPublic.json")
    call("GET", "/v1/agents/aoi/plan/now?day=1&time_of_day=10.5", None, "PlanNow.json")
    call("POST", "/v1/conversation/turn", "turn", "TurnResult.json")
    replies["turn.sse"] = call("POST", "/v1/conversation/turn/stream", "turn-stream", None).content
    call("POST", "/v1/conversation/end", "end", "EndResult.json")
    call("POST", "/v1/agents/aoi/memories", "memory", "MemoryPublic.json")
    drain(client)
    call("POST", "/v1/agents/aoi/memories/retrieve", "retrieve", "RetrieveResponse.json")
    call("GET", "/v1/agents/aoi/memories?limit=5", None, "MemoryList.json")
    call("GET", "/v1/conversations/cs-roundtrip-1", None, "ConversationDetail.json")
    call("GET", "/v1/conversations", None, "ConversationList.json")
    call("GET", "/v1/agents", None, "list-AgentPublic.json")
    call("GET", "/v1/agents/aoi", None, "AgentDetail.get.json")
    # Protocol 2: gestures, visitors (the id escaped in the path as Uri.EscapeDataString writes it), a visitor's
    # line plain and streamed, a group turn, action results.
    call("PUT", "/v1/agents/ren", "agent-ren", None)
    call("PUT", "/v1/world/gestures", "gestures", "WorldActions.put.json")
    call("GET", "/v1/world/actions", None, "WorldActions.get.json")
    call("PUT", "/v1/players/player%3Acs-guest", "player", "PlayerPublic.put.json")
    call("GET", "/v1/players/player%3Acs-guest", None, "PlayerPublic.get.json")
    call("POST", "/v1/conversation/player-turn", "player-turn", "PlayerTurnResult.json")
    replies["player-turn.sse"] = call(
        "POST", "/v1/conversation/player-turn/stream", "player-turn-stream", None
    ).content
    call("GET", "/v1/players", None, "PlayerList.json")
    call("POST", "/v1/conversation/turn", "group-turn", "TurnResult.group.json")
    call("POST", "/v1/agents/aoi/action-result", "action-give", "ActionResultAccepted.give.json")
    call("POST", "/v1/agents/aoi/action-result", "action-gesture", "ActionResultAccepted.gesture.json")
    call("POST", "/v1/agents/hikari/action-result", "action-go-to", "ActionResultAccepted.go-to.json")
    # The council (202, then read back once it ran), the judge, the interview.
    council_id = call("POST", "/v1/council", "council", "CouncilAccepted.json").json()["id"]
    drain(client)
    call("GET", f"/v1/council/{council_id}", None, "CouncilPublic.json")
    call("GET", "/v1/council?limit=5&status=done", None, "CouncilList.json")
    call("POST", "/v1/agents/aoi/interview", "interview", "InterviewResult.json")
    call("POST", "/v1/judge", "judge", "JudgeResult.json")
    replies["JudgeResult.conversation.json"] = client.post(
        "/v1/conversations/cs-roundtrip-1/judge", headers=headers
    ).content
    missing = client.get("/v1/agents/nobody", headers=headers)
    assert missing.status_code == 404
    replies["ErrorBody.json"] = missing.content

    agent = client.get("/v1/agents/aoi").json()
    assert (
        agent["name"] == "葵"
        and agent["traits"] == ["読書好き", "好奇心旺盛"]
        and agent["home_poi"] == "cafe"
    )
    assert json.loads(replies["TurnResult.json"])["session_id"] == "cs-roundtrip-1"
    visit = json.loads(replies["PlayerTurnResult.json"])
    assert visit["player_line"] == "ユキ: こんにちは！おすすめの本は？" and visit["speaker_id"] == "aoi"
    assert visit["target_id"] == "player:cs-guest" and visit["next_speaker"] == "player:cs-guest"
    players = json.loads(replies["PlayerList.json"])["players"]
    assert [(p["id"], p["display_name"], p["registered"], p["lines"]) for p in players] == [
        ("player:cs-guest", "ユキ", True, 2)
    ]
    group = json.loads(replies["TurnResult.group.json"])
    assert group["participants"] == ["aoi", "hikari", "ren"] and group["next_speaker"] in ("hikari", "ren")
    assert json.loads(replies["WorldActions.put.json"])["gestures"] == ["wave", "bow"]
    remembered = [
        json.loads(replies[f"ActionResultAccepted.{k}.json"])["content"] for k in ("give", "gesture", "go-to")
    ]
    assert remembered[0] == "ひかりに本を渡した。" and "手がふさがっていた" in remembered[1]
    assert "公園" in remembered[2]
    council = json.loads(replies["CouncilPublic.json"])
    assert council["status"] == "done" and council["members"] == ["aoi", "hikari", "ren"]
    assert council["title"] == "公園に図書コーナーを作る" and council["rounds"] == 1 and council["outcome"]
    assert [c["id"] for c in json.loads(replies["CouncilList.json"])["councils"]] == [council_id]
    interview = json.loads(replies["InterviewResult.json"])
    assert (
        interview["agent_id"] == "aoi" and "ケーキ" in interview["answer"] and interview["fallback"] is False
    )
    assert "カフェで新しいケーキを見つけた" in [m["content"] for m in interview["memories_used"]]
    assert set(json.loads(replies["JudgeResult.json"])["scores"]) == {"in_character", "coherence"}
    verdict = json.loads(replies["JudgeResult.conversation.json"])
    assert verdict["session_id"] == "cs-roundtrip-1" and set(verdict["scores"]) == {
        "in_character",
        "coherence",
        "memory_use",
    }
    assert json.loads(replies["EndResult.json"])["end_reason"] in (
        "distance",
        "farewell",
        "model",
        "max_turns",
    )
    return replies


#: The council, judge and interview methods: name -> (parameter types, return type), as reflection reads them.
COUNCIL_AND_INTERVIEW = {
    "StartCouncilAsync": (["CouncilCreate", "CancellationToken"], "UniTask<CouncilAccepted>"),
    "GetCouncilAsync": (["String", "CancellationToken"], "UniTask<CouncilPublic>"),
    "GetCouncilsAsync": (["String", "Int32", "CancellationToken"], "UniTask<CouncilList>"),
    "GetCouncilRecordAsync": (["String", "CancellationToken"], "UniTask<String>"),
    "WaitForCouncilAsync": (["String", "TimeSpan", "CancellationToken"], "UniTask<CouncilPublic>"),
    "InterviewAsync": (["String", "InterviewRequest", "CancellationToken"], "UniTask<InterviewResult>"),
    "JudgeAsync": (["JudgeRequest", "CancellationToken"], "UniTask<JudgeResult>"),
    "JudgeConversationAsync": (["String", "CancellationToken"], "UniTask<JudgeResult>"),
}


def test_machi_client_has_the_council_judge_and_interview_calls(roundtrip: Path) -> None:
    """MachiClient, as compiled, offers the council, judge and interview calls with the exported DTOs."""
    methods = [json.loads(line) for line in _run(roundtrip, "methods").splitlines()]
    found = {m["name"]: (m["parameters"], m["returns"]) for m in methods}
    assert "TurnAsync" in found, "the reflection listing reads the client's calls"
    for name, signature in COUNCIL_AND_INTERVIEW.items():
        assert found.get(name) == signature, f"MachiClient.{name}: {found.get(name)}"


def test_a_real_rate_limit_and_length_refusal_parse_as_the_visitor_ui_expects(
    roundtrip: Path, settings: Settings, scripted: ScriptedLLM, tmp_path: Path
) -> None:
    """The server's own 429 (Retry-After, details.limit) is a MachiRateLimitException naming the limit, too long
    to wait out by itself; a line past PLAYER_MAX_CHARS is a 422 whose details name PLAYER_MAX_CHARS."""
    with make_client(settings, scripted, player_lines_per_minute=1, player_max_chars=10) as client:
        client.put("/v1/pois/cafe", json={"name": "カフェ", "position": {"x": 0, "z": 0}})
        client.put("/v1/agents/aoi", json={"name": "葵"})
        line = {"session_id": "cs-limit-1", "player_id": "player:fast", "agent_id": "aoi", "text": "こんにちは",
                "history": [], "time_of_day": 10.0}  # fmt: skip
        assert client.post("/v1/conversation/player-turn", json=line).status_code == 200
        again = client.post("/v1/conversation/player-turn", json=line)
        assert again.status_code == 200, "a retry with the same history is the stored reply, not a new line"
        second = {**line, "session_id": "cs-limit-2"}
        limited = client.post("/v1/conversation/player-turn", json=second)
        long_line = {**second, "player_id": "player:other", "text": "とても長い一行の言葉です。"}
        too_long = client.post("/v1/conversation/player-turn", json=long_line)
    assert limited.status_code == 429 and too_long.status_code == 422
    (tmp_path / "429.json").write_bytes(limited.content)
    (tmp_path / "422.json").write_bytes(too_long.content)

    parsed = json.loads(
        _run(roundtrip, "error", "429", str(tmp_path / "429.json"), limited.headers["Retry-After"])
    )
    assert parsed["type"] == "MachiRateLimitException" and parsed["code"] == "too_many_requests"
    assert parsed["limit"] == "PLAYER_LINES_PER_MINUTE" and not parsed["retryable"]
    assert parsed["retry_after_s"] == float(limited.headers["Retry-After"]) > 2 and parsed["waits"] is False

    parsed = json.loads(_run(roundtrip, "error", "422", str(tmp_path / "422.json")))
    assert parsed["type"] == "MachiApiException" and parsed["status"] == 422 and parsed["limit"] is None
    assert "PLAYER_MAX_CHARS" in parsed["details"]  # what VisitorChat looks for


def _assert_same(original: Any, echoed: Any, where: str) -> None:
    """Every field the server sent survives the C# DTO (numbers as numbers, timestamps as the same instant)."""
    if isinstance(original, dict):
        assert isinstance(echoed, dict), where
        for key, value in original.items():
            if value is None and key not in echoed:
                continue  # an absent optional field reads back as null
            assert key in echoed, f"{where}: {key} lost by the C# DTO"
            _assert_same(value, echoed[key], f"{where}.{key}")
    elif isinstance(original, list):
        assert isinstance(echoed, list) and len(original) == len(echoed), where
        for i, (a, b) in enumerate(zip(original, echoed, strict=True)):
            _assert_same(a, b, f"{where}[{i}]")
    elif isinstance(original, str) and _is_time(original):
        assert _is_time(str(echoed)) and _instant(original) == _instant(str(echoed)), f"{where}: {echoed}"
    elif isinstance(original, float | int) and not isinstance(original, bool):
        assert isinstance(echoed, float | int) and abs(original - echoed) < 1e-9, f"{where}: {echoed}"
    else:
        assert original == echoed, f"{where}: {original!r} != {echoed!r}"


def _is_time(text: str) -> bool:
    return len(text) >= 19 and text[4] == "-" and text[10] == "T"


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
