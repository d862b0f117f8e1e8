"""A KV cache of prompts for the in-process llama.cpp model (`LLAMACPP_PREFIX_CACHE_MB`).

Most of a turn's time to its first streamed word is reading the prompt. llama.cpp skips what the previous
call shares with the next one, but only the previous call: a background call in between (a rating, a
reflection, the partner's turn) replaces the context, and the next turn reads its whole prompt again.

This cache keeps llama.cpp per-sequence states (keys and values, no logits), keyed by the tokens they hold,
least recently used out first past a byte budget, at two levels:
- a prompt's **stable prefix**, up to the end of its first message (the speaker's persona and rules, the
  same on every turn of that speaker): evaluated on its own the first time and kept;
- the **whole context of each live turn** once it is answered (prompt and reply). The turn prompt puts what
  stays the same over a conversation first and what changes each turn last (conversation/prompts.py), so the
  speaker's next turn shares most of it: the partner, its standing memories, the history so far;
- a prompt **read ahead** (`LlamaCppLLM.prefill`, the `stable` text then being the prompt up to the end of
  its history): the partner's next turn, read while Unity shows the line, so that turn reads only its tail.
Before a call evaluates, the entry sharing the longest prefix with its tokens is restored when that is more
than the context already holds, and llama.cpp reads only the rest. Everything runs in the llama.cpp worker
thread (`_Engine`), one call at a time.
"""

from __future__ import annotations

import collections
import ctypes
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: A prefix shorter than this many tokens is not worth a cache entry (restoring costs about as much).
MIN_PREFIX_TOKENS = 32


class PrefixCache:
    """KV states of prompt prefixes and answered turns, keyed by their tokens, bounded by `capacity_bytes`."""

    def __init__(self, llama_cpp: Any, capacity_bytes: int) -> None:
        self.lib = llama_cpp  # the llama_cpp module (its low-level state functions)
        self.capacity = capacity_bytes
        self.entries: collections.OrderedDict[tuple[int, ...], bytes] = collections.OrderedDict()
        self.size = 0
        self.hits = self.misses = self.kept = 0

    def prepare(self, llama: Any, tokens: Sequence[int], stable: str | None) -> None:
        """Before `llama.generate(tokens)`: restore the entry sharing the longest prefix with `tokens` when it
        shares more than the context; then, when the context still lacks the stable prefix (the tokens up to
        the end of the text `stable`), evaluate that and keep it."""
        if self.capacity <= 0:
            return
        shared = shared_prefix(llama, tokens)
        key, common = self.closest(tokens)
        if key is not None and common - shared >= MIN_PREFIX_TOKENS:  # else restoring costs about as much
            self.entries.move_to_end(key)
            if self._restore(llama, key):
                self.hits += 1
                shared = common
        if not stable:
            return
        length = prefix_length(llama, tokens, stable)
        if length < MIN_PREFIX_TOKENS or length >= len(tokens) or shared >= length:
            return
        self.misses += 1
        llama.n_tokens = min(shared, length)  # what `eval` keeps of the context; it drops the rest
        llama.eval(list(tokens[llama.n_tokens : length]))
        self._save(llama, tuple(tokens[:length]))

    def keep(self, llama: Any) -> None:
        """After an answered live turn: keep the whole context (its prompt and reply) for the next turns."""
        if self.capacity <= 0 or llama.n_tokens < MIN_PREFIX_TOKENS:
            return
        key = tuple(int(token) for token in llama.input_ids[: llama.n_tokens])
        if key in self.entries:
            self.entries.move_to_end(key)
            return
        if self._save(llama, key):
            self.kept += 1

    def closest(self, tokens: Sequence[int]) -> tuple[tuple[int, ...] | None, int]:
        """The entry sharing the longest prefix with `tokens`, and how many tokens it shares (at most all
        but the last: llama.cpp evaluates at least one token to have logits to sample from)."""
        wanted = np.asarray(tokens, dtype=np.int64)
        best: tuple[tuple[int, ...] | None, int] = (None, 0)
        for key in self.entries:
            common = common_length(np.asarray(key, dtype=np.int64), wanted)
            if common > best[1]:
                best = (key, common)
        return best[0], min(best[1], len(tokens) - 1)

    def _save(self, llama: Any, key: tuple[int, ...]) -> bool:
        ctx = llama._ctx.ctx  # noqa: SLF001 - llama-cpp-python exposes the context only so
        size = int(self.lib.llama_state_seq_get_size(ctx, 0))
        if size > self.capacity:
            return False
        buffer = (ctypes.c_uint8 * size)()
        written = int(self.lib.llama_state_seq_get_data(ctx, buffer, size, 0))
        self.entries[key] = bytes(buffer)[:written]
        self.size += written
        while self.size > self.capacity and self.entries:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped)
        return True

    def _restore(self, llama: Any, key: tuple[int, ...]) -> bool:
        state = self.entries[key]
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # noqa: SLF001
        source = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if int(self.lib.llama_state_seq_set_data(llama._ctx.ctx, source, len(state), 0)) == 0:  # noqa: SLF001
            log.warning("llama.cpp refused a cached prompt state; the prompt is read in full")
            llama.n_tokens = 0
            del self.entries[key]
            self.size -= len(state)
            return False
        # llama.generate keeps the longest prefix these share with its prompt and evaluates the rest.
        llama.input_ids[: len(key)] = key
        llama.n_tokens = len(key)
        llama._requires_eval = True  # noqa: SLF001 - logits are not restored: the suffix refreshes them
        return True

    def stats(self) -> dict[str, int]:
        return {
            "entries": len(self.entries),
            "bytes": self.size,
            "hits": self.hits,
            "misses": self.misses,
            "kept": self.kept,
        }


def common_length(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading items two token arrays share."""
    n = min(len(a), len(b))
    differ = np.nonzero(a[:n] != b[:n])[0]
    return int(differ[0]) if len(differ) else n


def shared_prefix(llama: Any, tokens: Sequence[int]) -> int:
    """How many leading `tokens` the context already holds."""
    held = np.asarray(llama.input_ids[: llama.n_tokens])
    return common_length(held, np.asarray(tokens, dtype=held.dtype))


def prefix_length(llama: Any, tokens: Sequence[int], stable: str) -> int:
    """The fewest leading `tokens` whose text holds all of `stable` (0 when the prompt does not hold it):
    found on the text, so it works whatever the chat template puts around the message."""
    text = llama.detokenize(list(tokens), special=True)
    found = text.find(stable.encode("utf-8"))
    if found < 0:
        return 0
    end = found + len(stable.encode("utf-8"))
    low, high = 1, len(tokens)
    while low < high:  # the prefix's text only grows with its length
        middle = (low + high) // 2
        if len(llama.detokenize(list(tokens[:middle]), special=True)) >= end:
            high = middle
        else:
            low = middle + 1
    return low
