"""The memory concept's settings: what it reads of `Settings`, taken once in create_app."""

from __future__ import annotations

from dataclasses import dataclass, field

from backend.config import Settings
from backend.memory.fused import Fusion
from backend.memory.retrieval import Weights
from backend.memory.timewords import WEEKDAYS_EN

#: Memory types with a cap (`memory_cap_<type>`).
CAPPED_TYPES = ("observation", "reflection", "plan")
#: Each scoring's own weights (WEIGHT_* unset). Fused: relevance is [0, 1] over the candidates and leads;
#: recency and importance move a memory past others about as relevant (bench/memory_quality.py).
DEFAULT_WEIGHTS = {"fused": Weights(0.1, 0.2, 1.0), "seed": Weights(1.0, 1.0, 1.0)}


@dataclass(frozen=True)
class MemorySettings:
    """Retrieval defaults, importance, reflection, hygiene (dedup and caps) and person memory knobs."""

    relevance: str = "hybrid"
    retrieval_k: int = 10
    retrieval_decay: float = 0.99
    weights: Weights = DEFAULT_WEIGHTS["fused"]
    #: None: the seed's scoring (retrieval.py); else fused scoring with these knobs (fused.py).
    fusion: Fusion | None = Fusion()
    day_one_weekday: int = 0
    reflection_threshold: float = 150.0
    importance_provisional: int = 3
    importance_batch_s: float = 5.0
    caps: dict[str, int] = field(default_factory=dict)
    evict_batch: float = 0.05
    evict_protect: int = 8
    dedup: bool = True
    dedup_window_hours: float = 24.0
    dedup_observation_jaccard: float = 0.5
    dedup_reflection_jaccard: float = 0.6
    dedup_min_shared: int = 3
    person_compress_exchanges: int = 20
    person_summary_chars: int = 400

    @classmethod
    def from_settings(cls, s: Settings) -> MemorySettings:
        return cls(
            relevance=s.relevance,
            retrieval_k=s.retrieval_k,
            retrieval_decay=s.retrieval_decay,
            weights=_weights(s),
            fusion=(
                Fusion(
                    half_life_minutes=s.retrieval_half_life_days * 1440.0,
                    shortlist=s.retrieval_shortlist,
                    dense_weight=s.retrieval_dense_weight,
                    lexical_weight=1.0 - s.retrieval_dense_weight,
                    neighbour_weight=s.retrieval_neighbour_weight,
                )
                if s.retrieval_scoring == "fused"
                else None
            ),
            day_one_weekday=WEEKDAYS_EN.index(s.retrieval_day_one_weekday),
            reflection_threshold=s.reflection_threshold,
            importance_provisional=s.importance_provisional,
            importance_batch_s=s.importance_batch_s,
            caps={
                "observation": s.memory_cap_observation,
                "reflection": s.memory_cap_reflection,
                "plan": s.memory_cap_plan,
            },
            evict_batch=s.memory_evict_batch,
            evict_protect=s.memory_evict_protect,
            dedup=s.memory_dedup,
            dedup_window_hours=s.memory_dedup_window_hours,
            dedup_observation_jaccard=s.memory_dedup_observation_jaccard,
            dedup_reflection_jaccard=s.memory_dedup_reflection_jaccard,
            dedup_min_shared=s.memory_dedup_min_shared,
            person_compress_exchanges=s.person_compress_exchanges,
            person_summary_chars=s.person_summary_chars,
        )

    def cap(self, kind: str) -> int | None:
        """The cap of a memory type, or None for a type without one."""
        return self.caps.get(kind)

    def component_weights(self, given: dict[str, float | None] | None = None) -> dict[str, float]:
        """The weight of each component a retrieval reports (the `time` one in fused scoring only)."""
        w = self.weights_with(given)
        out = {"recency": w.recency, "importance": w.importance, "relevance": w.relevance}
        if self.fusion is not None:
            time = (given or {}).get("time")
            out["time"] = self.fusion.time_weight if time is None else float(time)
        return out

    def weights_with(self, given: dict[str, float | None] | None) -> Weights:
        """The retrieval weights: those given, the rest from settings."""
        given = given or {}

        def pick(name: str, default: float) -> float:
            value = given.get(name)
            return default if value is None else float(value)

        w = self.weights
        return Weights(
            pick("recency", w.recency), pick("importance", w.importance), pick("relevance", w.relevance)
        )


def _weights(s: Settings) -> Weights:
    """WEIGHT_* where set, the scoring's own weights for the rest."""
    own = DEFAULT_WEIGHTS[s.retrieval_scoring]
    return Weights(
        own.recency if s.weight_recency is None else s.weight_recency,
        own.importance if s.weight_importance is None else s.weight_importance,
        own.relevance if s.weight_relevance is None else s.weight_relevance,
    )
