"""The party scenario's report as text (scenario.py measures; this prints): knowledge, invitations, plans,
attendance, density, model use, line variety, and the news slot by slot (party_news.py): per telling what
arrived in the listener's memory, passed-on tellings, interview answers naming the host and the time,
fallbacks and seconds per turn."""

from __future__ import annotations

from typing import Any

from backend.simulate.party_news import render_tellings
from backend.simulate.variety import TARGETS


def _render_day1(report: dict[str, Any]) -> str:
    others, model, variety = report["agents"] - 1, report["model"], report["variety"]
    lines = [
        f"party scenario, first day only ({report.get('first_hours', 18):g} game hours): {report['agents']} agents, host {report['host']}, at {report['place']}",
        f"knew of it after day 1: by memory {_share(report['knew_day1']['knew_by_memory'], others)}, "
        f"by interview {_share(report['knew_day1']['knew_by_interview'], others)}",
        f"relationship density: {report['density']['start']:.3f} -> {report['density']['end']:.3f}",
        f"model calls per agent per game day: {model['calls_per_agent_day']:.1f}; by purpose {model['by_purpose']}",
        f"lines: {report['turns']} ({report['fallbacks']} fell back) in {variety['conversations']} conversations",
        *_variety_lines(variety),
        *_news_lines(report),
    ]
    return "\n".join(lines)


def _share(part: list[str] | None, whole: int) -> str:
    if part is None:
        return "n/a (no interview route)"
    return f"{len(part)}/{whole} = {100 * len(part) / whole:.0f}%" if whole else "0/0"


def render(report: dict[str, Any]) -> str:
    if report.get("days", 2) < 2:
        return _render_day1(report)
    others = report["agents"] - 1
    invited, heard = report["invited"], report["heard"]
    came = [a for a in invited if a in report["at_place"]]
    planned = [a for a in invited if a in report["plans_hold"]]
    heard_planned = [a for a in heard if a in report["plans_hold"]]
    heard_came = [a for a in heard if a in report["at_place"]]
    variety = report["variety"]
    model = report["model"]
    lines = [
        f"party scenario: {report['agents']} agents, host {report['host']}, at {report['place']}",
        f"knew of it after day 1: by memory {_share(report['knew_day1']['knew_by_memory'], others)}, "
        f"by interview {_share(report['knew_day1']['knew_by_interview'], others)}",
        f"knew of it after day 2: by memory {_share(report['knew_day2']['knew_by_memory'], others)}, "
        f"by interview {_share(report['knew_day2']['knew_by_interview'], others)}   (paper: 52%)",
        f"invited by the host: {len(invited)}; their day-2 plan holds it: {_share(planned, len(invited))}; "
        f"at the place when it starts: {_share(came, len(invited))}   (paper: 5 of 12 came)",
        f"everyone who heard: {len(heard)}; plan holds it: {_share(heard_planned, len(heard))}; "
        f"at the place: {_share(heard_came, len(heard))}",
        f"relationship density: {report['density']['start']:.3f} -> {report['density']['end']:.3f}   "
        "(paper: 0.167 -> 0.74)",
        f"model calls per agent per game day: {model['calls_per_agent_day']:.1f}, prompt tokens "
        f"{model['prompt_tokens_per_agent_day']:.0f}; by purpose {model['by_purpose']}",
        f"lines: {report['turns']} ({report['fallbacks']} fell back) in {variety['conversations']} conversations",
        *_variety_lines(variety),
    ]
    lines.extend(_news_lines(report))
    return "\n".join(lines)


def _variety_lines(variety: dict[str, Any]) -> list[str]:
    """Repetition by whole lines and by sentences, self-reference and small talk passed on, with the targets."""
    out = [f"variety: a line said twice in one conversation: {variety['repeated_in_a_conversation']}"]
    for day, figures in variety["days"].items():
        out.append(f"  day {day}: {figures['lines']} lines, {100 * figures['repeated_share']:.1f}% said word for "
                   "word elsewhere that day")  # fmt: skip
    said = variety.get("sentences")
    if said is None:
        return out
    over = said["over_twice_in_a_conversation"]
    examples = f" (e.g. {' / '.join(said['over_twice_examples'])})" if over else ""
    out.append(
        f"sentences said more than twice in one conversation: {over}{examples}   ({TARGETS['sentences']})"
    )
    for day, figures in said["days"].items():
        most = ", ".join(f"{text[:30]!r} x{n}" for text, n in figures["most_said"])
        out.append(f"  day {day}: {figures['sentences']} sentences ({figures['distinct']} distinct), "
                   f"{100 * figures['repeated_share']:.1f}% repeat one said earlier that day "
                   f"({TARGETS['day_share']}); most said: {most}")  # fmt: skip
    selves, small = variety["self_reference"], variety["small_talk_passed_on"]
    out.append(f"lines where the speaker names itself in the third person: {selves['lines']}   "
               f"({TARGETS['self_reference']})")  # fmt: skip
    out.extend(f"  {e['speaker']}: {e['line'][:100]}" for e in selves["examples"])
    out.append(f"small talk passed on as news: {small['count']} of {small['passed_on']} tellings passed on   "
               f"({TARGETS['small_talk']})")  # fmt: skip
    out.extend(f"  {e['teller']} passed on {e['origin']}'s {e['text'][:80]!r}" for e in small["examples"])
    return out


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} = {100 * part / whole:.0f}%" if whole else "0/0"


