"""Prompts for every council stage and for the judge, in Japanese or English.

Isolation is a property of these builders: `opinion_messages` for round 1 takes only the member, its own
memories and the proposal, so no other member's words can reach it; later rounds add the others' previous
answers explicitly. No prompt tells a member to agree with the proposer.
Each prompt describes the reply's fields in words and shows no JSON example (small models copy its
placeholders: "意見", "懸念"); the provider enforces the shape. Tallies and notes are quoted as text too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.council.outcome import OUTCOME_WORDS
from backend.llm.base import Message

STANCE_WORDS = {
    "ja": {"for": "賛成", "conditional": "条件付き賛成", "against": "反対", "abstain": "棄権"},
    "en": {"for": "for", "conditional": "conditional", "against": "against", "abstain": "abstain"},
}

_SYSTEM = {
    "ja": (
        "あなたは評議会の一員「{name}」です。自分の性格と価値観のまま、提案に対する自分自身の意見を述べてください。"
        "提案者に賛成する義務はありません。賛成・条件付き賛成・反対のどれを選んでもかまいません。\n"
        "人物像: {persona}"
    ),
    "en": (
        "You are {name}, one member of a council. Give your own view of the proposal, true to your temperament "
        "and values. You are not obliged to agree with the proposer: for, conditional or against are all fine.\n"
        "Who you are: {persona}"
    ),
}
_ANSWER = {
    "ja": (
        "次の項目をもつJSONオブジェクトで答えてください。\n"
        "- stance: 提案へのあなたの立場。for（賛成）、conditional（条件付き賛成）、against（反対）のどれか\n"
        "- opinion: この提案についてのあなた自身の考えを、あなたの口調で2〜4文\n"
        "- concerns: あなたが心配している点。一つずつ短い文で\n"
        "- conditions: あなたが賛成するために必要な条件。一つずつ短い文で"
    ),
    "en": (
        "Reply with a JSON object with these fields:\n"
        "- stance: your position on the proposal, one of for, conditional, against\n"
        "- opinion: what you yourself think of this proposal, two to four sentences in your own voice\n"
        "- concerns: each thing that worries you, as a short sentence\n"
        "- conditions: each condition for your support, as a short sentence"
    ),
}
_LABELS = {
    "ja": {
        "proposal": "提案",
        "title": "件名",
        "background": "背景",
        "effects": "期待される効果",
        "category": "分類",
        "proposer": "提案者",
        "memories": "あなたの記憶（関係のありそうなもの）",
        "none": "（なし）",
        "round": "第{n}ラウンド",
        "own": "前のラウンドでのあなたの意見",
        "others": "前のラウンドでの他のメンバーの意見",
        "reconsider": "他のメンバーの意見を読んだうえで、もう一度あなたの意見を述べてください。立場を変えても変えなくてもかまいません。",
        "tally": "集計",
        "outcome": "結果",
        "notes": "書記のまとめ",
        "agreements": "一致点",
        "differences": "相違点",
        "concerns": "懸念点",
    },
    "en": {
        "proposal": "Proposal",
        "title": "Title",
        "background": "Background",
        "effects": "Expected effects",
        "category": "Category",
        "proposer": "Proposer",
        "memories": "Your memories that may be relevant",
        "none": "(none)",
        "round": "Round {n}",
        "own": "Your opinion in the previous round",
        "others": "The other members' opinions in the previous round",
        "reconsider": "Having read the others, give your opinion again. You may keep or change your stance.",
        "tally": "Tally",
        "outcome": "Outcome",
        "notes": "The clerk's notes",
        "agreements": "Agreements",
        "differences": "Differences",
        "concerns": "Concerns",
    },
}


def lang_key(language: str | None) -> str:
    return "en" if str(language or "ja").lower().startswith("en") else "ja"


def persona_text(member: dict[str, Any], language: str) -> str:
    """One paragraph describing a member (traits, background, way of speaking, role)."""
    ja = lang_key(language) == "ja"
    parts = []
    if member.get("traits"):
        traits = [str(t) for t in member["traits"]]
        parts.append("性格: " + "、".join(traits) if ja else "Traits: " + ", ".join(traits))
    if member.get("backstory"):
        parts.append(("経歴: " if ja else "Background: ") + member["backstory"])
    if member.get("speaking_style"):
        parts.append(("話し方: " if ja else "Speaking style: ") + member["speaking_style"])
    if member.get("council_role") == "moderator":
        parts.append("評議会の進行役。" if ja else "Moderates the council.")
    return " / ".join(parts) or ("（特になし）" if ja else "(no details)")


def proposal_text(proposal: dict[str, Any], language: str) -> str:
    labels = _LABELS[lang_key(language)]
    lines = [f"## {labels['proposal']}", f"{labels['title']}: {proposal['title']}"]
    for key, label in (
        ("background", "background"),
        ("expected_effects", "effects"),
        ("category", "category"),
        ("proposer", "proposer"),
    ):
        if proposal.get(key):
            lines.append(f"{labels[label]}: {proposal[key]}")
    return "\n".join(lines)


_ABSTENTION = {
    "ja": "ごめんなさい、この件はまだ考えがまとまらないので、今回は判断をみんなに任せます。",
    "en": "I'm sorry, I can't make up my mind on this one yet, so I'll leave the decision to the others.",
}


def abstention(language: str) -> str:
    """What a member whose model call failed says in the record: it abstains, in a sentence."""
    return _ABSTENTION["en" if language == "en" else "ja"]


def opinion_line(entry: dict[str, Any], language: str) -> str:
    """How one member's answer is quoted to the others."""
    words = STANCE_WORDS[lang_key(language)]
    line = f"- {entry['name']}（{words.get(entry['stance'], entry['stance'])}）: {entry.get('opinion') or ''}"
    extras = []
    if entry.get("concerns"):
        extras.append(
            ("懸念: " if lang_key(language) == "ja" else "concerns: ") + "; ".join(entry["concerns"])
        )
    if entry.get("conditions"):
        extras.append(
            ("条件: " if lang_key(language) == "ja" else "conditions: ") + "; ".join(entry["conditions"])
        )
    return line + "".join(f"\n  {extra}" for extra in extras)


