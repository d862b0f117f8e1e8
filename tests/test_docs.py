"""The README and docs/: the two commands stay on the front page, every link reaches a file and a heading."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "unity_protocol" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens (code blocks skipped)."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", markdown), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_reaches_a_file_and_heading() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text(encoding="utf-8")):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_readme_is_short_gives_the_two_commands_and_a_japanese_summary() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150, "keep the README short; move detail into docs/"
    sections = re.split(r"^## ", text, flags=re.M)
    japanese = next(s for s in sections if s.startswith("日本語"))
    for part in (text, japanese):
        assert re.search(r"^make serve +#", part, re.M) and re.search(r"^make test +#", part, re.M)
    assert len(re.findall(r"[\u3040-\u30ff]", japanese)) > 300, "the Japanese section is written in Japanese"
    linked = set(LINK.findall(text))
    assert {"unity_protocol/README.md", "docs/security.md", "docs/mind.md"} <= linked


def test_docs_name_no_internal_issue_numbers() -> None:
    for page in PAGES:
        found = re.findall(r"\bissue #?\d+", page.read_text(encoding="utf-8"), re.I)
        assert found == [], f"{page.relative_to(REPO)} names {found}: say what changed instead"
