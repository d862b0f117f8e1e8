"""Proxy headers are believed only from FORWARDED_ALLOW_IPS (default: no one's), in the real server: with the
default, wrong keys sent with forged X-Forwarded-For addresses from one client still reach AUTH_FAILURE_LIMIT;
with the client's address listed (a proxy on the same machine), each forwarded address is counted on its own."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from backend.security.connection import uvicorn_options
from bench.serverproc import ServerProcess

pytestmark = pytest.mark.slow

LIMIT = 10
ENV = {"MACHI_API_KEY": "right-key-0123456789", "AUTH_FAILURE_LIMIT": str(LIMIT), "LOAD_DEMO_WORLD": "false"}


def _guesses(url: str, forwarded_for: list[str]) -> list[int]:
    """A wrong key per address in `forwarded_for`, each sent as X-Forwarded-For; the status codes."""
    with httpx.Client(base_url=url, timeout=10) as client:
        return [
            client.get(
                "/v1/agents", headers={"X-Api-Key": f"guess-{n}", "X-Forwarded-For": address}
            ).status_code
            for n, address in enumerate(forwarded_for)
        ]


def _serve(tmp_path: Path, **env: str) -> ServerProcess:
    server = ServerProcess(tmp_path / "machi.db", env={**ENV, **env})
    server.start()
    return server


def test_forged_forwarded_addresses_do_not_dodge_the_lockout_by_default(tmp_path: Path) -> None:
    server = _serve(tmp_path)
    try:
        codes = _guesses(server.url, [f"203.0.113.{n}" for n in range(40)])
    finally:
        server.stop()
    assert codes == [401] * LIMIT + [429] * (40 - LIMIT)  # all counted against 127.0.0.1


def test_a_listed_proxy_s_forwarded_address_is_the_client_s(tmp_path: Path) -> None:
    server = _serve(tmp_path, FORWARDED_ALLOW_IPS="127.0.0.1")
    try:
        spread = _guesses(server.url, [f"203.0.113.{n}" for n in range(40)])
        one = _guesses(server.url, ["198.51.100.7"] * (LIMIT + 1))
    finally:
        server.stop()
    assert spread == [401] * 40  # each forwarded address has its own count
    assert one == [401] * LIMIT + [429]  # and one forwarded address reaches the limit


def test_uvicorn_believes_proxy_headers_only_from_the_setting() -> None:
    default = Settings(_env_file=None)  # type: ignore[call-arg]
    assert default.forwarded_allow_ips == "" and uvicorn_options(default)["proxy_headers"] is False
    listed = Settings(_env_file=None, forwarded_allow_ips=" 127.0.0.1, 10.0.0.0/8 ,::1")  # type: ignore[call-arg]
    options = uvicorn_options(listed)
    assert options["proxy_headers"] is True and options["forwarded_allow_ips"] == "127.0.0.1,10.0.0.0/8,::1"
    with pytest.raises(ValueError, match="FORWARDED_ALLOW_IPS: 'proxy.local' is not an IP address"):
        Settings(_env_file=None, forwarded_allow_ips="proxy.local")  # type: ignore[call-arg]
