"""Reference Python client for the Machi protocol, and a headless stand-in for the Unity world.

`MachiClient` has the same surface and retry rules as the C# `Machi.Client.MachiClient`;
`HeadlessWorld` drives a server over HTTP exactly as the Unity samples do (see `machi simulate`).
"""

from machi_client.client import (
    PROTOCOL_VERSION,
    MachiApiError,
    MachiClient,
    MachiTransportError,
    RetryPolicy,
)
from machi_client.sse import SseEvent, SseParser

__all__ = [
    "PROTOCOL_VERSION",
    "MachiApiError",
    "MachiClient",
    "MachiTransportError",
    "RetryPolicy",
    "SseEvent",
    "SseParser",
]
