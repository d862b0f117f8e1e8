"""The prose and the call sequence of unity_protocol/README.md (rendered by backend/protocol/readme.py)."""

from __future__ import annotations

from typing import Any

SESSION = "aoi-hikari-day1-0001"


def _drain(client: Any) -> None:
    """Let the server finish its after-reply work (memories, reflections) before the next example."""
    client.portal.call(client.app.state.tasks.drain, 30)


#: The manifest's example URL of this repository: clearly not a real host, for the reader to replace.
EXAMPLE_REPO = "https://git.example.com/machi.git"
OPENUPM = {"name": "OpenUPM", "url": "https://package.openupm.com", "scopes": ["com.cysharp.unitask"]}
UNITASK_GIT = "https://github.com/Cysharp/UniTask.git?path=src/UniTask/Assets/Plugins/UniTask#2.5.10"
#: The last UniVRM that supports Unity 2021.3 with the `Assets/` paths below.
UNIVRM = "v0.127.2"
UNIVRM_PACKAGES = {
    "com.vrmc.gltf": f"https://github.com/vrm-c/UniVRM.git?path=/Assets/UniGLTF#{UNIVRM}",
    "com.vrmc.vrm": f"https://github.com/vrm-c/UniVRM.git?path=/Assets/VRM10#{UNIVRM}",
}

HEADER = """# The Machi protocol (version 2)

How a Unity client talks to a Machi server: installing the Unity package, setting up the *Agent Town* scene,
C# for the main calls, then every call in the order an agent makes them from start-up to a finished day.
The example replies are real: `machi protocol readme` runs the sequence against a fresh server (scripted
engine, demo town) and writes this file, and takes the C# from the sample's `MachiExamples.cs` and
`MachiEvents.cs`, which CI compiles. Long lists are cut to two items. Version 2 added visitors (players),
groups of up to six and actions; a version-1 client is still served and its requests are unchanged.

- **Schemas**: `schemas/` holds a JSON Schema for every request, reply and event (`machi protocol export`);
  `schemas/index.json` lists them with the call that uses each. Tests fail when they differ from the server.
- **C#**: `csharp/` is a Unity package (`com.machi.client`): DTOs generated from the schemas with quicktype
  (`Runtime/Generated/`), `MachiClient` (UnityWebRequest + UniTask), and the *Agent Town* sample.
- **Python**: `python/machi_client/` is a reference client with the same surface and retry rules, and a
  headless stand-in for the Unity scene (`machi simulate --hours 24 --seed 1 --speed max`).

"""

