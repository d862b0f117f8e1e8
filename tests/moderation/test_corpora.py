"""The default word list against two corpora: evasions it must catch, ordinary booth lines it must pass.

evasions.txt and ordinary.txt hold one line each (`line => entry` for an evasion); escapes \\uXXXX,
\\UXXXXXXXX and \\xXX are decoded here, so invisible characters and look-alikes stay readable in the files.
Each line is its own test case, named by the line as written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.moderation import WordList, fold, load_word_list

HERE = Path(__file__).parent
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2}))")


def decode(line: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(next(g for g in m.groups() if g), 16)), line)


def corpus(name: str) -> list[str]:
    lines = (HERE / name).read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


EVASIONS = [tuple(line.rsplit(" => ", 1)) for line in corpus("evasions.txt")]
ORDINARY = corpus("ordinary.txt")


@pytest.fixture(scope="module")
def default() -> WordList:
    return load_word_list()


@pytest.mark.parametrize(("line", "entry"), EVASIONS, ids=[line for line, _ in EVASIONS])
def test_an_evasion_is_caught(default: WordList, line: str, entry: str) -> None:
    hit = default.find(decode(line))
    assert hit is not None, f"{line!r} passed (folded: {fold(decode(line))!r})"
    assert hit.word == entry, f"{line!r} found {hit.word!r}, not {entry!r}"


@pytest.mark.parametrize("line", ORDINARY, ids=ORDINARY)
def test_an_ordinary_line_passes(default: WordList, line: str) -> None:
    hit = default.find(decode(line))
    assert hit is None, f"{line!r} was held back as {hit} (folded: {fold(decode(line))!r})"
