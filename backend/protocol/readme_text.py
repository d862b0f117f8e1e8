"""The prose and the call sequence of unity_protocol/README.md (rendered by backend/protocol/readme.py)."""

from __future__ import annotations

from typing import Any

SESSION = "aoi-hikari-day1-0001"


def _drain(client: Any) -> None:
    """Let the server finish its after-reply work (memories, reflections) before the next example."""
    client.portal.call(client.app.state.tasks.drain, 30)


HEADER = """# The Machi protocol (version 1)

How a Unity client talks to a Machi server: every call, in the order an agent makes them from start-up to a
finished day. The example replies below are real: `machi protocol readme` runs this sequence against a fresh
server (scripted engine, demo town) and writes this file. Long lists are cut to two items.

- **Schemas**: `schemas/` holds a JSON Schema for every request, reply and event (`machi protocol export`);
  `schemas/index.json` lists them with the call that uses each. Tests fail when they differ from the server.
- **C#**: `csharp/` is a Unity package (`com.machi.client`): DTOs generated from the schemas with quicktype
  (`Runtime/Generated/`), `MachiClient` (UnityWebRequest + UniTask), and the *Agent Town* sample
  (`AgentBrain`, `ConversationTrigger`, `VrmEmotionMapper`). Needs UniTask (`com.cysharp.unitask`, e.g. from
  OpenUPM or its git URL) and Newtonsoft.Json (`com.unity.nuget.newtonsoft-json`); the sample needs UniVRM 1.0.
- **Python**: `python/machi_client/` is a reference client with the same surface and retry rules, and a
  headless stand-in for the Unity scene (`machi simulate --hours 24 --seed 1 --speed max`).

## Rules every call follows

- Headers: `X-Machi-Protocol: 1` (a missing header means 1; another major gets `400 unsupported_protocol`
  naming the versions served), `X-Machi-World: <world>` (optional, default `default`), and the API key as
  `X-Api-Key: <key>` or `Authorization: Bearer <key>` when the server has `MACHI_API_KEY` (without it: `401
  unauthorized`; the read-only `MACHI_VIEWER_KEY` gets `403 forbidden` on every write). The `/v1/events`
  WebSocket takes the same headers, or `?api_key=<key>` where a client cannot set headers. Bodies over
  `MAX_BODY_BYTES` (1 MB) get `413 payload_too_large`.
- Errors are `{"error": {"code", "message", "details"}}`. A 4xx means the request is wrong (the message names
  the field): do not retry it. Network errors, timeouts and 5xx may be retried with backoff; conversation
  turns are retry-safe (the same `session_id` and history length returns the stored reply).
- Times are game time: `day` (1-based) and `time_of_day` in hours (`14.5` = 14:30). Positions are Unity
  world coordinates in metres.
- The agent state machine: `waiting_for_replan` -> (plan/now) -> `moving_to_poi` -> (arrived) ->
  `wandering_in_poi` -> (item ends) -> `waiting_for_replan`; meeting someone -> `talking` -> `cooldown` ->
  `waiting_for_replan`. Report every change.

## The sequence

"""

FOOTER = """
## Ending a day

Nothing special is sent at night: when the agent's last plan item ends, `plan/now` answers
`"status": "sleeping"` with the home point of interest; the agent goes home and waits. On the next `day`,
the first `plan/now` makes that day's plan (built from yesterday's reflections). Conversation reflections
and importance ratings happen on the server after each reply; nothing waits for them.
"""


