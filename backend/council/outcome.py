"""The stance tally, the outcome rule and the stopping rule: computed in code, never by the model.

Stances are `for`, `conditional`, `against`, and `abstain` (a member whose model call failed; the model can
never answer `abstain`). Abstentions are counted in the tally but excluded from every vote below: an
abstaining member neither supports nor blocks a proposal.

Outcome, from the final round's stances (`decide_outcome`), first rule that applies:
1. every voting member is `for`                               -> `adopt`
2. every voting member is `against`                           -> `reconsider`
3. `for` + `conditional` are more than half of the votes and
   at least one supporting member stated a condition          -> `adopt_with_conditions`
4. otherwise (a split, a majority against, a bare majority
   for with no condition that answers the dissent, or nobody
   able to vote)                                              -> `another_round` while rounds remain,
                                                                 else `revise`

Stopping (`should_continue`): after each round the council goes on while rounds remain, unless every
member took the same stance (early stop); a unanimous round still goes on when its outcome is
`another_round` (all `conditional` but nobody named a condition).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

FOR, CONDITIONAL, AGAINST, ABSTAIN = "for", "conditional", "against", "abstain"
STANCES = (FOR, CONDITIONAL, AGAINST, ABSTAIN)

ADOPT = "adopt"
ADOPT_WITH_CONDITIONS = "adopt_with_conditions"
REVISE = "revise"
RECONSIDER = "reconsider"
ANOTHER_ROUND = "another_round"
OUTCOMES = (ADOPT, ADOPT_WITH_CONDITIONS, REVISE, RECONSIDER, ANOTHER_ROUND)


def tally(stances: Iterable[str]) -> dict[str, int]:
    """Exact counts of each stance, every key present (abstain included)."""
    counts = dict.fromkeys(STANCES, 0)
    for stance in stances:
        if stance not in counts:
            raise ValueError(f"unknown stance {stance!r}")
        counts[stance] += 1
    return counts


def unanimous(stances: Sequence[str]) -> bool:
    """True when every member took the same stance and nobody abstained."""
    return bool(stances) and len(set(stances)) == 1 and stances[0] != ABSTAIN


def decide_outcome(stances: Sequence[str], conditions: Sequence[str], rounds_left: int = 0) -> str:
    """The council's outcome (see the module docstring for the rule).

    Args:
        stances: the final stance of every member, abstentions included.
        conditions: the conditions stated by members whose stance is for or conditional.
        rounds_left: rounds the council may still hold; a `revise` becomes `another_round` while any remain.

    Returns:
        One of `adopt`, `reconsider`, `adopt_with_conditions`, `another_round`, `revise`.
    """
    votes = [s for s in stances if s != ABSTAIN]
    counts = tally(votes)
    if votes and counts[FOR] == len(votes):
        return ADOPT
    if votes and counts[AGAINST] == len(votes):
        return RECONSIDER
    supporting = counts[FOR] + counts[CONDITIONAL]
    if votes and supporting * 2 > len(votes) and any(c.strip() for c in conditions):
        return ADOPT_WITH_CONDITIONS
    return ANOTHER_ROUND if rounds_left > 0 else REVISE


def should_continue(stances: Sequence[str], outcome: str, rounds_left: int) -> bool:
    """Whether to hold another round after one that ended with `stances` and `outcome`."""
    if rounds_left <= 0:
        return False
    return not unanimous(stances) or outcome == ANOTHER_ROUND


def supporting_conditions(opinions: Iterable[dict[str, object]]) -> list[str]:
    """The distinct conditions stated by members who support the proposal (for or conditional), in order."""
    seen: dict[str, None] = {}
    for entry in opinions:
        if entry.get("stance") in (FOR, CONDITIONAL):
            for condition in entry.get("conditions") or []:  # type: ignore[attr-defined]
                text = str(condition).strip()
                if text:
                    seen.setdefault(text, None)
    return list(seen)


#: How each outcome is written in records and memories.
OUTCOME_WORDS = {
    "ja": {
        ADOPT: "採択",
        ADOPT_WITH_CONDITIONS: "条件付き採択",
        REVISE: "修正のうえ再提案",
        RECONSIDER: "再考",
        ANOTHER_ROUND: "再審議",
    },
    "en": {
        ADOPT: "adopt",
        ADOPT_WITH_CONDITIONS: "adopt with conditions",
        REVISE: "revise",
        RECONSIDER: "reconsider",
        ANOTHER_ROUND: "another round",
    },
}
