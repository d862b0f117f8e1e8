"""A KV cache of prompts' stable prefixes for the in-process llama.cpp model (`LLAMACPP_PREFIX_CACHE_MB`).

Most of a turn's time to its first streamed word is reading the prompt, and most of a turn's prompt is its
system message: the speaker's persona and the rules, the same on every turn of that speaker. llama.cpp
skips what the previous call shares with the next one, but only the previous call: a background call in
between (a rating, a reflection, the partner's turn) replaces the context, and the next turn reads its
whole prompt again.

This cache keeps the state of the prompt up to the end of its first message (llama.cpp's per-sequence
state: keys and values, no logits), one entry per distinct token prefix (in practice one per speaker and
purpose), least recently used out first past a byte budget. Before a call evaluates, the state of its
prefix is restored when that is more than the context already shares; a prefix not in the cache is
evaluated on its own first and kept. Everything runs in the llama.cpp worker thread (`_Engine`), one call
at a time.
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
    """KV states of stable prompt prefixes, keyed by their tokens, bounded by `capacity_bytes`."""

    def __init__(self, llama_cpp: Any, capacity_bytes: int) -> None:
        self.lib = llama_cpp  # the llama_cpp module (its low-level state functions)
        self.capacity = capacity_bytes
        self.entries: collections.OrderedDict[tuple[int, ...], bytes] = collections.OrderedDict()
        self.size = 0
        self.hits = self.misses = 0

    def prepare(self, llama: Any, tokens: Sequence[int], stable: str | None) -> None:
        """Before `llama.generate(tokens)`: leave the context holding at least the prompt's stable prefix
        (the tokens up to the end of the text `stable`), restored from the cache or evaluated and kept."""
        if not stable or self.capacity <= 0:
            return
        length = prefix_length(llama, tokens, stable)
        if length < MIN_PREFIX_TOKENS or length >= len(tokens):
            return
        key = tuple(tokens[:length])
        shared = shared_prefix(llama, tokens)
        if key in self.entries:
            self.entries.move_to_end(key)
            if shared < length:
                self._restore(llama, key)
                self.hits += 1
            return
        self.misses += 1
        llama.n_tokens = min(shared, length)  # what `eval` keeps of the context; it drops the rest
        llama.eval(list(tokens[llama.n_tokens : length]))
        self._save(llama, key)

    def _save(self, llama: Any, key: tuple[int, ...]) -> None:
        ctx = llama._ctx.ctx  # noqa: SLF001 - llama-cpp-python exposes the context only so
        size = int(self.lib.llama_state_seq_get_size(ctx, 0))
        if size > self.capacity:
            return
        buffer = (ctypes.c_uint8 * size)()
        written = int(self.lib.llama_state_seq_get_data(ctx, buffer, size, 0))
        self.entries[key] = bytes(buffer)[:written]
        self.size += written
        while self.size > self.capacity and self.entries:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped)

    def _restore(self, llama: Any, key: tuple[int, ...]) -> None:
        state = self.entries[key]
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # noqa: SLF001
        source = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if int(self.lib.llama_state_seq_set_data(llama._ctx.ctx, source, len(state), 0)) == 0:  # noqa: SLF001
            log.warning("llama.cpp refused a cached prompt state; the prompt is read in full")
            llama.n_tokens = 0
            del self.entries[key]
            self.size -= len(state)
            return
        llama.input_ids[: len(key)] = key
        llama.n_tokens = len(key)
        llama._requires_eval = True  # noqa: SLF001 - logits are not restored: the suffix refreshes them

    def stats(self) -> dict[str, int]:
        return {"entries": len(self.entries), "bytes": self.size, "hits": self.hits, "misses": self.misses}


def shared_prefix(llama: Any, tokens: Sequence[int]) -> int:
    """How many leading `tokens` the context already holds."""
    held = np.asarray(llama.input_ids[: llama.n_tokens])
    wanted = np.asarray(tokens[: len(held)], dtype=held.dtype)
    differ = np.nonzero(held[: len(wanted)] != wanted)[0]
    return int(differ[0]) if len(differ) else len(wanted)


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
