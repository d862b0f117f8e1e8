"""Relationship density: how much of a town knows whom, read from person memory.

The Generative Agents paper measures its town's social network by density: the share of ordered pairs of
agents (A, B) in which A knows B. Here A knows B when A has a person memory of B (seeded by the world's
`relationships`, or made by a conversation). Players and other non-agents do not count, nor do memories of
agents since deleted. The paper's town starts at 0.167 and ends its two days at 0.74.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend.memory.repo import Transaction, relationship_counts


@dataclass(frozen=True)
class Density:
    """`pairs` ordered pairs of the world's `agents` in which the first remembers the second."""

    agents: int
    pairs: int

    @property
    def value(self) -> float:
        """pairs / (agents * (agents - 1)); 0.0 for a world of fewer than two agents."""
        possible = self.agents * (self.agents - 1)
        return self.pairs / possible if possible else 0.0


def relationship_density(session: Transaction, world_id: str) -> Density:
    """The relationship density of `world_id` as it is in the database now."""
    agents, pairs = relationship_counts(session, world_id)
    return Density(agents=agents, pairs=pairs)
