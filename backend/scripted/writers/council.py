"""Council and judge replies for the scripted engine.

A member's answer follows its temperament, read from its persona (traits, background, speaking style,
council role): the careful analyst leans to `conditional` and asks for evidence and a trial; the emotional,
direct member takes a strong side; the empathetic integrator looks for what everyone can live with. From
round 2 a member may move toward the others' majority, the integrator most readily and the passionate one
least, so some councils converge and some do not. All choices come from the seeded random source.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from backend.scripted.engine import WriterContext

TEMPERAMENT_WORDS = {
    "analytical": (
        "analytical",
        "careful",
        "logical",
        "cautious",
        "calm",
        "rational",
        "methodical",
        "慎重",
        "分析",
        "論理",
        "冷静",
        "几帳面",
        "理性",
        "しっかり",
        "長女",
    ),
    "passionate": (
        "emotional",
        "direct",
        "passionate",
        "blunt",
        "energetic",
        "impulsive",
        "fiery",
        "感情",
        "率直",
        "情熱",
        "まっすぐ",
        "直情",
        "活発",
        "元気",
        "はっきり",
        "次女",
    ),
    "empathetic": (
        "empathetic",
        "integrating",
        "kind",
        "gentle",
        "harmon",
        "mediat",
        "warm",
        "共感",
        "まとめ",
        "優しい",
        "穏やか",
        "調和",
        "思いやり",
        "末っ子",
        "三女",
    ),
}
#: Round-1 stance weights (for, conditional, against) and how readily a member moves toward the others.
LEANINGS = {
    "analytical": ((2, 6, 2), 0.5),
    "passionate": ((5, 1, 4), 0.3),
    "empathetic": ((5, 4, 1), 0.75),
}
STANCES = ("for", "conditional", "against")

OPENINGS = {
    "ja": {
        "analytical": {
            "for": "数字で見ても、「{t}」は筋が通っていると思う。",
            "conditional": "「{t}」の方向性には賛成。ただ、根拠と段取りを確かめたい。",
            "against": "「{t}」は、今の材料では進められない。見積もりが甘いと思う。",
        },
        "passionate": {
            "for": "「{t}」、絶対やるべきだよ！ みんなきっと喜ぶ。",
            "conditional": "「{t}」はいいと思う。でも、ひとつだけ譲れないことがある。",
            "against": "正直に言うね。「{t}」には反対。誰かが我慢することになるもん。",
        },
        "empathetic": {
            "for": "「{t}」、いいと思う。みんなが少しずつ楽しくなりそう。",
            "conditional": "「{t}」には賛成したいな。不安に思う人の声も拾えるなら。",
            "against": "「{t}」は、今はまだ早い気がする。困る人が出ないか心配で。",
        },
    },
    "en": {
        "analytical": {
            "for": 'Looking at the numbers, "{t}" holds up.',
            "conditional": 'I support the direction of "{t}", but I want to check the evidence and the steps first.',
            "against": 'With what we know now, "{t}" should not go ahead. The estimates look too optimistic.',
        },
        "passionate": {
            "for": 'We should absolutely do "{t}"! People will love it.',
            "conditional": '"{t}" is good, but there is one thing I will not give up on.',
            "against": 'Honestly, I am against "{t}". Someone would end up putting up with it.',
        },
        "empathetic": {
            "for": '"{t}" sounds good to me. It could make everyone a little happier.',
            "conditional": 'I would like to support "{t}", if we also listen to the people who are worried.',
            "against": 'I feel "{t}" is too early. I am worried someone will be left out.',
        },
    },
}
CONCERNS = {
    "ja": {
        "analytical": [
            "費用と手間の見積もりがまだない",
            "効果を確かめる方法が決まっていない",
            "続けられる体制があるか分からない",
        ],
        "passionate": [
            "反対する人の気持ちが置き去りになる",
            "楽しさより義務になってしまう",
            "一部の人だけが得をする",
        ],
        "empathetic": [
            "参加しにくい人が出るかもしれない",
            "特定の人に負担が集まる",
            "説明が足りないと誤解される",
        ],
    },
    "en": {
        "analytical": [
            "there is no estimate of cost and effort yet",
            "no way to measure the effect is agreed",
            "it is unclear who will keep it running",
        ],
        "passionate": [
            "the feelings of those against it get ignored",
            "it turns from fun into a chore",
            "only a few people benefit",
        ],
        "empathetic": [
            "some people may find it hard to take part",
            "the burden falls on a few people",
            "without explanation people will misunderstand",
        ],
    },
}
CONDITIONS = {
    "ja": {
        "analytical": ["まず二週間の試行期間を設けて結果を確かめる", "次の評議会で効果を見直す"],
        "passionate": ["町のみんなに直接意見を聞いてから始める", "嫌な人には無理強いしない"],
        "empathetic": ["誰でも参加できる形にする", "始める前に計画を全員に共有する"],
    },
    "en": {
        "analytical": [
            "run a two-week trial first and check the results",
            "review the effect at the next council",
        ],
        "passionate": ["ask the townspeople directly before starting", "nobody is forced to join"],
        "empathetic": ["make it open to everyone", "share the plan with everyone before starting"],
    },
}
REACTIONS = {
    "ja": {
        "agree": "{n}の「{q}」という点には、私も同じ考え。",
        "disagree": "{n}は「{q}」と言うけど、私はそうは思わない。",
        "moved": "みんなの話を聞いて、考えを少し改めた。",
    },
    "en": {
        "agree": '{n} has a point about "{q}"; I think so too.',
        "disagree": '{n} says "{q}", but I do not see it that way.',
        "moved": "Having heard everyone, I have changed my mind a little.",
    },
}


def temperament(member: dict[str, Any]) -> str:
    """analytical | passionate | empathetic, from the persona's words (the role and id break ties)."""
    text = " ".join(
        [
            *map(str, member.get("traits") or []),
            str(member.get("backstory") or ""),
            str(member.get("speaking_style") or ""),
        ]
    ).lower()
    hits = {kind: sum(text.count(word) for word in words) for kind, words in TEMPERAMENT_WORDS.items()}
    best = max(hits.values())
    if best > 0:
        return next(kind for kind, count in hits.items() if count == best)
    if member.get("council_role") == "moderator":
        return "analytical"
    return ("passionate", "empathetic", "analytical")[sum(map(ord, str(member.get("id", "")))) % 3]


