"""The simulation's summary: what the world saw, and what the server stored and called the model for during
this run (its counts before the run are subtracted, so an old database does not inflate them)."""

from __future__ import annotations

from collections import Counter
from typing import Any

PLAN_DAYS_LIMIT = 30


def server_counts(client: Any, plan_days: dict[str, set[int]], agent_ids: list[str]) -> dict[str, Any]:
    """Memories, reflections and stored plans per agent, asked of the server after the run."""
    memories, reflections, plans, plan_versions = Counter[str](), Counter[str](), Counter[str](), 0
    for agent_id in agent_ids:
        memories[agent_id] = client.memories(agent_id, limit=1)["total"]
        reflections[agent_id] = client.memories(agent_id, type="reflection", limit=1)["total"]
        for day in sorted(plan_days.get(agent_id, set()))[:PLAN_DAYS_LIMIT]:
            plan = client.plan(agent_id, day)
            plans[agent_id] += 1
            plan_versions += int(plan.get("version", 1))
    try:
        model = model_counts(client.llm_stats(window_s=30 * 86_400))
    except Exception:  # noqa: BLE001 - an older server without the stats: the summary goes without
        model = {}
    return {
        "model": model,
        "memories": dict(memories),
        "reflections": dict(reflections),
        "plans": dict(plans),
        "plan_versions": plan_versions,
    }


def own_counts(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What this run added: `after` less what the server already held `before` it (memories, reflections
    and model calls; the plans are the days this run asked for)."""

    def less(now: dict[str, int], then: dict[str, int]) -> dict[str, int]:
        return {key: value - then.get(key, 0) for key, value in now.items()}

    return {
        **after,
        "model": less(after["model"], before["model"]) if after["model"] else {},
        "memories": less(after["memories"], before["memories"]),
        "reflections": less(after["reflections"], before["reflections"]),
    }


def fallback_share(summary: dict[str, Any]) -> float:
    """The share of this run's lines that were fallbacks, the agents' replies to visitors included (0 when
    it had no turn)."""
    visitors = summary.get("visitors") or {}
    turns = summary["turns"] + visitors.get("lines", 0)
    return (summary["fallbacks"] + visitors.get("fallbacks", 0)) / turns if turns else 0.0


def model_counts(stats: dict[str, Any]) -> dict[str, int]:
    """How the model's replies fared over the run (from GET /v1/llm-calls/stats)."""
    purposes = stats.get("purposes", [])
    return {
        "calls": sum(p["calls"] for p in purposes),
        "errors": sum(p["errors"] for p in purposes),
        "repaired": sum(p.get("repaired", 0) for p in purposes),
        "reasked": sum(p.get("invalid_replies", 0) for p in purposes),
    }


def visitor_summary(visitors: Any) -> dict[str, Any]:
    """The visitors' part of the summary (visitors.VisitorReport): their conversations, their lines (each
    answered by one reply), the replies that were deflections and the visitor lines moderation held back."""
    return {
        "players": visitors.players,
        "conversations": len(visitors.conversations),
        "end_reasons": dict(visitors.end_reasons),
        "lines": visitors.lines,
        "deflected": visitors.deflected,
        "held_back": visitors.held_back,
        "fallbacks": visitors.fallbacks,
        "paced": visitors.paced,
        "rate_limited": visitors.rate_limited,
        "conversation_log": visitors.conversations,
    }


def build_summary(
    report: Any, counts: dict[str, Any], log: Any, hours: float, seed: int, visitors: Any = None
) -> dict[str, Any]:
    waited = visitors.rate_limited if visitors is not None else 0  # 429s the visitors waited out
    errors = sum(n for status, n in log.statuses.items() if status >= 400) - waited
    failures = [f for f in log.failures if not (waited and f.startswith("server 429"))]
    return {
        "model": counts.get("model", {}),
        "server_errors": sum(n for status, n in log.statuses.items() if status >= 500),
        "hours": hours,
        "seed": seed,
        "conversations": len(report.conversations),
        "end_reasons": dict(report.end_reasons),
        "turns": report.turns,
        "streamed_turns": report.streamed_turns,
        "fallbacks": report.fallbacks,
        "memories": sum(counts["memories"].values()),
        "reflections": sum(counts["reflections"].values()),
        "plans": sum(counts["plans"].values()),
        "plan_versions": counts["plan_versions"],
        "state_reports": report.state_reports,
        "plan_requests": report.plan_requests,
        "errors": errors,
        "retries": log.retries,
        "failures": failures[:20],
        "per_agent": counts,
        "visited": {k: sorted(v) for k, v in report.visited.items()},
        "plan_targets": {k: sorted(v) for k, v in report.plan_targets.items()},
        "conversation_log": report.conversations,
        "visitors": visitor_summary(visitors) if visitors is not None and visitors.players else None,
    }


def render(summary: dict[str, Any]) -> str:
    """The human-readable summary printed at the end of `machi simulate`."""
    lines = [f"Simulated {summary['hours']:g} game hours (seed {summary['seed']})."]
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(summary["end_reasons"].items())) or "none"
    lines.append(f"conversations: {summary['conversations']} (ended by: {reasons})")
    for conv in summary["conversation_log"]:
        lines.append(
            f"  day {conv['day']} {_clock(conv['time_of_day'])}  {' & '.join(conv['agents']):<18} "
            f"{conv['turns']:>2} turns  {conv['end_reason']}{'  (streamed)' if conv['streamed'] else ''}"
        )
    lines.append(
        f"turns: {summary['turns']} ({summary['streamed_turns']} streamed), fallbacks: {summary['fallbacks']} "
        f"({100 * fallback_share(summary):.0f}%)"
    )
    model = summary.get("model") or {}
    if model:
        lines.append(
            f"model calls: {model['calls']} (repaired {model['repaired']}, re-asked {model['reasked']}, "
            f"failed {model['errors']}), fallback lines: {summary['fallbacks']}"
        )
    lines.extend(_render_visitors(summary.get("visitors")))
    lines.append(f"memories: {summary['memories']}, reflections: {summary['reflections']}")
    lines.append(
        f"plans: {summary['plans']} (versions {summary['plan_versions']}), plan/now calls: {summary['plan_requests']}"
    )
    lines.append(f"state reports: {summary['state_reports']}")
    lines.append(
        f"errors (4xx/5xx): {summary['errors']} (5xx: {summary['server_errors']}), retries: {summary['retries']}"
    )
    lines.extend(f"  ! {failure}" for failure in summary["failures"])
    return "\n".join(lines)


def _render_visitors(visitors: dict[str, Any] | None) -> list[str]:
    if not visitors:
        return []
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(visitors["end_reasons"].items())) or "none"
    lines = [
        f"visitors: {visitors['players']}, conversations: {visitors['conversations']} (ended by: {reasons})"
    ]
    for conv in visitors["conversation_log"]:
        deflected = f"  ({conv['deflected']} deflected)" if conv["deflected"] else ""
        lines.append(
            f"  day {conv['day']} {_clock(conv['time_of_day'])}  {conv['name']} & {conv['agent']:<10} "
            f"{conv['lines']:>2} lines  {conv['end_reason']}{deflected}"
        )
    lines.append(
        f"visitor lines: {visitors['lines']} (each answered), deflected replies: {visitors['deflected']} "
        f"(visitor lines held back: {visitors['held_back']}), fallbacks: {visitors['fallbacks']}, "
        f"rate-limited (waited): {visitors['rate_limited']}"
    )
    return lines


def _clock(hours: float) -> str:
    minutes = int(round(hours * 60))
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