STEPS: list[dict[str, Any]] = [
    {
        "title": "Check the server",
        "why": "At start-up: is the server up, which protocol does it speak, is the model reachable.",
        "method": "GET", "path": "/health", "schema": "HealthPublic",
    },
    {
        "title": "Load the points of interest",
        "why": "Where agents can go (match them to scene objects by `id`). `PUT /v1/pois/{poi_id}` adds one.",
        "method": "GET", "path": "/v1/pois", "schema": "array of PoiPublic",
    },
    {
        "title": "Load the agents",
        "why": "Who lives in the town, with their last reported state. `PUT /v1/agents/{agent_id}` adds a "
        "character at any time (body: AgentUpsert).",
        "method": "GET", "path": "/v1/agents", "schema": "array of AgentPublic",
    },
    {
        "title": "Report the first state",
        "why": "Every state change is reported (StateReport).",
        "method": "POST", "path": "/v1/agents/aoi/state", "schema": "StateAccepted",
        "body": {"state": "waiting_for_replan", "location_name": "葵の家", "position": {"x": -40, "y": 0, "z": 5},
                 "day": 1, "time_of_day": 9.0},
    },
    {
        "title": "Ask what to do now",
        "why": "Leaving `waiting_for_replan`: the current plan item, the next one, and where to walk. The "
        "day's plan is made on the first ask.",
        "method": "GET", "path": "/v1/agents/aoi/plan/now?day=1&time_of_day=9.0", "schema": "PlanNow",
        "remember": lambda r: {"target": (r.json().get("target_poi") or {}).get("name") or "中央カフェ"},
    },
    {
        "title": "Walk there",
        "why": "`moving_to_poi` while the NavMeshAgent walks.",
        "method": "POST", "path": "/v1/agents/aoi/state", "schema": "StateAccepted",
        "body": {"state": "moving_to_poi", "position": {"x": -30, "y": 0, "z": 8}, "day": 1, "time_of_day": 9.05},
    },
    {
        "title": "Arrive and wander",
        "why": "Arriving at a point of interest (`location_name`) becomes an observation memory.",
        "method": "POST", "path": "/v1/agents/aoi/state", "schema": "StateAccepted",
        "body": {"state": "wandering_in_poi", "location_name": "中央カフェ", "position": {"x": 0.5, "y": 0, "z": 1},
                 "day": 1, "time_of_day": 9.2},
    },
    {
        "title": "Meet someone: start talking",
        "why": "The ConversationTrigger saw Hikari (distance, view angle, line of sight): both report `talking`.",
        "method": "POST", "path": "/v1/agents/aoi/state", "schema": "StateAccepted",
        "body": {"state": "talking", "location_name": "中央カフェ", "day": 1, "time_of_day": 9.3},
    },
    {
        "title": "Take a turn",
        "why": "The speaker's next line. `history` holds the earlier lines as \"Name: line\". The reply's "
        "`emotion` is a VRM 1.0 expression preset; when `is_conversation_end` is true, stop.",
        "method": "POST", "path": "/v1/conversation/turn", "schema": "TurnRequest -> TurnResult",
        "body": {"agent_id": "aoi", "target_id": "hikari", "session_id": SESSION, "location_name": "中央カフェ",
                 "history": [], "time_of_day": 9.3, "day": 1},
        "remember": lambda r: {"first_line": "葵: " + r.json()["dialogue"]},
    },
    {
        "title": "Take a turn, streamed",
        "why": "The same request on the streaming endpoint: `delta` events carry the line as it is written "
        "(append them), `reset` means clear what was shown, `reply` carries the full TurnResult, `error` an "
        "ErrorBody. The partner answers, so speakers alternate.",
        "method": "POST", "path": "/v1/conversation/turn/stream", "schema": "server-sent events",
        "sse": True,
        "body": {"agent_id": "hikari", "target_id": "aoi", "session_id": SESSION, "location_name": "中央カフェ",
                 "history": ["葵: おはようございます、ひかりさん！"], "time_of_day": 9.32, "day": 1},
    },
    {
        "title": "End a conversation from Unity",
        "why": "When the agents walk apart (or something interrupts them) before the server ended the talk. "
        "Idempotent: both get one conversation reflection however often it is reported.",
        "method": "POST", "path": "/v1/conversation/end", "schema": "EndRequest -> EndResult",
        "body": {"session_id": SESSION, "reason": "distance", "day": 1, "time_of_day": 9.4},
        "after": _drain,
    },
    {
        "title": "Cool down",
        "why": "After a conversation the agent does not start another for a while.",
        "method": "POST", "path": "/v1/agents/aoi/state", "schema": "StateAccepted",
        "body": {"state": "cooldown", "location_name": "中央カフェ", "day": 1, "time_of_day": 9.4},
    },
    {
        "title": "Replan after something happened",
        "why": "Optional: keep the past items and plan the rest of the day again, for a reason.",
        "method": "POST", "path": "/v1/agents/aoi/plan", "schema": "PlanRequest -> PlanPublic",
        "body": {"day": 1, "time_of_day": 9.5, "reason": "ひかりに公園の桜を見に行こうと誘われた"},
    },
    {
        "title": "Ask again after the cooldown",
        "why": "Back to `waiting_for_replan`, then plan/now as in step 5.",
        "method": "GET", "path": "/v1/agents/aoi/plan/now?day=1&time_of_day=9.6", "schema": "PlanNow",
    },
    {
        "title": "Read the conversation back",
        "why": "For logs or a UI: participants, game times, end reason, every turn with its emotion.",
        "method": "GET", "path": f"/v1/conversations/{SESSION}", "schema": "ConversationDetail",
    },
    {
        "title": "What does the agent remember?",
        "why": "Memories ranked by recency, importance and relevance to a query (RetrieveRequest).",
        "method": "POST", "path": "/v1/agents/aoi/memories/retrieve", "schema": "RetrieveResponse",
        "body": {"query": "ひかり", "k": 3},
    },
    {
        "title": "Its reflections",
        "why": "`GET /v1/agents/{agent_id}/memories?type=reflection` (also `observation`, `plan`).",
        "method": "GET", "path": "/v1/agents/aoi/memories?type=reflection&limit=2", "schema": "MemoryList",
    },
    {
        "title": "A refused request",
        "why": "A 4xx names the field; never retry it.",
        "method": "POST", "path": "/v1/conversation/turn", "schema": "ErrorBody", "status": 422,
        "body": {"agent_id": "aoi", "target_id": "aoi", "session_id": "x", "history": [], "time_of_day": 25},
    },
]  # fmt: skip
