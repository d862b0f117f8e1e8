"""Who is in a conversation, who leaves it and who speaks next: the rules for groups (2-6 participants).

A conversation's participants are agents and players (visitors), in the order they joined. With two, the
end rules of rules.py hold unchanged (either one's goodbye ends it). With three or more (and in a group that
has shrunk to two), a goodbye removes only its speaker: the line "leaves" (`left` in the reply) and the others talk on; the conversation ends when
fewer than two remain, at MAX_TURNS x (agents - 1) lines (PLAYER_MAX_TURNS with a visitor), or when Unity
reports the end. A goodbye said back to someone who just left is a reply to them, not a leaving.

Who speaks next (`next_speaker`) is a rule, not a second model call: a participant the line names; with
two left, the other one; the one addressed, when the line was a goodbye or nobody has waited a whole
round without speaking; otherwise the one who has waited longest.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from backend.conversation import rules
from backend.ids import is_player


@dataclass(frozen=True)
class Leaving:
    """What a line does to the group: who left with it, and the end reason if it ended the conversation."""

    left: list[str]
    end_reason: str | None


def active(members: Sequence[str], left: Sequence[str]) -> list[str]:
    """The participants still in the conversation, in the order they joined."""
    gone = set(left)
    return [member for member in members if member not in gone]


def listeners(members: Sequence[str], left: Sequence[str], speaker: str) -> list[str]:
    """Who hears a line in a group: everyone still in it but its speaker. Empty for a conversation of two,
    whose line the partner alone hears (the observation job's default: conversation/jobs.py)."""
    if len(members) < 3:
        return []
    return [member for member in active(members, left) if member != speaker]


def max_lines(members: Sequence[str], max_turns: int, player_max_turns: int) -> int:
    """A conversation's line limit: MAX_TURNS for two agents, x (agents - 1) for a group of agents,
    PLAYER_MAX_TURNS (at least that) when a visitor takes part."""
    agents = sum(1 for member in members if not is_player(member))
    limit = max_turns * max(1, agents - 1)
    return max(limit, player_max_turns) if any(is_player(m) for m in members) else limit


def leaving(
    *,
    speaker: str,
    target: str,
    members: Sequence[str],
    left: Sequence[str],
    line: str,
    model_flag: bool,
    turn_count: int,
    limit: int,
    phrases: Sequence[str],
) -> Leaving:
    """What the speaker's new line does in a group of three or more still talking (see the module
    docstring); `turn_count` counts the conversation's lines with this one."""
    now = active(members, left)
    if turn_count >= limit:
        return Leaving([], "max_turns")
    if target in left:  # the one addressed just left: a goodbye back (or the model's end flag) is no leaving
        return Leaving([], None)
    said = rules.has_farewell(line, phrases, opening=turn_count == 1)
    if said or (model_flag and turn_count >= rules.MODEL_END_FROM_LINE):
        remaining = [member for member in now if member != speaker]
        return Leaving([speaker], "farewell" if len(remaining) < 2 else None)
    return Leaving([], None)


def speakers(transcript: Sequence[str], names: Mapping[str, str]) -> list[str | None]:
    """Who said each transcript line (by the display name before its colon), None where nobody known."""
    by_name = {_fold(name): member for member, name in names.items()}
    out: list[str | None] = []
    for line in transcript:
        head = line[: len(line) - len(rules.line_text(line))].rstrip().rstrip(":：")
        out.append(by_name.get(_fold(head)))
    return out


def next_speaker(
    *,
    speaker: str,
    target: str,
    line: str,
    still: Sequence[str],
    names: Mapping[str, str],
    spoken: Sequence[str | None],
    leaving: bool = False,
) -> str | None:
    """Who should speak after `speaker`'s `line` among those `still` in the conversation (see the module
    docstring); `spoken` is who said each earlier line, this one included. A `leaving` speaker's goodbye
    is answered by the one it was said to."""
    candidates = [member for member in still if member != speaker]
    if not candidates:
        return None
    if leaving and target in candidates:
        return target
    named = _named(line, candidates, names)
    if named is not None:
        return named
    if len(candidates) == 1:
        return candidates[0]
    waited = {member: _waited(member, spoken) for member in candidates}
    longest = max(candidates, key=lambda member: waited[member])
    if target in candidates and waited[longest] < len(still):
        return target
    return longest


def _waited(member: str, spoken: Sequence[str | None]) -> int:
    """Lines since `member` last spoke (never: all of them and one more)."""
    for back, who in enumerate(reversed(spoken)):
        if who == member:
            return back
    return len(spoken) + 1


def _named(line: str, candidates: Sequence[str], names: Mapping[str, str]) -> str | None:
    """The candidate whose name comes first in the line, if any is named."""
    text, found = _fold(line), []
    for member in candidates:
        name = _fold(names.get(member, ""))
        at = text.find(name) if name else -1
        if at >= 0:
            found.append((at, member))
    return min(found)[1] if found else None


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()