def _choose_stance(ctx: WriterContext, kind: str) -> tuple[str, bool]:
    """The stance for this round, and whether the member moved toward the others."""
    weights, readiness = LEANINGS[kind]
    previous = ctx.facts.get("previous") or {}
    others = [o for o in ctx.facts.get("others") or [] if o and o.get("stance") in STANCES]
    if not previous or previous.get("stance") not in STANCES:
        return ctx.rng.choices(STANCES, weights=weights)[0], False
    own = previous["stance"]
    if not others or ctx.rng.random() >= readiness:
        return own, False
    counts = Counter(o["stance"] for o in others)
    top = max(counts.values())
    majority = sorted((s for s, c in counts.items() if c == top), key=STANCES.index)
    target = majority[0] if len(majority) == 1 else "conditional"
    if kind == "analytical" and target == "for":
        target = "conditional"  # the analyst still wants its safeguards written down
    return target, target != own


def member_opinion(ctx: WriterContext) -> dict[str, Any]:
    member = ctx.facts.get("member") or {}
    kind = temperament(member)
    lang = ctx.language
    title = (ctx.facts.get("proposal") or {}).get("title") or ("この提案" if ctx.ja else "this proposal")
    stance, moved = _choose_stance(ctx, kind)
    parts = [OPENINGS[lang][kind][stance].format(t=title)]
    others = [o for o in ctx.facts.get("others") or [] if o and o.get("opinion")]
    if others:
        other = ctx.pick(others)
        quote = (other.get("concerns") or [other["opinion"]])[0][:40]
        key = "agree" if other.get("stance") == stance else "disagree"
        parts.append(REACTIONS[lang][key].format(n=other.get("name", "?"), q=quote))
        if moved:
            parts.append(REACTIONS[lang]["moved"])
    memories = ctx.facts.get("memories") or []
    if memories and ctx.rng.random() < 0.6:
        remembered = str(memories[0]).split("。")[0].split(". ")[0][:60]
        parts.append(
            f"前に「{remembered}」ということもあったし。" if ctx.ja else f'I remember: "{remembered}".'
        )
    pool = CONCERNS[lang][kind]
    concerns = ctx.rng.sample(pool, k=1 if stance == "for" else 2)
    conditions = []
    if stance == "conditional" or (stance == "for" and ctx.rng.random() < 0.3):
        conditions = ctx.rng.sample(CONDITIONS[lang][kind], k=1 if stance == "for" else 2)
    return {
        "stance": stance,
        "opinion": "".join(parts) if ctx.ja else " ".join(parts),
        "concerns": concerns,
        "conditions": conditions,
    }