def opinion_messages(
    member: dict[str, Any],
    proposal: dict[str, Any],
    memories: Sequence[str],
    language: str,
    *,
    round_no: int = 1,
    own_previous: dict[str, Any] | None = None,
    others_previous: Sequence[dict[str, Any]] = (),
) -> list[Message]:
    """A member's prompt. Round 1 has only its persona, its memories and the proposal; later rounds add the
    member's own previous answer and every other member's previous answer."""
    key = lang_key(language)
    labels = _LABELS[key]
    system = _SYSTEM[key].format(name=member["name"], persona=persona_text(member, key))
    memory_lines = "\n".join(f"- {text}" for text in memories) or labels["none"]
    user = [proposal_text(proposal, key), f"## {labels['memories']}\n{memory_lines}"]
    if round_no > 1:
        user.append(f"## {labels['round'].format(n=round_no)}")
        if own_previous is not None:
            user.append(f"### {labels['own']}\n{opinion_line(own_previous, key)}")
        user.append(f"### {labels['others']}\n" + "\n".join(opinion_line(o, key) for o in others_previous))
        user.append(labels["reconsider"])
    user.append(_ANSWER[key])
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(user)}]


def aggregate_messages(
    proposal: dict[str, Any],
    opinions: Sequence[dict[str, Any]],
    counts: dict[str, int],
    language: str,
    round_no: int,
) -> list[Message]:
    """Ask for agreements, differences and concerns of one round (the tally itself is exact, from code)."""
    key = lang_key(language)
    if key == "ja":
        system = (
            "あなたは評議会の書記です。各メンバーの意見から、一致点・相違点・懸念点を公平に抜き出してください。"
            "誰かの側に立たず、出ていない意見を付け加えないこと。"
        )
        ask = (
            "次の項目をもつJSONオブジェクトで答えてください。それぞれ短い文のリストです。\n"
            "- agreements: メンバーの意見が一致している点\n"
            "- differences: メンバーの意見が分かれている点\n"
            "- concerns: メンバーが挙げた懸念"
        )
    else:
        system = (
            "You are the council's clerk. Extract the points of agreement, the differences and the concerns "
            "from the members' opinions, fairly. Take no side and add nothing that was not said."
        )
        ask = (
            "Reply with a JSON object with these fields, each a list of short sentences:\n"
            "- agreements: the points the members agree on\n"
            "- differences: the points where the members' views differ\n"
            "- concerns: the concerns the members raised"
        )
    body = "\n".join(opinion_line(o, key) for o in opinions)
    user = (
        f"{proposal_text(proposal, key)}\n\n## {_LABELS[key]['round'].format(n=round_no)}\n{body}\n\n"
        f"{tally_text(counts, key)}\n\n{ask}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def consensus_messages(
    moderator: dict[str, Any],
    proposal: dict[str, Any],
    opinions: Sequence[dict[str, Any]],
    aggregation: dict[str, Any] | None,
    counts: dict[str, int],
    outcome: str,
    language: str,
) -> list[Message]:
    """The moderator's summary: points of agreement, of disagreement, and proposed actions, fair to all."""
    key = lang_key(language)
    if key == "ja":
        system = (
            f"あなたは評議会の進行役「{moderator['name']}」です（{persona_text(moderator, key)}）。"
            "全員の意見を公平にまとめ、一致点・相違点・今後の行動案を示してください。自分の意見を優先しないこと。"
        )
        ask = (
            "次の項目をもつJSONオブジェクトで答えてください。\n"
            "- summary: 評議会全体の議論と結論を公平にまとめた2〜4文\n"
            "- agreements: 全員が一致した点（短い文のリスト）\n"
            "- disagreements: 意見が分かれたままの点（短い文のリスト）\n"
            "- actions: これから取るべき行動の案（短い文のリスト）"
        )
    else:
        system = (
            f"You are {moderator['name']}, the council's moderator ({persona_text(moderator, key)}). Summarise "
            "everyone's views fairly: points of agreement, of disagreement, and proposed actions. Do not "
            "favour your own view."
        )
        ask = (
            "Reply with a JSON object with these fields:\n"
            "- summary: a fair account of the whole discussion and its result, two to four sentences\n"
            "- agreements: the points everyone agreed on (a list of short sentences)\n"
            "- disagreements: the points still in dispute (a list of short sentences)\n"
            "- actions: the actions proposed from here (a list of short sentences)"
        )
    parts = [proposal_text(proposal, key), "\n".join(opinion_line(o, key) for o in opinions)]
    if aggregation:
        parts.append(aggregation_text(aggregation, key))
    parts.append(
        f"{tally_text(counts, key)}\n{_LABELS[key]['outcome']}: {OUTCOME_WORDS[key].get(outcome, outcome)}"
    )
    parts.append(ask)
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def tally_text(counts: dict[str, int], language: str) -> str:
    """The exact tally in words ("賛成 2、反対 1"), not as JSON a model might imitate."""
    key = lang_key(language)
    words = STANCE_WORDS[key]
    joined = ("、" if key == "ja" else ", ").join(f"{words.get(k, k)} {n}" for k, n in counts.items())
    return f"{_LABELS[key]['tally']}: {joined}"