def _answers(report: dict[str, Any]) -> list[str]:
    """Per interview snapshot: how many answers name the host and the time (and fell back), then each answer."""
    out = []
    for snap in ("knew_day1", "knew_day2"):
        answers = (report.get(snap) or {}).get("answers") or {}
        if not answers:
            continue
        both = sum(a["host"] and a["time"] for a in answers.values())
        fell = sum(a["fallback"] for a in answers.values())
        again = sum(a.get("tries", 1) > 1 for a in answers.values())
        out.append(f"interviews after day {snap[-1]}: name the host and the time {_pct(both, len(answers))}; "
                   f"host {sum(a['host'] for a in answers.values())}, time {sum(a['time'] for a in answers.values())}"
                   f", fell back {fell}, asked again {again}")  # fmt: skip
        for agent_id, a in sorted(answers.items()):
            marks = f"host {'ok' if a['host'] else 'no'}, time {'ok' if a['time'] else 'no'}"
            marks += f", {a['tries']} calls" if a.get("tries", 1) > 1 else ""
            said = " ".join(a["answer"].split())[:160]
            out.append(f"  {agent_id} ({marks}{', fallback' if a['fallback'] else ''}): {said}")
    return out


def _news_lines(report: dict[str, Any]) -> list[str]:
    """The news slot by slot: tellings, what arrived, passed on, interviews; fallbacks and seconds per turn."""
    counts = report.get("telling_counts")
    if counts is None:
        return []
    remembered, arrived = counts["remembered"], counts["arrived"]
    slots = ", ".join(f"{slot} {_pct(n, remembered)}" for slot, n in arrived.items())
    turn_s = report["model"].get("turn_s") or {}
    lines = [
        f"tellings of the party: {counts['tellings']} ({counts['told']} told, {counts['partial']} partial: "
        f"a slot left out); passed on by someone not the host: {counts['passed_on']}",
        f"in the listener's memory ({remembered} stored): {slots}; all four {_pct(counts['all_arrived'], remembered)}"
        f"; wrong host {counts['wrong_host']}"
        + (
            "" if report.get("memories_stored", True) else " (some lines were still waiting to be remembered)"
        ),
        *render_tellings(report.get("tellings") or []),
        *_answers(report),
        f"fallbacks: {_pct(report['fallbacks'], report['turns'])} of turns; seconds per turn (model call): "
        f"median {turn_s.get('p50', 0.0):.2f}, mean {turn_s.get('mean', 0.0):.2f}",
        *_minds(report),
    ]
    return lines


def _minds(report: dict[str, Any]) -> list[str]:
    """Day plans by source, talks a farewell ended inside an invitation, the council's opinions."""
    out = []
    if plans := report.get("plans"):
        out.append(f"day plans by source (model, repaired: the model's; fallback: not): {plans['counts']}")
    if farewells := report.get("farewells"):
        inside = farewells["inside_an_invitation"]
        out.append(f"talks ended by a farewell: {farewells['ended_by_farewell']}; of them on a line that invited "
                   f"someone: {len(inside)} (target 0)")  # fmt: skip
        out.extend(f"  {row['session_id']}: {' '.join(row['line'].split())[:160]}" for row in inside)
    if council := report.get("council"):
        opinions = council["opinions"]
        real = sum(o["model"] and o["sentence"] for o in opinions)
        out.append(f"council ({council['status']}, outcome {council['outcome']}): opinions that are the model's "
                   f"own real sentences {_pct(real, len(opinions))}")  # fmt: skip
        for o in opinions:
            marks = ("" if o["model"] else "fallback, ") + ("sentence" if o["sentence"] else "no sentence")
            out.append(f"  {o['agent_id']} ({o['stance']}; {marks}): {' '.join(o['opinion'].split())[:160]}")
    return out