def aggregation(ctx: WriterContext) -> dict[str, Any]:
    opinions = [o for o in ctx.facts.get("opinions") or [] if o]
    words = STANCE_JA if ctx.ja else STANCE_EN
    groups: dict[str, list[str]] = {}
    for entry in opinions:
        groups.setdefault(entry["stance"], []).append(entry["name"])
    agreements = []
    for stance, names in groups.items():
        if len(names) > 1:
            joined = "と".join(names) if ctx.ja else " and ".join(names)
            agreements.append(
                f"{joined}は{words[stance]}で一致" if ctx.ja else f"{joined} agree: {words[stance]}"
            )
    supportive = [o for o in opinions if o["stance"] in ("for", "conditional")]
    if len(supportive) > 1:
        agreements.append("提案の目的そのものには前向き" if ctx.ja else "the aim of the proposal is welcome")
    differences = []
    if len(groups) > 1:
        differences = [f"{o['name']}: {words[o['stance']]}" for o in opinions]
    concerns = list(dict.fromkeys(c for o in opinions for c in o.get("concerns") or []))[:8]
    return {"agreements": agreements, "differences": differences, "concerns": concerns}


def consensus(ctx: WriterContext) -> dict[str, Any]:
    facts = ctx.facts
    outcome = str(facts.get("outcome") or "revise")
    aggregated = facts.get("aggregation") or {}
    opinions = [o for o in facts.get("opinions") or [] if o]
    title = (facts.get("proposal") or {}).get("title", "")
    label = (OUTCOME_JA if ctx.ja else OUTCOME_EN).get(outcome, outcome)
    words = STANCE_JA if ctx.ja else STANCE_EN
    stances = (
        "、".join(f"{o['name']}は{words[o['stance']]}" for o in opinions)
        if ctx.ja
        else ", ".join(f"{o['name']} {words[o['stance']]}" for o in opinions)
    )
    if ctx.ja:
        summary = f"「{title}」について、{stances}でした。それぞれの意見を踏まえ、結論は「{label}」とします。"
    else:
        summary = f'On "{title}": {stances}. Weighing every view, the council\'s outcome is: {label}.'
    actions = list(facts.get("conditions") or [])
    if outcome in ("revise", "another_round", "reconsider"):
        concern = (aggregated.get("concerns") or [""])[0]
        if ctx.ja:
            actions.append(
                f"懸念（{concern}）に答える形で提案を練り直す" if concern else "提案を練り直して再提出する"
            )
        else:
            actions.append(f"rework the proposal to answer: {concern}" if concern else "rework the proposal")
    elif not actions:
        actions.append("担当を決めて実行に移す" if ctx.ja else "name who is responsible and start")
    return {
        "summary": summary,
        "agreements": list(aggregated.get("agreements") or []),
        "disagreements": list(aggregated.get("differences") or []),
        "actions": actions,
    }


def judge_reply(ctx: WriterContext) -> dict[str, Any]:
    facts = ctx.facts
    criteria = list(facts.get("criteria") or ["overall"])
    labels: dict[str, str] = dict(facts.get("criterion_labels") or {})
    content = str(facts.get("content") or "")
    base = 7 if len(content) >= 40 else 5 if len(content) >= 10 else 3
    scores = []
    for name in criteria:
        score = max(1, min(10, base + ctx.rng.choice((-2, -1, 0, 0, 1, 2))))
        label = labels.get(name, name)
        reason = (
            f"{label}: {'よくできている' if score >= 7 else 'まずまず' if score >= 5 else '弱い'}"
            if ctx.ja
            else f"{label}: {'strong' if score >= 7 else 'adequate' if score >= 5 else 'weak'}"
        )
        scores.append({"criterion": name, "score": score, "reason": reason})
    overall = round(sum(s["score"] for s in scores) / len(scores), 1)
    best_id = max(scores, key=lambda s: s["score"])["criterion"]
    worst_id = min(scores, key=lambda s: s["score"])["criterion"]
    best, worst = labels.get(best_id, best_id), labels.get(worst_id, worst_id)
    rationale = (
        f"最も良いのは{best}、改善の余地が大きいのは{worst}。"
        if ctx.ja
        else f"Strongest on {best}; most room to improve on {worst}."
    )
    action = "accept" if overall >= 7 else "revise" if overall >= 4 else "reject"
    return {"scores": scores, "overall": overall, "rationale": rationale, "recommended_action": action}


STANCE_JA = {"for": "賛成", "conditional": "条件付き賛成", "against": "反対", "abstain": "棄権"}
STANCE_EN = {"for": "for", "conditional": "conditional", "against": "against", "abstain": "abstain"}
OUTCOME_JA = {
    "adopt": "採択",
    "adopt_with_conditions": "条件付き採択",
    "revise": "修正のうえ再提案",
    "reconsider": "再考",
    "another_round": "再審議",
}
OUTCOME_EN = {
    "adopt": "adopt",
    "adopt_with_conditions": "adopt with conditions",
    "revise": "revise",
    "reconsider": "reconsider",
    "another_round": "another round",
}

WRITERS = {
    "MemberOpinion": member_opinion,
    "Aggregation": aggregation,
    "Consensus": consensus,
    "JudgeReply": judge_reply,
}
