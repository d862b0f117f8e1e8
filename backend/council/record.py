"""The decision record as markdown, rendered from `templates/record.md.j2`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader

from backend.council.models import CouncilRecord
from backend.council.outcome import OUTCOME_WORDS
from backend.council.prompts import STANCE_WORDS, lang_key

TEMPLATES = Path(__file__).parent / "templates"

LABELS: dict[str, dict[str, Any]] = {
    "ja": {
        "council": "評議会",
        "date": "日付",
        "proposer": "提案者",
        "category": "分類",
        "members": "メンバー",
        "moderator": "進行役",
        "status": "状態",
        "outcome": "結論",
        "error": "エラー",
        "none": "なし",
        "proposal": "提案",
        "background": "背景",
        "effects": "期待される効果",
        "round": "第{n}ラウンド",
        "independent": "独立した意見",
        "tally": "集計",
        "abstained": "棄権（発言できず）",
        "concern": "懸念",
        "condition": "条件",
        "aggregation": "整理",
        "agreement": "一致点",
        "difference": "相違点",
        "consensus": "合意形成",
        "action": "行動案",
        "final": "最終的な立場",
        "member": "メンバー",
        "stance": "立場",
        "early_stop": "全員の立場が一致したため早期終了",
        "statuses": {"pending": "待機中", "running": "審議中", "done": "完了", "failed": "失敗"},
    },
    "en": {
        "council": "Council",
        "date": "Date",
        "proposer": "Proposer",
        "category": "Category",
        "members": "Members",
        "moderator": "Moderator",
        "status": "Status",
        "outcome": "Outcome",
        "error": "Error",
        "none": "none",
        "proposal": "Proposal",
        "background": "Background",
        "effects": "Expected effects",
        "round": "Round {n}",
        "independent": "independent opinions",
        "tally": "Tally",
        "abstained": "Abstained (could not answer)",
        "concern": "Concern",
        "condition": "Condition",
        "aggregation": "Aggregation",
        "agreement": "Agreement",
        "difference": "Difference",
        "consensus": "Consensus",
        "action": "Action",
        "final": "Final stances",
        "member": "Member",
        "stance": "Stance",
        "early_stop": "stopped early: every member took the same stance",
        "statuses": {"pending": "pending", "running": "running", "done": "done", "failed": "failed"},
    },
}

_ENV = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=False,  # markdown, not HTML; the dashboard escapes when it renders it
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_record(row: CouncilRecord) -> str:
    """The council's decision record as markdown (a partial record while it is still running)."""
    language = lang_key(row.language)
    record = row.record or {}
    names = {m["id"]: m["name"] for m in record.get("members", [])}
    moderator = record.get("moderator") or {}
    rounds = record.get("rounds", [])
    text = _ENV.get_template("record.md.j2").render(
        c=row,
        r=record,
        t=LABELS[language],
        label=f"No.{row.number:03d}",
        date=row.created_at.strftime("%Y-%m-%d"),
        member_names=[names.get(agent_id, agent_id) for agent_id in row.members],
        moderator_name=moderator.get("name") or row.moderator or LABELS[language]["none"],
        stances=STANCE_WORDS[language],
        outcomes=OUTCOME_WORDS[language],
        final=rounds[-1]["opinions"] if rounds and "tally" in rounds[-1] else [],
    )
    # Collapse the runs of blank lines that optional sections leave behind.
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text