UNITY = """## Install in Unity

Unity {unity} LTS or newer (`"unity"` in `csharp/package.json`). The package is this repository's
`unity_protocol/csharp` folder (`{name}` {version}); install it from disk or from git.

**From disk** (a clone of this repository on the same machine; nothing to host, and edits to the package show
up at once): *Window > Package Manager > + > Add package from disk...* and pick
`unity_protocol/csharp/package.json`, or write the entry yourself in `Packages/manifest.json`, as a `file:`
path relative to the project's `Packages/` folder (here the clone `machi/` sits beside the Unity project):

{file_entry}
**From git**: merge this into your project's `Packages/manifest.json` (it also brings UniTask from OpenUPM
and UniVRM for the sample; with the disk install, take everything but the `{name}` line):

{manifest}
- **Machi Client** comes from the repository's `unity_protocol/csharp` folder (`?path=`). Replace
  `{repo}` with where you host the repository. The repository has no release tags: to pin a
  version, add `#` and a commit hash (`git rev-parse HEAD`), e.g. `{repo}?path=unity_protocol/csharp#<commit>`;
  without one Unity takes the default branch's latest commit and records it in `Packages/packages-lock.json`.
  Unity needs `git` on its PATH for git packages. Unity also fetches the package's own dependencies,
  UniTask and Newtonsoft.Json; listing them pins their versions.
- **UniTask** (`com.cysharp.unitask`) comes from OpenUPM: that is what the `scopedRegistries` block is for.
  Without OpenUPM, use its git URL instead:
  `{unitask_git}`.
- **Newtonsoft.Json** (`com.unity.nuget.newtonsoft-json`, Json.NET 13) comes from the Unity registry.
- **UniVRM 1.0** (`com.vrmc.gltf` and `com.vrmc.vrm`, from UniVRM's git URLs) is needed by the *Agent Town*
  sample only. {univrm} still supports Unity 2021.3; UniVRM v0.130 and later need 2022.3, and from v0.131
  the paths are `?path=/Packages/UniGLTF` and `?path=/Packages/VRM10`.

Then *Window > Package Manager > Machi Client > Samples > Agent Town > Import*.

## The Agent Town scene

- **Ground**: colliders, and a baked NavMesh (Unity 2021.3: *Window > AI > Navigation > Bake*; 2022.2 and
  later: a `NavMeshSurface` from the AI Navigation package). Each point of interest's `position`
  (`GET /v1/pois`; `PUT /v1/pois/{{poi_id}}` to add your own, in scene coordinates) must be on or next to
  the NavMesh: agents walk there and wander within `wanderRadius` of it.
- **One `Machi` GameObject** with `MachiWorld` (Base Url, Api Key, World Id, and the game clock: Game Minutes
  Per Second, Day, Time Of Day) and `MachiEvents` (Types `emotion.updated`, Agents empty for all).
- **One GameObject per character**, its VRM 1.0 model (`Vrm10Instance`) as a child, with:
  - `AgentBrain` (adds the `NavMeshAgent`, whose turning gives the forward the view angle uses): Agent Id =
    the server's agent id (demo town: `aoi`, `hikari`, ...; `PUT /v1/agents/{{agent_id}}` adds one), Display
    Name empty to read the server's name, World = the `Machi` object.
  - `ConversationTrigger`: Talk Distance, End Distance, View Angle, Eye Height, Stream Turns, Face = the
    character's `VrmEmotionMapper`, and Obstacle Mask = the layers of walls and props that block sight.
    It needs no trigger colliders: each frame it checks distance and view angle to every other trigger and
    casts one eye-to-eye ray on Obstacle Mask, ignoring triggers. Obstacles need colliders on those layers;
    a character's own collider may be on one only on its root (a hit on the partner's root counts as seen).
    Hook a speech bubble to its `LineChanged(agentId, textSoFar)` event.
  - `VrmEmotionMapper`: Vrm = the model's `Vrm10Instance`, Events = the `MachiEvents`, Agent Id = the same id.

Each agent then runs by itself: plan/now, walk, wander, replan; two idle agents who see each other talk,
turn by turn; every state change is reported.

## Calling the server from C#

`MachiClient`'s methods are `async UniTask`, take an optional `CancellationToken` (e.g.
`this.GetCancellationTokenOnDestroy()`), retry network errors, timeouts and 5xx, and throw
`MachiApiException` (4xx: do not retry) or `MachiTransportException` (no answer after the retries).

{snippet_client}
**One turn.** `History` holds the earlier lines, oldest first, as "Name: line", where Name is the speaker's
display name (an agent id is accepted too).

{snippet_turn}
**A streamed turn**: the line arrives in pieces as the model writes it.

{snippet_stream}
**What to do now** (`plan/now`):

{snippet_plan_now}
**Ask an agent** (an interview; the JSON is in "Council, judge and interview over HTTP" below):

{snippet_interview}
**Hold a council** on a proposal: it answers at once (202) and deliberates on the server; wait for it by
polling (or follow the `council.updated` event):

{snippet_council}
**Events.** `ws://<host>/v1/events?types=<a,b>&agents=<ids>` (the same headers as HTTP; `?world=` and
`?api_key=` where a client cannot set headers) sends each event as one JSON text message: `{{"id", "type",
"world_id", "at", "payload"}}`. The package has no WebSocket client of its own; the sample's `MachiEvents`
uses .NET's `System.Net.WebSockets.ClientWebSocket` (not on WebGL: use a WebSocket library that goes
through the browser there):

{snippet_events}
{snippet_events_use}
**Faces.** A turn reply's `emotion` is the VRM 1.0 preset for that line: show it while the line is shown.
Between lines the face is the agent's standing mood, the `vrm_emotion` of `GET /v1/agents/{{agent_id}}/emotion`
and of the `emotion.updated` event. A turn reply carries no other expression (`emotion_state` holds the
mood's values and label). `VrmEmotionMapper.Show(reply)`, `EndLine()` and `Rest(vrmEmotion)` do this.

"""

