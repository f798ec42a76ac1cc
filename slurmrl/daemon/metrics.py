"""Prometheus metrics for the daemon, on their own registry.

A private :class:`CollectorRegistry` keeps several daemons in one process
(the tests) from colliding, and keeps the endpoint free of unrelated
process metrics unless asked for.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from slurmrl.slurm.run import STATS, CallStats


class SlurmCallCollector(Collector):
    """Exports the runner's per-command counters (every Slurm command goes through it)."""

    def __init__(self, stats: CallStats = STATS) -> None:
        self.stats = stats

    def collect(self) -> Iterator[CounterMetricFamily]:
        calls = CounterMetricFamily(
            "slurmrl_slurm_calls", "Slurm commands run, by command", labels=["command"]
        )
        failures = CounterMetricFamily(
            "slurmrl_slurm_call_failures", "Slurm commands that failed, by command", labels=["command"]
        )
        seconds = CounterMetricFamily(
            "slurmrl_slurm_call_seconds", "Wall time spent in Slurm commands, by command", labels=["command"]
        )
        for name, one in sorted(dict(self.stats.by_command).items()):
            calls.add_metric([name], one.calls)
            failures.add_metric([name], one.failures)
            seconds.add_metric([name], one.seconds)
        yield calls
        yield failures
        yield seconds


# Cycle and policy latency buckets, seconds: a cycle should stay well under the
# default 30 s interval; policies are expected in milliseconds (our choice).
CYCLE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
POLICY_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5)


class DaemonMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(
            "slurmrl_cycle_seconds", "Wall time of one daemon cycle", buckets=CYCLE_BUCKETS, registry=r
        )
        self.policy_seconds = Histogram(
            "slurmrl_policy_seconds", "Time the policy took to decide", buckets=POLICY_BUCKETS, registry=r
        )
        self.jobs = Gauge("slurmrl_jobs", "Jobs in the last snapshot by state", ["state"], registry=r)
        self.in_scope = Gauge("slurmrl_jobs_in_scope", "Pending jobs the daemon may change", registry=r)
        self.changes = Counter(
            "slurmrl_changes", "Updates sent to Slurm by field", ["kind", "dry_run"], registry=r
        )
        self.deferred = Gauge(
            "slurmrl_changes_deferred",
            "Changes left for later cycles in the last cycle (over the change, call or time cap)",
            registry=r,
        )
        self.call_cap = Gauge(
            "slurmrl_call_cap",
            "Slurm calls the next cycle may make (halved while slurmctld is slow)",
            registry=r,
        )
        self.errors = Counter("slurmrl_errors", "Errors by kind", ["kind"], registry=r)
        self.preemptions = Counter(
            "slurmrl_preemptions",
            "A policy's preemptions by outcome (requeued, unanswered, failed, refused, deferred, dry_run)",
            ["outcome"],
            registry=r,
        )
        self.last_success = Gauge(
            "slurmrl_last_success_timestamp_seconds", "Unix time of the last successful cycle", registry=r
        )
        self.reverts = Counter("slurmrl_reverts", "Values given back to Slurm by field", ["kind"], registry=r)
        self.tracked = Gauge("slurmrl_jobs_tracked", "Jobs with daemon-set values in the record", registry=r)
        self.pins = Gauge("slurmrl_pins_active", "Jobs with a ReqNodeList set by the daemon", registry=r)
        self.history_jobs = Gauge(
            "slurmrl_history_jobs_read",
            "Ended jobs read back from accounting at start for history-based policies",
            registry=r,
        )
        self.notes_enabled = Gauge(
            "slurmrl_notes_enabled",
            "1 while audit notes (AdminComment) are written, 0 once refused",
            registry=r,
        )
        self.info = Gauge(
            "slurmrl_info",
            "The running configuration (value 1)",
            ["policy", "mode", "slurm_version", "dry_run"],
            registry=r,
        )
        r.register(SlurmCallCollector())

    def set_info(self, policy: str, mode: str, slurm_version: str, dry_run: bool) -> None:
        self.info.clear()
        self.info.labels(
            policy=policy, mode=mode, slurm_version=slurm_version, dry_run=str(dry_run).lower()
        ).set(1)

    def observe_jobs(self, by_state: dict[str, int]) -> None:
        self.jobs.clear()
        for state, count in by_state.items():
            self.jobs.labels(state=state).set(count)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        start_http_server(port, addr=addr, registry=self.registry)
