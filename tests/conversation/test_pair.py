"""A session is one pair's conversation: a turn stored for one speaker and target is never another pair's reply.

Whether the other pair asks after the turn is stored or races it (both at the model before either stores), it
gets a 409 naming the stored pair and its own, in the JSON error envelope; nothing of its turn is stored.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.conversation import repo
from backend.conversation.models import Conversation, Turn
from backend.conversation.schemas import TurnRequest
from backend.errors import Conflict
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.conversation.helpers import EMMA, LIAM, add_agents, rows, turn


def _pair_conflict(response: httpx.Response, stored: tuple[str, str], requested: tuple[str, str]) -> None:
    """A 409 in the error envelope whose message and details name both pairs."""
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "conflict"
    assert error["details"]["stored"] == {"agent_id": stored[0], "target_id": stored[1]}
    assert error["details"]["requested"] == {"agent_id": requested[0], "target_id": requested[1]}
    assert all(repr(name) in error["message"] for name in (*stored, *requested))


def test_racing_first_turns_of_two_pairs_give_one_reply_and_one_409(settings: Settings) -> None:
    scripted = ScriptedLLM(seed=0, delay_s=0.3)  # both requests are at the model before either stores
    with make_client(settings, scripted) as client:
        add_agents(client)
        add_agents(client, EMMA, LIAM)
        bodies = [turn("aoi", "hikari", "s-pairs", []), turn("emma", "liam", "s-pairs", [])]
        answers: dict[str, httpx.Response] = {}

        def post(body: dict[str, Any]) -> None:
            answers[body["agent_id"]] = client.post("/v1/conversation/turn", json=body)

        threads = [threading.Thread(target=post, args=(body,)) for body in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        drain(client)
        assert sorted(r.status_code for r in answers.values()) == [200, 409]
        winner = next(r.json() for r in answers.values() if r.status_code == 200)
        pairs = {"aoi": ("aoi", "hikari"), "emma": ("emma", "liam")}
        stored = (winner["speaker_id"], winner["target_id"])
        loser = next(pair for pair in pairs.values() if pair != stored)
        _pair_conflict(answers[loser[0]], stored, loser)
        [only] = rows(client, Turn, session_id="s-pairs")
        assert (only.speaker_id, only.target_id) == stored
        [conv] = rows(client, Conversation, session_id="s-pairs")
        assert (conv.agent_a, conv.agent_b) == stored and conv.turn_count == 1


@pytest.mark.parametrize(
    ("other", "field"),
    [(("aoi", "liam"), "target_id"), (("emma", "liam"), "agent_id"), (("liam", "aoi"), "agent_id")],
)
def test_another_pair_asking_for_a_stored_turn_is_409_naming_both(
    client: TestClient, other: tuple[str, str], field: str
) -> None:
    add_agents(client)
    add_agents(client, EMMA, LIAM)
    first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-who", []))
    assert first.status_code == 200
    drain(client)
    again = client.post("/v1/conversation/turn", json=turn(*other, "s-who", []))
    _pair_conflict(again, ("aoi", "hikari"), other)
    assert again.json()["error"]["details"]["field"] == field
    assert len(rows(client, Turn, session_id="s-who")) == 1


def test_commit_of_another_pair_at_a_stored_index_is_a_conflict(client: TestClient) -> None:
    """The IntegrityError branch of commit_turn (the race's loser) checks the pair, as the lookup does."""
    add_agents(client)
    add_agents(client, EMMA, LIAM)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    base = {"emotion": "happy", "is_conversation_end": False, "end_reason": None, "session_id": "s-commit",
            "turn_index": 0, "fallback": False}  # fmt: skip
    first = TurnRequest(**turn("aoi", "hikari", "s-commit", []))
    reply = {**base, "dialogue": "one", "speaker_id": "aoi", "target_id": "hikari"}
    repo.commit_turn(engine, "default", first, reply, repo.Said("葵: one", "ja"))
    other = TurnRequest(**turn("emma", "liam", "s-commit", []))
    with pytest.raises(Conflict) as refused:
        repo.commit_turn(
            engine, "default", other, {**base, "dialogue": "two", "speaker_id": "emma", "target_id": "liam"},
            repo.Said("Emma: two", "en"),
        )  # fmt: skip
    assert refused.value.details["stored"] == {"agent_id": "aoi", "target_id": "hikari"}
    assert refused.value.details["requested"] == {"agent_id": "emma", "target_id": "liam"}
    [conv] = rows(client, Conversation, session_id="s-commit")
    assert conv.transcript == ["葵: one"]


def test_commit_of_another_pair_at_a_new_index_of_the_session_is_a_conflict(client: TestClient) -> None:
    """A pair whose first look found no conversation (it raced the first turn) cannot write into it later."""
    add_agents(client)
    add_agents(client, EMMA, LIAM)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    base = {"emotion": "happy", "is_conversation_end": False, "end_reason": None, "session_id": "s-next",
            "fallback": False}  # fmt: skip
    first = TurnRequest(**turn("aoi", "hikari", "s-next", []))
    reply = {**base, "turn_index": 0, "dialogue": "one", "speaker_id": "aoi", "target_id": "hikari"}
    repo.commit_turn(engine, "default", first, reply, repo.Said("葵: one", "ja"))
    other = TurnRequest(**turn("emma", "liam", "s-next", ["Liam: hi"]))
    with pytest.raises(Conflict):
        repo.commit_turn(
            engine, "default", other,
            {**base, "turn_index": 1, "dialogue": "two", "speaker_id": "emma", "target_id": "liam"},
            repo.Said("Emma: two", "en"),
        )  # fmt: skip
    assert [t.speaker_id for t in rows(client, Turn, session_id="s-next")] == ["aoi"]


def test_the_partner_without_the_line_it_answers_is_told_its_history_is_behind(client: TestClient) -> None:
    """hikari answers aoi's first line but Unity forgot to append it: the 409 says the history is one line
    short (send all of them), not that another pair needs another session_id."""
    add_agents(client)
    assert client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-short", [])).status_code == 200
    drain(client)
    short = client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-short", []))
    assert short.status_code == 409, short.text
    error = short.json()["error"]
    assert error["details"]["field"] == "history" and error["details"]["transcript_lines"] == 1
    assert "history has 0 lines" in error["message"] and "send all of them" in error["message"]
    assert "another session_id" not in error["message"]
    assert len(rows(client, Turn, session_id="s-short")) == 1
