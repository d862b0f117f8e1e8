"""The in-memory retrieval index: per (world, agent), a contiguous float32 matrix plus parallel arrays.

One query is a matrix-vector product (embedding relevance), a few posting-list lookups counted with
`np.bincount` (keyword relevance), vectorised scoring and a partial sort: no Python loop over memories.
Large indexes multiply an int8 copy of the matrix instead (a quarter of the bytes to stream): per-row codes,
scale and quantisation error (`similarity.quantise`). The copy is made the first time a query asks for it
(`use_int8`: once the index holds INT8_ROWS rows, or a query asks for it with fewer) and kept in step with every append from then on; an index that
never gets that large (the default caps keep an agent near 7,500 memories) never pays for it.

Rows are kept in id order (inserts for one agent are serialised by the index lock and ids only grow), so an
id is found with `np.searchsorted`. Arrays grow by doubling (amortised O(1) append, never a vstack per
insert). Deleted rows are tombstoned; the owner drops the index when too many are dead and it is rebuilt
lazily from the database.

`rev` is the agent's memory revision (memory/cache.py) the index is known to hold everything of; `revs`
per row, the revision its importance was last set at, so a change read from the database before a newer one
of this process's own cannot undo it (`apply`).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from backend.memory import similarity
from backend.memory.models import TYPE_CODES
from backend.memory.retrieval import inverse_sqrt
from backend.memory.selection import Bounded
from backend.text import search_terms

INITIAL_CAPACITY = 64
#: From this many candidates the embedding relevance is pre-selected with the index's int8 copy (a quarter
#: of the float32 matrix's bytes to stream), and an index holding this many rows makes the copy as it grows.
#: Measured on the 2-core VM (bench/retrieval.py --int8-rows 0 against a huge value): at 4-7k rows the two
#: are within noise, the float32 product a little ahead; from 8192 rows (where the float32 product starts
#: paying for a helper thread) int8 is 25-40% faster.
INT8_ROWS = 8192
#: The per-row arrays of the int8 copy, allocated by `AgentIndex.use_int8`.
INT8_ARRAYS = ("codes", "code_scales", "code_errors")
#: The per-row arrays of `AgentIndex`, grown together (the int8 ones once allocated).
ARRAYS = (
    "vectors",
    *INT8_ARRAYS,
    "ids",
    "importance",
    "accessed",
    "types",
    "alive",
    "token_counts",
    "inverse_sqrt_tokens",
    "revs",
    "created",
    "episodes",
    "vectored",
)
#: BM25's term-frequency saturation and length normalisation (the usual values). Terms are counted once per
#: memory (a memory is a sentence or two: a repeated word says little more), so only `B` acts.
BM25_K1 = 1.2
BM25_B = 0.75
#: Two memories in a row belong to one episode when they are of the same type and conversation (a session
#: id: the lines of one talk) and formed at most this many game minutes apart: each is embedded after the one
#: before it (memory/embedding.py), and retrieval lets an episode's memories lend each other relevance.
#: Memories without a session id stand alone.
EPISODE_GAP_MINUTES = 60.0


@dataclass
class IndexRow:
    """What the index keeps of one memory."""

    id: int
    importance: float
    accessed_minutes: float
    type: str
    content: str
    vector: np.ndarray | None  # L2-normalised, or None (treated as zeros: no embedding relevance)
    rev: int = 0  # the revision that last wrote the row (memory/cache.py)
    created_minutes: float | None = None  # game minutes it was formed (None: its access time)
    session: str | None = None  # the conversation it came from, if any
    visitor: bool = False  # it came from a visitor's words (VISITOR_TAG)

    @property
    def created(self) -> float:
        return self.accessed_minutes if self.created_minutes is None else self.created_minutes


def same_episode(before: tuple[str, str | None, float] | None, after: tuple[str, str | None, float]) -> bool:
    """Whether a memory (type, session id, created game minutes) continues the one formed just before it in
    the same conversation."""
    if before is None:
        return False
    kind, session, created = after
    return (
        session is not None
        and kind == before[0]
        and session == before[1]
        and 0.0 <= created - before[2] <= EPISODE_GAP_MINUTES
    )


class AgentIndex:
    """One agent's memories as arrays. Callers hold `lock` around every read or write."""

    def __init__(self, dim: int, capacity: int = INITIAL_CAPACITY) -> None:
        self.dim = dim
        self.size = 0
        self.dead = 0
        self.lock = threading.RLock()
        self.vectors = np.zeros((capacity, dim), dtype=np.float32)
        # The int8 copy: vectors[i] ~= code_scales[i] * codes[i], off by code_errors[i] at most (L2 norm).
        # Empty until `use_int8`.
        self.int8 = False
        self.codes = np.zeros((0, dim), dtype=np.int8)
        self.code_scales = np.zeros(0, dtype=np.float32)
        self.code_errors = np.zeros(0, dtype=np.float32)
        # Bounds every row's norm, and with the int8 copy its codes' (removals leave it high: still a bound).
        self.norm_bound = 0.0
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.importance = np.zeros(capacity, dtype=np.float32)
        self.accessed = np.zeros(capacity, dtype=np.float64)  # game minutes of last access
        self.types = np.zeros(capacity, dtype=np.int8)
        self.alive = np.zeros(capacity, dtype=bool)
        self.token_counts = np.zeros(capacity, dtype=np.int32)
        self.inverse_sqrt_tokens = np.zeros(capacity, dtype=np.float32)  # for keyword relevance
        self.revs = np.zeros(capacity, dtype=np.int64)
        self.created = np.zeros(capacity, dtype=np.float64)  # game minutes it was formed
        self.episodes = np.zeros(capacity, dtype=np.int64)  # episode number (`same_episode`)
        self.vectored = np.zeros(capacity, dtype=bool)  # has a vector of the current embedder
        self.token_total = 0  # the terms of every row appended (BM25's average length)
        #: (type, session, created) of the last row appended: a new row may continue its episode.
        self._last: tuple[str, str | None, float] | None = None
        # Per-row values every query reads, kept with the (size, ...) they were computed for.
        self._lengths: tuple[tuple[int, int], np.ndarray] | None = None
        self._links: tuple[tuple[int, int], np.ndarray] | None = None
        self.rev = 0  # the agent's memory revision held in full (module docstring)
        self.world_rev = 0  # the world's revision (replacements) at load
        #: Each row's text, by position (memories are never edited, and positions never move): a turn's
        #: prompt takes the retrieved texts from here instead of fetching the rows.
        self.contents: list[str] = []
        #: The ids of memories that came from a visitor's words (VISITOR_TAG; memories are never edited).
        self.visitor: set[int] = set()
        #: token -> row positions holding it (array('i') appends in place, read zero-copy by numpy).
        self.postings: dict[str, array[int]] = {}
        self._latest: float | None = 0.0  # newest live access time; None when it must be recomputed

    # --- writes ---
    def append(self, rows: Sequence[IndexRow]) -> None:
        """Add rows whose ids are larger than every id already held."""
        if not rows:
            return
        if self.size and rows[0].id <= self.ids[self.size - 1]:
            raise ValueError("index rows must be appended in increasing id order")
        self._reserve(self.size + len(rows))
        for offset, row in enumerate(rows):
            pos = self.size + offset
            if row.vector is not None:
                self.vectors[pos] = row.vector
                self.vectored[pos] = True
            self.ids[pos] = row.id
            place = (row.type, row.session, row.created)
            episode = self.episodes[pos - 1] if pos else 0
            self.episodes[pos] = episode if same_episode(self._last, place) else episode + 1
            self._last = place
            self.created[pos] = row.created
            self.importance[pos] = row.importance
            self.accessed[pos] = row.accessed_minutes
            self.types[pos] = TYPE_CODES.get(row.type, 0)
            self.alive[pos] = True
            self.revs[pos] = row.rev
            self.contents.append(row.content)
            if row.visitor:
                self.visitor.add(row.id)
            tokens = search_terms(row.content)
            self.token_counts[pos] = len(tokens)
            self.token_total += len(tokens)
            for token in tokens:
                self.postings.setdefault(token, array("i")).append(pos)
        added = slice(self.size, self.size + len(rows))
        self.inverse_sqrt_tokens[added] = inverse_sqrt(self.token_counts[added])
        self.norm_bound = max(self.norm_bound, similarity.norm_bound(self.vectors[added]))
        if self.int8:
            self._quantise(self.size, self.size + len(rows))
        self.size += len(rows)
        if self.size >= INT8_ROWS:
            self.use_int8()
        if self._latest is not None:
            self._latest = max(self._latest, max(row.accessed_minutes for row in rows))

    def use_int8(self) -> None:
        """Make the int8 copy of every held row; appends keep it in step from now on."""
        if self.int8:
            return
        capacity = self.ids.shape[0]
        self.codes = np.zeros((capacity, self.dim), dtype=np.int8)
        self.code_scales = np.zeros(capacity, dtype=np.float32)
        self.code_errors = np.zeros(capacity, dtype=np.float32)
        self.int8 = True
        self._quantise(0, self.size)

    def _quantise(self, start: int, stop: int) -> None:
        for lo in range(start, stop, similarity.QUANTISE_CHUNK):
            hi = min(stop, lo + similarity.QUANTISE_CHUNK)
            codes, scales, errors, norms = similarity.quantise(self.vectors[lo:hi])
            self.codes[lo:hi], self.code_scales[lo:hi], self.code_errors[lo:hi] = codes, scales, errors
            self.norm_bound = max(self.norm_bound, norms)

    def _reserve(self, needed: int) -> None:
        capacity = self.ids.shape[0]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        for name in self._arrays():
            old = getattr(self, name)
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def _arrays(self) -> tuple[str, ...]:
        return ARRAYS if self.int8 else tuple(name for name in ARRAYS if name not in INT8_ARRAYS)

    def positions(self, ids: Iterable[int]) -> np.ndarray:
        """Row positions of the live ids given (unknown or deleted ids are skipped)."""
        wanted = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64)
        held = self.ids[: self.size]
        pos = np.searchsorted(held, wanted)
        inside = pos < self.size
        pos, wanted = pos[inside], wanted[inside]
        found = pos[held[pos] == wanted]  # rows are in id order: a match is exactly where it would go
        return found[self.alive[found]]

    def set_importance(self, ids: Iterable[int], values: Iterable[float], rev: int = 0) -> None:
        """Importance as written at revision `rev`."""
        for memory_id, value in zip(ids, values, strict=True):
            pos = self.positions([memory_id])
            self.importance[pos] = value
            self.revs[pos] = np.maximum(self.revs[pos], rev)

    def apply(self, rows: Sequence[IndexRow]) -> bool:
        """Rows read from the database (in id order), new or changed: new ones appended; a held one takes
        the importance unless this process wrote a newer one, the later access time, and its vector if it had
        none. False when a row is neither (an unknown id below the newest held): the caller reloads."""
        last = int(self.ids[self.size - 1]) if self.size else 0
        held = [row for row in rows if row.id <= last]
        if held:
            ids = np.array([row.id for row in held], dtype=np.int64)
            pos = np.searchsorted(self.ids[: self.size], ids)
            if not np.array_equal(self.ids[pos], ids):
                return False
            for row, at in zip(held, pos.tolist(), strict=True):
                if self.alive[at]:
                    self._update(at, row)
            self._latest = None
        self.append([row for row in rows if row.id > last])
        return True

    def _update(self, pos: int, row: IndexRow) -> None:
        if row.rev > self.revs[pos]:
            self.importance[pos], self.revs[pos] = row.importance, row.rev
        self.accessed[pos] = max(self.accessed[pos], row.accessed_minutes)
        if row.vector is not None and not self.vectored[pos]:
            self._set_vector(pos, row.vector)

    def set_vectors(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Give held rows their vectors (the embed job's): unknown or deleted ids are skipped."""
        for memory_id, vector in zip(ids, vectors, strict=True):
            for pos in self.positions([memory_id]).tolist():
                self._set_vector(pos, vector)

    def _set_vector(self, pos: int, vector: np.ndarray) -> None:
        """One held row's vector, with the norm bound and (once made) the int8 copy kept in step."""
        self.vectors[pos] = vector
        self.vectored[pos] = True
        self.norm_bound = max(self.norm_bound, similarity.norm_bound(self.vectors[pos : pos + 1]))
        if self.int8:
            self._quantise(pos, pos + 1)

    def keep_only(self, live: np.ndarray) -> int:
        """Remove every held id not in `live` (the agent's ids in the database). Returns how many went."""
        held = self.ids[: self.size][self.alive[: self.size]]
        return self.remove(np.setdiff1d(held, live, assume_unique=True))

    def advance(self, rev: int) -> None:
        """This process wrote revision `rev` and applied it here: the index holds it too if it held the one
        before (else a later read of the stamp brings the index up to date)."""
        if self.rev == rev - 1:
            self.rev = rev

    def touch(self, ids: Iterable[int], minutes: float) -> None:
        """Mark as accessed at `minutes` (never moves an access time backwards)."""
        self.touch_rows(self.positions(ids), minutes)

    def touch_rows(self, positions: np.ndarray, minutes: float) -> None:
        """`touch` for row positions already known (e.g. the rows a query just picked)."""
        if positions.size:
            self.accessed[positions] = np.maximum(self.accessed[positions], minutes)
            if self._latest is not None:
                self._latest = max(self._latest, minutes)

    def remove(self, ids: Iterable[int]) -> int:
        pos = self.positions(ids)
        self.alive[pos] = False
        self.dead += int(pos.size)
        if pos.size:
            self._latest = None
        return int(pos.size)

    # --- reads ---
    def count(self, kind: str) -> int:
        """Live rows of one memory type."""
        n = self.size
        return int(np.count_nonzero((self.types[:n] == TYPE_CODES.get(kind, 0)) & self.alive[:n]))

    @property
    def live(self) -> int:
        return self.size - self.dead

    def latest_minutes(self) -> float:
        """The newest access time of a live row (0 when none): a query's "now" when it names no time."""
        if self._latest is None:
            alive = self.alive[: self.size]
            self._latest = float(self.accessed[: self.size][alive].max()) if alive.any() else 0.0
        return self._latest

    def all_live(self, types: Sequence[str] | None, before_id: int | None = None) -> bool:
        """True when every held row is a candidate (nothing deleted, no type filter, no id bound): no mask
        needed."""
        return self.dead == 0 and not types and before_id is None

    def candidates(self, types: Sequence[str] | None = None, before_id: int | None = None) -> np.ndarray:
        """Positions of the live rows, optionally of some types only, and of ids below `before_id` only
        (memories formed before a given moment: ids grow with creation)."""
        mask = self.alive[: self.size]
        if types:
            codes = [TYPE_CODES[t] for t in types if t in TYPE_CODES]
            mask = mask & np.isin(self.types[: self.size], codes)
        if before_id is not None:
            mask = mask & (self.ids[: self.size] < before_id)
        return np.flatnonzero(mask)

    def cosine_all(self, query: np.ndarray) -> np.ndarray:
        """The exact cosine of the query with every held row (`similarity.cosine_rows`): what ranking
        reproduces, whichever approximation it pre-selects with."""
        return similarity.cosine_rows(self.vectors[: self.size], query)

    def cosine_start(self, query: np.ndarray, *, int8: bool) -> Callable[[], Bounded]:
        """Start the approximate cosine of every held row, from the int8 copy or the float32 matrix; the
        returned call gives it as a `Bounded` (module docstring of `similarity`)."""
        vectors = self.vectors[: self.size]
        if not int8:
            return similarity.float32_start(vectors, query, self.norm_bound)
        self.use_int8()
        n = self.size
        return similarity.int8_start(
            vectors, self.codes[:n], self.code_scales[:n], self.code_errors[:n], self.norm_bound, query
        )

    def shared_tokens(self, query_tokens: set[str]) -> np.ndarray:
        """How many of the query's tokens each held row contains (inverted index + bincount)."""
        lists = [self.postings[t] for t in query_tokens if t in self.postings]
        if not lists:
            return np.zeros(self.size, dtype=np.int64)
        hits = np.concatenate([np.frombuffer(p, dtype=np.intc) for p in lists])
        return np.bincount(hits, minlength=self.size)

    def bm25(self, query_terms: set[str]) -> np.ndarray:
        """BM25 of every held row for the query's terms (float64; 0 for a row sharing none). A term's rarity
        (IDF) counts, so a name in every line weighs little and a rare word much."""
        n = self.size
        found = [(self.postings[t]) for t in query_terms if t in self.postings]
        if not found or n == 0:
            return np.zeros(n, dtype=np.float64)
        df = np.array([len(p) for p in found], dtype=np.float64)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        hits = np.concatenate([np.frombuffer(p, dtype=np.intc) for p in found])
        scores = np.bincount(hits, weights=np.repeat(idf, df.astype(np.int64)), minlength=n)
        scores *= self._bm25_lengths()
        return scores

    def _bm25_lengths(self) -> np.ndarray:
        """(k1 + 1) / (1 + k1 * (1 - b + b * length / average length)) per row, kept until rows change."""
        key = (self.size, self.token_total)
        if self._lengths is None or self._lengths[0] != key:
            average = max(self.token_total / max(self.size, 1), 1.0)
            factor = self.token_counts[: self.size].astype(np.float64)
            factor *= BM25_B / average
            factor += 1.0 - BM25_B
            factor *= BM25_K1
            factor += 1.0
            np.divide(BM25_K1 + 1.0, factor, out=factor)
            self._lengths = (key, factor)
        return self._lengths[1]

    def same_as_previous(self) -> np.ndarray:
        """Per held row (bool): it continues the previous row's episode and both are live (kept until rows are
        added or removed)."""
        n = self.size
        key = (n, self.dead)
        if self._links is None or self._links[0] != key:
            out = np.zeros(n, dtype=bool)
            if n > 1:
                alive = self.alive[:n]
                out[1:] = (self.episodes[1:n] == self.episodes[: n - 1]) & alive[1:] & alive[:-1]
            self._links = (key, out)
        return self._links[1]

    def nbytes(self) -> int:
        """Bytes held by the arrays and posting lists (capacity included, Python object overhead not)."""
        arrays = sum(getattr(self, n).nbytes for n in self._arrays())
        return arrays + sum(p.itemsize * len(p) for p in self.postings.values())
