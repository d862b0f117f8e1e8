"""The council, judge and interview part of unity_protocol/README.md: curl commands and the server's real
replies, made on the same fresh demo town right after the call sequence (rendered by readme.py)."""

from __future__ import annotations

from typing import Any

from backend.protocol.readme_text import SESSION

#: Where the curl examples send their requests: `make serve`'s address.
BASE_URL = "http://127.0.0.1:8000"
#: A markdown reply (the council record) is shown up to this many lines.
MAX_TEXT_LINES = 24

INTRO = f"""
## Council, judge and interview over HTTP

Calls a game makes now and then rather than every frame, as `curl` commands against `make serve`
(`{BASE_URL}`, the demo town) with the replies the server gave, on the same run as the sequence above (its
conversation, memories and reflections). Add `-H 'X-Api-Key: <key>'` when the server has `MACHI_API_KEY`; the
read-only viewer key is refused all of them (`403`: each is a model call or a write), except reading councils.
`MachiClient` has a method for each: `InterviewAsync`, `StartCouncilAsync`, `WaitForCouncilAsync`,
`GetCouncilAsync`, `GetCouncilsAsync`, `GetCouncilRecordAsync`, `JudgeAsync`, `JudgeConversationAsync`.

"""


def _remember_council(reply: Any) -> dict[str, Any]:
    return {"council_id": reply.json()["id"]}


def _drain(client: Any) -> None:
    """The council runs in the background: let it finish before it is read back."""
    client.portal.call(client.app.state.tasks.drain, 60)


WALKTHROUGH: list[dict[str, Any]] = [
    {
        "title": "Interview an agent",
        "why": "The agent answers `question` in character from the memories it calls up (every type, relevance "
        "counting double) and what it knows of anyone the question names: one model call (purpose "
        "`interview`), within `INTERVIEW_DEADLINE_S` (30 s). Nothing it remembers changes: no memory is "
        "written or marked recalled. A failed or late model gives a stock \"I don't remember\" with "
        "`fallback: true`. `day` and `time_of_day` are optional (default: the agent's last report); a "
        "question is 1-500 characters (`422` otherwise), an unknown agent is `404`.",
        "method": "POST", "path": "/v1/agents/hikari/interview", "schema": "InterviewRequest -> InterviewResult",
        "body": {"question": "葵は図書館のことを何か言ってた？", "day": 1, "time_of_day": 10.0},
    },
    {
        "title": "Put a proposal to the council",
        "why": "Only `title` is required. `members` (2-12 agent ids) defaults to the world's council (agents "
        "with a `council_role`; the demo town's sisters 雪乃, 夏海, 春花), `moderator` to the member whose "
        "role is moderator (else the first), `rounds` to 2 (1-5). The answer is `202` at once: the council deliberates in the "
        "background. Not retry-safe: a retry after a lost answer starts a second council.",
        "method": "POST", "path": "/v1/council", "schema": "CouncilCreate -> CouncilAccepted", "status": 202,
        "body": {"title": "公園に図書コーナーを作る", "background": "公園のベンチで本を読む人が増えている。",
                 "expected_effects": "子どもとお年寄りの居場所になる。", "rounds": 1},
        "remember": _remember_council, "after": _drain,
    },
    {
        "title": "Read the council",
        "why": "Poll until `status` is `done` (or `failed`, with `error`), or follow the `council.updated` "
        "event. `record` grows after every step: each round's opinions (`stance`: for, conditional, against; "
        "abstain when a member's call failed, its `opinion` then an in-character sentence with `fallback: true`), the aggregation, the tally, and the moderator's consensus. "
        "`outcome` is adopt, adopt_with_conditions, revise or reconsider. `GET /v1/council?status=done` lists "
        "a world's councils, newest first (CouncilList).",
        "method": "GET", "path": "/v1/council/{council_id}", "schema": "CouncilPublic",
    },
    {
        "title": "The decision record",
        "why": "The same council as a markdown document, for a notice board in the scene or a log.",
        "method": "GET", "path": "/v1/council/{council_id}/record.md", "schema": "text/markdown", "text": True,
    },
    {
        "title": "Judge a stored conversation",
        "why": "One model scores the conversation on `in_character`, `coherence` and `memory_use` (1-10), "
        "seeing both personas and their recent memories; the verdict is kept on the conversation (`judge` in "
        "`GET /v1/conversations/{session_id}`). A judge model that fails twice answers `503 llm_error`: an "
        "evaluation tool, never on the live path, so no score is invented.",
        "method": "POST", "path": f"/v1/conversations/{SESSION}/judge", "schema": "JudgeResult",
    },
    {
        "title": "Judge any text",
        "why": "`content` on the given `criteria` (1-10 each; default `in_character`, `coherence`, "
        "`helpfulness`), with optional `context` and `language`.",
        "method": "POST", "path": "/v1/judge", "schema": "JudgeRequest -> JudgeResult",
        "body": {"content": "ひかり: おはよう、葵ちゃん！今日もカフェで本を読むの？", "criteria": ["in_character", "coherence"],
                 "context": "ひかりは明るいパン屋の娘。"},
    },
]  # fmt: skip