def aggregation_text(aggregation: dict[str, Any], language: str) -> str:
    """The clerk's notes of the last round, one labelled line per kind of point."""
    key = lang_key(language)
    labels, sep = _LABELS[key], "; "
    lines = [f"## {labels['notes']}"]
    for field, label in (
        ("agreements", "agreements"),
        ("differences", "differences"),
        ("concerns", "concerns"),
    ):
        items = [str(item) for item in aggregation.get(field) or []]
        lines.append(f"{labels[label]}: {sep.join(items) or labels['none']}")
    return "\n".join(lines)


def judge_messages(
    content: str,
    criteria: Sequence[str],
    context: str | None,
    language: str,
    *,
    labels: dict[str, str] | None = None,
) -> list[Message]:
    """One-step, hierarchical evaluation: a judge scores content on each criterion from 1 to 10.
    `labels` are the criteria as people read them: the rationale names them so, never by id."""
    key = lang_key(language)
    labels = labels or {}
    open_, close = ("（", "）") if key == "ja" else (" (", ")")
    names = ", ".join(f"{c}{open_}{labels[c]}{close}" if labels.get(c, c) != c else c for c in criteria)
    if key == "ja":
        system = (
            "あなたは公平な評価者です。与えられた内容を各基準について1〜10の整数で採点し、"
            "全体の評価（1〜10）、理由、推奨する対応（accept、revise、reject のどれか）を示してください。"
            "理由は日本語で書き、基準は括弧内の日本語の名前で呼んでください。"
        )
        ask = (
            f"基準: {names}\n次の項目をもつJSONオブジェクトで答えてください。\n"
            "- scores: 基準ごとの採点のリスト。各採点には criterion（基準のid。一覧で括弧の前に書かれたもの）、"
            "score（1〜10の整数）、reason（その点数にした理由を一文で）を入れる\n"
            "- overall: 全体の評価（1〜10）\n"
            "- rationale: 全体の評価の理由を日本語で2〜3文\n"
            "- recommended_action: accept（受け入れる）、revise（直す）、reject（却下する）のどれか"
        )
        head = "## 文脈" if context else ""
    else:
        system = (
            "You are an impartial judge. Score the content on each criterion with an integer from 1 to 10, "
            "then give an overall score (1-10), your rationale and a recommended action "
            "(accept, revise or reject)."
        )
        ask = (
            f"Criteria: {names}\nReply with a JSON object with these fields:\n"
            "- scores: one score per criterion; each has criterion (the criterion's id as listed), score "
            "(an integer from 1 to 10) and reason (why, in one sentence)\n"
            "- overall: the overall score, from 1 to 10\n"
            "- rationale: why you gave that overall score, two or three sentences\n"
            "- recommended_action: one of accept, revise, reject"
        )
        head = "## Context" if context else ""
    user = "\n\n".join(
        p for p in (f"{head}\n{context}" if context else "", f"## Content\n{content}", ask) if p
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
