"""The visitor rate limits are exact under concurrency, with real API processes on one database: 40 lines at
once from one new visitor get exactly PLAYER_LINES_PER_MINUTE answers, 40 new visitors at once exactly what is
left of WORLD_PLAYER_LINES_PER_MINUTE, the rest 429 naming the limit, never a 5xx; parallel registrations of
one new visitor (PUT /v1/players/{id}) create it once. SQLite (WAL) with two processes on one file, then
PostgreSQL (MACHI_TEST_POSTGRES_URL) with two processes."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from bench.serverproc import ServerProcess
from tests.visitor.helpers import visitor_line

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PER_PLAYER, PER_WORLD = 12, 20
ENV = {"PLAYER_LINES_PER_MINUTE": str(PER_PLAYER), "WORLD_PLAYER_LINES_PER_MINUTE": str(PER_WORLD)}
PARALLEL = 40


async def _at_once(requests: list[tuple[str, str, dict[str, object]]]) -> list[httpx.Response]:
    """Send every (method, url, body) at once; the answers in the same order."""
    async with httpx.AsyncClient(timeout=120) as client:
        return await asyncio.gather(*(client.request(m, url, json=body) for m, url, body in requests))


def _lines(urls: list[str], players: list[str], label: str) -> list[tuple[str, str, dict[str, object]]]:
    """One line per player (a player may repeat), each in a session of its own, round robin over the urls."""
    return [
        ("POST", f"{urls[n % len(urls)]}/v1/conversation/player-turn",
         visitor_line(f"{label}-{n}", f"こんにちは、{n}番目の質問です", player_id=player))
        for n, player in enumerate(players)
    ]  # fmt: skip


def _codes(replies: list[httpx.Response], limit: str) -> Counter[int]:
    for reply in replies:
        assert reply.status_code in (200, 429), reply.text
        if reply.status_code == 429:
            assert reply.json()["error"]["details"]["limit"] == limit
    return Counter(reply.status_code for reply in replies)


def test_parallel_lines_get_exactly_the_limits_across_processes(database_url: str) -> None:
    apis = [ServerProcess(database_url, env=ENV, args=["--no-worker"]) for _ in range(2)]
    try:
        for api in apis:
            api.start()
        urls = [api.url for api in apis]
        one = asyncio.run(_at_once(_lines(urls, ["player:newcomer"] * PARALLEL, "one")))
        assert _codes(one, "PLAYER_LINES_PER_MINUTE") == {200: PER_PLAYER, 429: PARALLEL - PER_PLAYER}
        crowd = [f"player:guest-{n}" for n in range(PARALLEL)]
        many = asyncio.run(_at_once(_lines(urls, crowd, "many")))
        left = PER_WORLD - PER_PLAYER
        assert _codes(many, "WORLD_PLAYER_LINES_PER_MINUTE") == {200: left, 429: PARALLEL - left}

        body = {"display_name": "ゆき", "language": "ja"}
        puts = [("PUT", f"{urls[n % 2]}/v1/players/player:yuki-{n // 20}", body) for n in range(PARALLEL)]
        registered = asyncio.run(_at_once(puts))
        assert Counter(reply.status_code for reply in registered) == {201: 2, 200: PARALLEL - 2}
        shown = httpx.get(f"{urls[0]}/v1/players/player:newcomer", timeout=10).json()
        assert shown["lines"] == PER_PLAYER and shown["registered"] is False
    finally:
        for api in apis:
            api.stop()
