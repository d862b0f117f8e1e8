"""GET /metrics: Prometheus exposition of the LLM queue, fallbacks, background jobs and the event relay.

Read at scrape time from the scheduler and the job table by a custom collector in a per-app
CollectorRegistry (tests build many apps in one process; the global registry would mix them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from backend.jobs import repo as job_store
from backend.llm.scheduler import find_scheduler

router = APIRouter(tags=["health"])


class MachiCollector(Collector):
    def __init__(self, state: Any) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        scheduler = find_scheduler(self.state.llm)
        if scheduler is not None:
            yield from _queue_metrics(scheduler.snapshot())
        counts = job_store.counts(self.state.engine)
        jobs = GaugeMetricFamily("machi_jobs", "Persisted background jobs by status.", labels=["status"])
        for status, n in counts.items():
            jobs.add_metric([status], n)
        yield jobs
        outcomes = CounterMetricFamily(
            "machi_job_runs", "Job runs by outcome since start.", labels=["outcome"]
        )
        for outcome, n in sorted(self.state.jobs.outcomes.items()):
            outcomes.add_metric([outcome], n)
        yield outcomes
        yield GaugeMetricFamily(
            "machi_background_tasks",
            "Background tasks running in the process.",
            value=self.state.tasks.pending,
        )
        if (relay := getattr(self.state, "event_relay", None)) is not None:
            yield _relay_metric(relay)


def _relay_metric(relay: Any) -> Metric:
    """Events this process relayed to the others, received from them (read only while a /v1/events socket is
    open here), and dropped (queue full)."""
    relayed = CounterMetricFamily(
        "machi_events_relayed", "Events between this process and the others on its database.", labels=["way"]
    )
    for way, n in (("sent", relay.sent), ("received", relay.received), ("dropped", relay.dropped)):
        relayed.add_metric([way], n)
    return relayed


def _queue_metrics(snap: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily("machi_llm_concurrency", "Scheduler slots.", value=snap["concurrency"])
    yield GaugeMetricFamily(
        "machi_llm_in_flight", "Model calls the provider is working on.", value=snap["in_flight"]
    )
    yield CounterMetricFamily(
        "machi_turn_fallbacks", "Turns answered with a fallback line.", value=snap["fallbacks"]
    )
    depth = GaugeMetricFamily("machi_llm_queue_depth", "Calls waiting for a slot.", labels=["priority"])
    calls = CounterMetricFamily("machi_llm_calls", "Model calls finished.", labels=["priority"])
    errors = CounterMetricFamily("machi_llm_call_errors", "Model calls that failed.", labels=["priority"])
    wait = SummaryMetricFamily("machi_llm_queue_wait_seconds", "Time waited for a slot.", labels=["priority"])
    recent = GaugeMetricFamily(
        "machi_llm_queue_wait_recent_seconds",
        "Recent wait for a slot (last 512 calls per priority).",
        labels=["priority", "quantile"],
    )
    for name, stats in snap["priorities"].items():
        depth.add_metric([name], stats["waiting"])
        calls.add_metric([name], stats["completed"])
        errors.add_metric([name], stats["errors"])
        wait.add_metric([name], count_value=stats["granted"], sum_value=stats["wait_total_s"])
        recent.add_metric([name, "0.5"], stats["wait_p50_s"])
        recent.add_metric([name, "0.95"], stats["wait_p95_s"])
    yield from (depth, calls, errors, wait, recent)


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """Prometheus text format. Public like /health (no dialogue or ids, only counts)."""
    state = request.app.state
    registry = getattr(state, "metrics_registry", None)
    if registry is None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(MachiCollector(state))
        state.metrics_registry = registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
