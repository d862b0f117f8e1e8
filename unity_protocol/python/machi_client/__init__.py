"""Reference Python client for the Machi protocol, and a headless stand-in for the Unity world.

`MachiClient` has the same surface and retry rules as the C# `Machi.Client.MachiClient`;
`HeadlessWorld` drives a server over HTTP exactly as the Unity samples do (see `machi simulate`).
"""

from machi_client.client import (
    PLAYER_PREFIX,
    PROTOCOL_VERSION,
    MachiApiError,
    MachiClient,
    MachiRateLimitError,
    MachiTransportError,
    RetryPolicy,
    parse_retry_after,
    player_id,
)
from machi_client.sse import SseEvent, SseParser

__all__ = [
    "PLAYER_PREFIX",
    "PROTOCOL_VERSION",
    "MachiApiError",
    "MachiClient",
    "MachiRateLimitError",
    "MachiTransportError",
    "RetryPolicy",
    "parse_retry_after",
    "player_id",
    "SseEvent",
    "SseParser",
]