RULES = """## Rules every call follows

- **Protocol version.** Send `X-Machi-Protocol: 2` (the C# package does: `MachiClientOptions.ProtocolVersion`).
  A missing header means 2, and 1 is still served: version-1 requests are valid version-2 requests, and the
  replies only gained fields. Any other value on a `/v1/` route, another major such as `3` or an unreadable
  one such as `v2`, gets `400 unsupported_protocol` with `details` `{"header", "value", "supported": [1, 2]}`,
  and nothing is done (step 24). `/health`, `/docs` and the dashboard answer whatever the header says, so a
  client can read `protocol_version` from `/health`. Every HTTP answer carries `X-Machi-Protocol: 2`. The
  `/v1/events` WebSocket does not check the header.
- Headers: `X-Machi-World: <world>` (optional, default `default`), and the API key as
  `X-Api-Key: <key>` or `Authorization: Bearer <key>` when the server has `MACHI_API_KEY` (without it: `401
  unauthorized`; past `AUTH_FAILURE_LIMIT` wrong keys from one address within `AUTH_FAILURE_WINDOW_S`, its
  wrong keys get `429 too_many_requests` with `Retry-After`; the read-only `MACHI_VIEWER_KEY` gets `403
  forbidden` on every write). The `/v1/events` WebSocket takes the same headers, or `?api_key=<key>` where a
  client cannot set headers. Bodies over `MAX_BODY_BYTES` (1 MB) get `413 payload_too_large`; a body that
  has not all arrived `HTTP_BODY_TIMEOUT_S` (30 s) after its headers gets `408 request_timeout`; a server at
  its `HTTP_MAX_CONCURRENCY` answers `503 service_unavailable` with `Retry-After` (retry it). At most
  `MAX_EVENT_SOCKETS` (64) event WebSockets are open at once: one more receives an error message
  (`service_unavailable`) and is closed with code 1013 (try again later).
- Errors are `{"error": {"code", "message", "details"}}`, whatever the status (an unexpected failure is `500
  internal_error`). A 4xx means the request is wrong (the message names the field; a bad body or parameter
  lists `{field, message, type}` in `details`, and a body that is not readable JSON (bad UTF-8, nested too
  deeply, a number too long, not JSON) is `400 invalid_json` about the field `body`): do not retry it.
  Network errors, timeouts and 5xx may be retried with backoff; conversation turns are retry-safe (the same
  `session_id`, history length, speaker and target return the stored reply; another pair in that session
  gets `409 conflict` naming both pairs; a `player-turn` retry resends the same `text`, and other text with
  the same history is `409 conflict` naming `text`).
- Bodies are JSON objects sent with `Content-Type: application/json` (without it, e.g. `UnityWebRequest.Post
  (url, string)` or plain `curl -d`, the body is read as text: `422` about `body` saying to send the
  header). Keys are snake_case as in the schemas: a camelCase or PascalCase spelling of a field (`agentId`,
  `TimeOfDay`) is a `422` naming the key sent and the key meant.
- Ids you choose (`X-Machi-World`, agent and point-of-interest ids, `session_id`) are 1-64 characters (a
  `session_id` 1-128) of ASCII letters, digits, `_`, `-` and `.`, not only dots (`aoi`,
  `aoi-hikari-day1-0001`): they go into URL paths as they are. Anything else is a `422` naming
  the character, e.g. `a/b` or `会話1`.
- A conversation's transcript is the server's. A turn's `history` holds every line the conversation has
  so far, oldest first, each a string `"Name: line"` (one that stops short, e.g. without the partner's last
  line, is `409 conflict` naming `history`; a `player-turn` takes at most 63, its visitor's line being the
  64th). A line that differs from
  the stored one is answered from the stored line, which stays: the reply's `history_fixes` lists each
  (`index`, `line`) for you to copy into your history. Lines past the stored transcript are yours (an opener
  you scripted, a player's line) and are stored once, as sent. Every line is one line: line breaks become
  spaces.
- Times are game time: `day` (1-based) and `time_of_day` in hours (`14.5` = 14:30; the string `"14:30"` is
  read the same). Positions are Unity world coordinates in metres.
- `plan/now` answers within `PLAN_DEADLINE_S` (10 s). On a day's first ask the model makes the day's plan;
  one not ready by then is answered from a stored fallback plan (`"source": "fallback"`, `"pending": true`),
  and the model's plan replaces it when it arrives: the `plan.updated` event (its `source` and `version`
  say which) tells you to ask `plan/now` again. Asking again meanwhile costs nothing (the model's work is
  not repeated). `POST /plan` waits for the model (bounded by its own timeouts). With the read-only viewer
  key, a day without a plan is `403 forbidden` naming the write (`POST /v1/agents/{agent_id}/plan`): a
  GET never makes anything for it.
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
        "why": "At start-up: is the server up, which protocol does it speak, is the model reachable "
        "(`llm_reachable`: the latest real call's outcome, or the provider check run when the model is idle; "
        "`llm_health` has the recent calls' failure share and the last error). It never waits on the model.",
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
        "title": "Declare the gestures",
        "why": "The names your animator can play, for `gesture` actions (`GET /v1/world/actions` reads the "
        "vocabulary; until a world declares its gestures, a default list is used).",
        "method": "PUT", "path": "/v1/world/gestures", "schema": "GesturesUpdate -> WorldActions",
        "body": {"gestures": ["wave", "bow", "nod", "laugh"]},
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
        "day's plan is made on the first ask, which answers within `PLAN_DEADLINE_S` (10 s): a plan the model "
        "has not made by then is answered from a stored fallback plan (`\"source\": \"fallback\"`, "
        "`\"pending\": true`); walk by it, and ask again on the `plan.updated` event that brings the model's.",
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
        "why": "The ConversationTrigger saw Hikari (distance, view angle, line of sight): both report `talking`, "
        "each naming the other as `partner_id` (optional: a server on a model that reads prompts ahead then "
        "prepares both opening lines while the two turn to face each other).",
        "method": "POST", "path": "/v1/agents/aoi/state", "schema": "StateAccepted",
        "body": {"state": "talking", "partner_id": "hikari", "location_name": "中央カフェ", "day": 1,
                 "time_of_day": 9.3},
    },
    {
        "title": "Take a turn",
        "why": "The speaker's next line. `history` holds the earlier lines, oldest first, as \"Name: line\", "
        "where Name is the speaker's display name (an agent id is accepted too). The reply's `emotion` is the "
        "VRM 1.0 expression preset for this line; when `is_conversation_end` is true, stop.",
        "method": "POST", "path": "/v1/conversation/turn", "schema": "TurnRequest -> TurnResult",
        "body": {"agent_id": "aoi", "target_id": "hikari", "session_id": SESSION, "location_name": "中央カフェ",
                 "history": [], "time_of_day": 9.3, "day": 1},
        "remember": lambda r: {"first_line": "葵: " + r.json()["dialogue"]},
    },
    {
        "title": "Take a turn, streamed",
        "why": "The same request on the streaming endpoint: `delta` events carry the line as it is written "
        "(append them; they are already cleaned of control characters, terminal escapes and line breaks, like the final "
        "`dialogue`), `reset` means clear what was shown, `reply` carries the full TurnResult, `error` an "
        "ErrorBody. The partner answers, so speakers alternate.",
        "method": "POST", "path": "/v1/conversation/turn/stream", "schema": "server-sent events",
        "sse": True,
        "body": lambda seen: {"agent_id": "hikari", "target_id": "aoi", "session_id": SESSION,
                              "location_name": "中央カフェ", "history": [seen["first_line"]], "time_of_day": 9.32,
                              "day": 1},
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
        "title": "Report what an action did",
        "why": "A turn reply may carry `actions` (AgentAction) to perform: walk somewhere, follow, give, a "
        "gesture. Report each outcome (`done`, `failed`, `interrupted`): the agent remembers it.",
        "method": "POST", "path": "/v1/agents/aoi/action-result", "schema": "ActionResult -> ActionResultAccepted",
        "body": {"action": {"type": "give", "target": "hikari", "item": "本"}, "outcome": "done",
                 "session_id": SESSION, "day": 1, "time_of_day": 9.4},
        "status": 201,
    },
    {
        "title": "Register a visitor",
        "why": "A person at the booth (a player, not an agent): `player:` and an id. Optional: a visitor "
        "Unity never registered is named after their id. Characters remember visitors by this id.",
        "method": "PUT", "path": "/v1/players/player:guest-0042", "schema": "PlayerUpsert -> PlayerPublic",
        "body": {"display_name": "ユキ", "language": "ja"}, "status": 201,
    },
    {
        "title": "A visitor talks to an agent",
        "why": "The visitor's typed (or transcribed) line and the agent's reply in one call; `/stream` streams "
        "the reply. The text is untrusted: at most PLAYER_MAX_CHARS (422 past it), rate-limited per visitor and "
        "world (429 naming the limit, with Retry-After), checked by moderation (a held-back line gets an "
        "in-character deflection: `player_blocked`, `deflected`). Put `player_line`, then the reply's line, "
        "into your history; `next_speaker` says who speaks next.",
        "method": "POST", "path": "/v1/conversation/player-turn",
        "schema": "PlayerTurnRequest -> PlayerTurnResult",
        "body": {"session_id": "visit-0042-1", "player_id": "player:guest-0042", "agent_id": "aoi",
                 "text": "こんにちは！おすすめの本はありますか？", "location_name": "中央カフェ", "history": [],
                 "time_of_day": 9.45, "day": 1},
    },
    {
        "title": "Three talk together",
        "why": "A group: the same turn with `participants` (2-6 agents and players, the same list on every "
        "turn; add an id to let someone join). `agent_id` speaks to `target_id`; ask the reply's "
        "`next_speaker` next. A goodbye removes only its speaker (`left`); the talk ends when fewer than two "
        "remain.",
        "method": "POST", "path": "/v1/conversation/turn", "schema": "TurnRequest -> TurnResult",
        "body": {"agent_id": "hikari", "target_id": "ren", "session_id": "cafe-group-1",
                 "participants": ["hikari", "ren", "aoi"], "location_name": "中央カフェ", "history": [],
                 "time_of_day": 9.5, "day": 1},
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
        "why": "Back to `waiting_for_replan`, then plan/now as in step 6.",
        "method": "GET", "path": "/v1/agents/aoi/plan/now?day=1&time_of_day=9.6", "schema": "PlanNow",
    },
    {
        "title": "Read the conversation back",
        "why": "For logs or a UI: participants, game times, end reason, every turn with its emotion.",
        "method": "GET", "path": f"/v1/conversations/{SESSION}", "schema": "ConversationDetail",
    },
    {
        "title": "What does the agent remember?",
        "why": "Memories ranked for a query, relevance first (RetrieveRequest): each score is the sum of its "
        "components (relevance, recency, importance, and time: formed on the days the query names) times "
        "`weights`. `touch: false` looks without marking them recalled (a debug view); leave it out when the "
        "character really remembers.",
        "method": "POST", "path": "/v1/agents/aoi/memories/retrieve", "schema": "RetrieveResponse",
        "body": {"query": "今日ひかりと何を話した？", "k": 3, "touch": False},
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
    {
        "title": "A client of another protocol version",
        "why": "A `/v1/` request whose `X-Machi-Protocol` major the server does not serve is refused before "
        "anything is done; `details.supported` lists the majors it serves. Update the package (or run a "
        "matching server); `/health` answers any version.",
        "method": "GET", "path": "/v1/agents", "schema": "ErrorBody", "status": 400,
        "headers": {"X-Machi-Protocol": "3"},
    },
]  # fmt: skip
