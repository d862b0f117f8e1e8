"""A per-address limit on failed authentications: past AUTH_FAILURE_LIMIT wrong keys (or forged cookies) in
AUTH_FAILURE_WINDOW_S, an address's wrong credentials get `429 too_many_requests` with `Retry-After`.

Only failures count: a request without any credential is not a guess, and a success neither counts nor resets
the count (a game on 127.0.0.1 succeeding all the time would otherwise reset the count of a guesser sharing the
address). A right key is never refused, even from an address over the limit: with Unity and the server on one
machine a hostile local process shares the game's address, and a lock-out would let it cut the game off with a
few wrong keys. Memory stays bounded: at most `limit` times per address, at most MAX_TRACKED_ADDRESSES
addresses, the least recently failing dropped first.

The counts are per process, on purpose (issue 23): with several API processes behind one address a guesser
gets `limit` tries per process per window, still a handful; sharing them would put a database write on every
failed request, which is what a flood of wrong keys would then be aimed at.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import Scope

from backend.config import Settings

log = logging.getLogger(__name__)

#: Addresses remembered at once; past this the one that failed least recently is forgotten.
MAX_TRACKED_ADDRESSES = 10_000


@dataclass
class _Address:
    times: deque[float]  # the last `limit` failures, oldest first
    refusing: bool = False  # its failures get 429 (logged once per refusal, not per request)


class FailureThrottle:
    """Counts failed authentications per client address in a sliding window."""

    def __init__(
        self,
        limit: int,
        window_s: float,
        *,
        max_addresses: int = MAX_TRACKED_ADDRESSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self.max_addresses = max_addresses
        self.clock = clock
        self._addresses: OrderedDict[str, _Address] = OrderedDict()

    @classmethod
    def from_settings(cls, settings: Settings) -> FailureThrottle:
        return cls(settings.auth_failure_limit, settings.auth_failure_window_s)

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def tracked(self) -> int:
        """How many addresses are remembered (at most `max_addresses`)."""
        return len(self._addresses)

    def record_failure(self, address: str) -> int | None:
        """Count one failed authentication from `address`.

        Returns:
            None while the address is within the limit (answer 401); else the whole seconds until it is
            back within it (answer 429 with that Retry-After). Failures past the limit count too, so an
            address that keeps guessing stays refused until it stops for the window.
        """
        if not self.enabled:
            return None
        now = self.clock()
        entry = self._addresses.pop(address, None) or _Address(deque(maxlen=self.limit))
        while entry.times and entry.times[0] <= now - self.window_s:
            entry.times.popleft()
        over = len(entry.times) >= self.limit
        entry.times.append(now)
        self._addresses[address] = entry  # the most recently failing last, so the first is dropped first
        while len(self._addresses) > self.max_addresses:
            self._addresses.popitem(last=False)
        if not over:
            entry.refusing = False
            return None
        wait = max(1, math.ceil(entry.times[0] + self.window_s - now))
        if not entry.refusing:
            entry.refusing = True
            log.warning(
                "%s failed to authenticate more than %d times in %g s: its wrong keys get 429 (retry in %d s)",
                address, self.limit, self.window_s, wait,
            )  # fmt: skip
        return wait


def client_address(scope: Scope) -> str:
    """The client's address: the TCP peer's, or the one a reverse proxy forwarded when the peer is among
    FORWARDED_ALLOW_IPS (uvicorn puts it in the scope; `connection.uvicorn_options`)."""
    client = scope.get("client")
    if isinstance(client, (tuple, list)) and client:
        return str(client[0])
    return "unknown"
