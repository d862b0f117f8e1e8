"""The word list's cost per line, and what it catches: the matching before issue 33 against today's.

Run: `.venv/bin/python bench/moderation.py` (optionally `--repeat 200`). For the two corpora of
tests/moderation (evasions that must be caught, ordinary lines that must pass) and for 300-character lines
(Japanese and English chatter, and lines made to make a pattern work hard: 300 `$`, `ち○` repeated, `s!`
repeated), it prints microseconds per line for `fold` alone and for `WordList.find` (which folds), mean
and worst, for the old matching (NFKC, casefold, katakana to hiragana; entries as plain patterns, frozen
below) and today's, and how many evasions each caught and how many ordinary lines each held back.

`find` runs on every visitor line and every reply, and on every streamed chunk of a visitor conversation's
reply (conversation/visitor.py `may_show`): a line should cost well under a millisecond.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.moderation import DEFAULT_WORDS_FILE, fold, load_word_list  # noqa: E402

CORPORA = ROOT / "tests" / "moderation"
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2}))")


def corpus(name: str) -> list[str]:
    """The corpus's lines, escapes decoded, the ` => entry` of an evasion left off."""
    lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
    kept = [line.rsplit(" => ", 1)[0] for line in lines if line.strip() and not line.startswith("#")]
    return [_ESCAPE.sub(lambda m: chr(int(next(g for g in m.groups() if g), 16)), line) for line in kept]


# --- the matching before issue 33, frozen ---
def old_fold(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = re.sub(r"[\u30a1-\u30f6]", lambda m: chr(ord(m.group()) - 0x60), folded)
    return re.sub(r"\s+", " ", folded).strip()


def old_pattern(entry: str) -> re.Pattern[str]:
    if not entry.isascii():
        return re.compile(" ?".join(re.escape(c) for c in entry.replace(" ", "")))
    body = r"[\W_]*".join(re.escape(word) for word in entry.split())
    letters = [c for c in entry if c.isalnum()]
    if len(letters) >= 4:
        spelled = r"[\W_]{1,3}".join(re.escape(c) for c in letters)
        body = f"(?:{body}|{spelled})"
    return re.compile(rf"(?<![a-z0-9]){body}(?:s|es|ed|d|er|ers|ing)?(?![a-z0-9])")


def old_find(patterns: list[re.Pattern[str]]) -> Callable[[str], bool]:
    def find(text: str) -> bool:
        folded = old_fold(text)
        return any(p.search(folded) for p in patterns)

    return find


def timed(call: Callable[[str], object], lines: list[str], repeat: int) -> tuple[float, float]:
    """Mean and worst microseconds per line (each line's time the best of `repeat`)."""
    per_line = []
    for line in lines:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            call(line)
            best = min(best, time.perf_counter() - start)
        per_line.append(best * 1e6)
    return statistics.fmean(per_line), max(per_line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="runs of each line (the best one counts)")
    args = parser.parse_args()
    words = load_word_list()
    old = old_find([old_pattern(old_fold(entry)) for entry in _entries(DEFAULT_WORDS_FILE)])
    sets = {
        "evasions": corpus("evasions.txt"),
        "ordinary": corpus("ordinary.txt"),
        "300 ja": [
            ("こんにちは、今日は中央カフェでコーヒーを飲みました。駅前の本屋にも寄りたいです。" * 8)[:300]
        ],
        "300 en": [("Hello there, what a lovely day for a walk in the park with my assistant! " * 5)[:300]],
        "300 hard": ["$" * 300, "ち○" * 150, "s!" * 150, "f" + "*" * 299],
    }
    print(f"{len(words)} entries; microseconds per line, mean / worst (best of {args.repeat} runs)")
    print(f"{'lines':>10} {'n':>4} | {'old fold':>13} {'old find':>13} | {'fold':>13} {'find':>13}")
    for name, lines in sets.items():
        figures = [timed(call, lines, args.repeat) for call in (old_fold, old, fold, words.find)]
        cells = " ".join(f"{mean:6.1f} /{worst:6.1f}" for mean, worst in figures)
        print(f"{name:>10} {len(lines):>4} | {cells}")
    for name in ("evasions", "ordinary"):
        lines = sets[name]
        caught_old = sum(old(line) for line in lines)
        caught_new = sum(words.find(line) is not None for line in lines)
        print(
            f"{name}: held back by the old matching {caught_old}/{len(lines)}, today {caught_new}/{len(lines)}"
        )


def _entries(path: Path) -> list[str]:
    """The list's entries without their `category:` prefix."""
    kept = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [entry.split(":", 1)[-1].strip() for entry in kept if entry]


if __name__ == "__main__":
    main()
