"""The one rule for the ids a client chooses: worlds, agents, points of interest and conversation sessions.

An id is ASCII letters, digits, `_`, `-` and `.`, and not only dots; at most 64 characters (a session id 128).
Ids travel in URL paths (`/v1/agents/{agent_id}`, `/v1/conversations/{session_id}`) and headers: these
characters need no escaping and come back as the same string, where `/`, `%`, `?`, `#`, spaces, non-ASCII
letters and the path segments `.` and `..` do not (an id `a/b` was stored, then its URL matched no route).

A visitor (a player: a person at the booth, not an agent) is `player:` and an id (`player:guest-0042`); the
colon needs no escaping in a URL path either. Agents can never take such an id, so a participant list tells
the two apart by the prefix alone (`is_player`).

Server-made ids (council records, memories, jobs, model calls) are the server's own and need no rule here.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints
from pydantic_core import PydanticCustomError

from backend.errors import InvalidInput

#: What an id may hold, as a JSON Schema pattern (also shown in every schema that takes an id).
ID_PATTERN = r"^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$"
#: The rule in words, for error messages and documentation.
ID_RULE = "letters A-Z a-z, digits 0-9, '_', '-' and '.' (not only dots)"
#: The world a request names when it names none (one server, one town, as a single Unity game runs it).
DEFAULT_WORLD = "default"
MAX_ID_CHARS = 64
MAX_SESSION_ID_CHARS = 128
_ID = re.compile(ID_PATTERN)
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def id_problem(value: str, max_chars: int = MAX_ID_CHARS) -> str | None:
    """Why `value` is no id, in words a Unity developer can act on; None when it is one."""
    rule = f"an id is 1-{max_chars} characters of {ID_RULE}, e.g. 'aoi' or 'aoi-hikari-day1-0001'"
    if not value:
        return f"it is empty; {rule}"
    if len(value) > max_chars:
        return f"it has {len(value)} characters; {rule}"
    if _ID.match(value):
        return None
    bad = sorted({char for char in value if char not in _ALLOWED})
    shown = ", ".join(repr(char) for char in bad[:5]) + (" ..." if len(bad) > 5 else "")
    what = f"has {shown}" if bad else "is only dots"
    return f"{value[:80]!r} {what}; {rule}"


def require_id(value: str, field: str, max_chars: int = MAX_ID_CHARS) -> str:
    """`value` when it is an id.

    Raises:
        InvalidInput: naming `field` and what is wrong with the value (a 422).
    """
    problem = id_problem(value, max_chars)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}", details={"field": field, "value": value[:80]})
    return value


def _checked(max_chars: int) -> AfterValidator:
    def check(value: str) -> str:
        problem = id_problem(value, max_chars)
        if problem is not None:
            # The message goes in the context: a brace in the value must not read as a template field.
            raise PydanticCustomError("invalid_id", "{problem}", {"problem": problem})
        return value

    return AfterValidator(check)


#: An agent, point of interest or world id (request bodies, path parameters, query parameters).
Id = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_ID_CHARS),
    _checked(MAX_ID_CHARS),
    Field(json_schema_extra={"pattern": ID_PATTERN}),
]
#: A stored conversation's session id, looked up (read, end, judge): bounded, not ruled, so a conversation an
#: earlier version stored under another id (they took any) stays reachable. Unity chooses ids by `SessionId`.
StoredSessionId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SESSION_ID_CHARS)]
#: A conversation's session id, chosen by Unity when a conversation starts.
SessionId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_SESSION_ID_CHARS),
    _checked(MAX_SESSION_ID_CHARS),
    Field(json_schema_extra={"pattern": ID_PATTERN}),
]


#: What starts every player id (a visitor talking with the characters): `player:` and an id.
PLAYER_PREFIX = "player:"
#: A player id as a JSON Schema pattern.
PLAYER_PATTERN = r"^player:[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$"
#: An agent or a player: what a conversation's participants may be.
PARTICIPANT_PATTERN = r"^(player:)?[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$"


def is_player(participant_id: str) -> bool:
    """Whether a participant id names a player (a visitor), not an agent."""
    return participant_id.startswith(PLAYER_PREFIX)


def player_id(value: str) -> str:
    """A player id from `value`, with or without its `player:` prefix.

    Raises:
        InvalidInput: what follows the prefix is no id (a 422 naming `player_id`).
    """
    bare = value[len(PLAYER_PREFIX) :] if is_player(value) else value
    require_id(bare, "player_id", MAX_ID_CHARS - len(PLAYER_PREFIX))
    return PLAYER_PREFIX + bare


def _participant(value: str) -> str:
    if is_player(value):
        bare = value[len(PLAYER_PREFIX) :]
        problem = id_problem(bare, MAX_ID_CHARS - len(PLAYER_PREFIX))
        if problem is not None:
            raise PydanticCustomError("invalid_id", "{problem}", {"problem": f"after 'player:', {problem}"})
        return value
    problem = id_problem(value)
    if problem is not None:
        raise PydanticCustomError("invalid_id", "{problem}", {"problem": problem})
    return value


#: An agent id, or a player id (`player:` + an id): a conversation participant.
ParticipantId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_ID_CHARS),
    AfterValidator(_participant),
    Field(json_schema_extra={"pattern": PARTICIPANT_PATTERN}),
]
