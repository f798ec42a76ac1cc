"""An emulation of Slurm's priority/multifactor ordering and sched/backfill.

Priority = W_age * age + W_size * size + W_fs * fairshare + W_partition,
each factor in [0, 1], as documented for priority/multifactor
(https://slurm.schedmd.com/priority_multifactor.html):

* age = min(1, time queued / PriorityMaxAge);
* job size = the mean of nodes asked / nodes in the cluster and CPUs asked
  / CPUs in the cluster; GPUs do not count (PriorityFavorSmall=NO, the
  default, favours large jobs; YES uses 1 - that ratio). Measured on Slurm
  22.05 with sprio: JobSize weight 1000 on 8 nodes of 64 CPUs gives 63 to a
  1-node 1-CPU job whatever its GPUs, 66 with 4 CPUs, 126 on 2 nodes. The
  simulator knows no CPU counts, so a job asks for one CPU per node (one
  task per node, sbatch's default); its node count is the trace's, else the
  fewest nodes that hold its GPUs. PriorityFlags=SMALL_RELATIVE_TO_TIME
  divides instead the job's CPUs (at least its nodes times the cluster's
  CPUs per node) by its time limit in minutes and by the cluster's CPUs, so
  a job of many nodes for a short time counts as large
  (``set_priority_factors`` in ``priority_multifactor.c``, 22.05 to 26.05);
  with PriorityFavorSmall=YES, 1 minus that. A job without a time limit is
  sized with the simulator's default limit (the partition's MaxTime in Slurm);
* fair-share from usage in GPU-seconds, halved every PriorityDecayHalfLife:
  Fair Tree (the default since Slurm 19.05, :mod:`slurmrl.policy.fairtree`)
  ranks (account, user) associations, account = the job's group (VC); under
  PriorityFlags=NO_FAIR_TREE the classic formula F = 2^(-U/S), U the
  account's share of all decayed usage and S its normalized shares, equal
  for every account seen so far (the account is the group, or the user);
* partition: every job runs in one partition, so its factor is 1 for all.

Slurm recomputes priorities every PriorityCalcPeriod, not at every pass; a
job arriving in between gets its priority at submission from the current
usage. Between recomputations the ranking is kept sorted incrementally, which
is also what makes this ordering cheap on deep queues. Priorities are whole
numbers, the weighted sum truncated (at least 1), as Slurm stores them; equal
ones go to the earlier submit time, then the job id, as Slurm's queue sort
does.

:func:`make_slurm` runs a cluster's own settings
(:class:`slurmrl.slurm.scheduler_conf.SchedulerSettings`): given ones, else
those the cluster carries (a cluster read from a slurm.conf, or from a spec
``slurmrl cluster from-slurm`` wrote), read on the first pass. Slurm's own
default for every PriorityWeight* is 0 and its default PriorityType
(priority/basic) orders by submit time, a plain FIFO; without any settings
the policy uses :data:`SITE_TYPICAL` instead: the weights of the
configuration example in the multifactor documentation (age 1000, fair-share
10000, job size 1000), so fair-share dominates, as it does on most shared
GPU clusters, with Slurm's defaults for everything else. Backfill is
Slurm's (:mod:`slurmrl.policy.slurm_backfill`); SchedulerType=sched/builtin
turns it off.

What still differs from a real slurmctld:

* no QOS: the QOS factor is 0 (its weight is read but adds nothing), no QOS
  limits or preemption, no TRES-weighted job size or usage (GPUs stand for
  both), no partitions beyond one with PriorityJobFactor 1, no nice values,
  no association limits (GrpTRES, MaxJobs);
* the fair-share tree is root -> group -> user with equal shares: the
  simulator has no sacctmgr share settings;
* priorities (age included) are recomputed every PriorityCalcPeriod only,
  and a job submitted in between is ranked with the factors of the last
  calculation, as Slurm does; usage is charged from the simulator's
  starts and ends rather than from slurmdbd's hourly rollups;
* the main scheduler runs at every submit and end, none of
  sched_interval/default_queue_depth/defer; backfill runs only at a
  decision at least bf_interval after the previous one, and knows no
  bf_continue, bf_max_job_user/part, bf_min_age_reserve or bf_busy_nodes;
* node choice is the placement policy's (first-fit by default), not
  select/cons_tres's (backfill reservations do hold whole nodes, as Slurm's
  ``node_space`` map does);
* no preemption, requeue, job arrays, dependencies, reservations or
  heterogeneous jobs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from slurmrl.policy.backfill import limit_of
from slurmrl.policy.base import PlacementPolicy
from slurmrl.policy.fairtree import fair_tree_factors
from slurmrl.policy.ordering.fifo import FifoOrdering
from slurmrl.policy.ordering.ranking import Ranked, Ranking
from slurmrl.policy.slurm_backfill import SlurmBackfill
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.slurm.scheduler_conf import SchedulerSettings

DAY = 86400.0
MAX_PRIORITY = float(0xFFFFFFFF)  # Slurm caps a job's priority at 2^32 - 1


@dataclass(frozen=True)
class MultifactorConfig:
    weight_age: float = 1000.0  # site-typical (Slurm default 0)
    weight_job_size: float = 1000.0  # site-typical (Slurm default 0)
    weight_fairshare: float = 10000.0  # site-typical (Slurm default 0)
    max_age: float = 7 * DAY  # PriorityMaxAge default 7-00:00:00 (slurm.conf(5))
    decay_half_life: float = 7 * DAY  # PriorityDecayHalfLife default 7-00:00:00 (slurm.conf(5))
    calc_period: float = 300.0  # PriorityCalcPeriod default 5 minutes (slurm.conf(5))
    favor_small: bool = False  # PriorityFavorSmall default NO (slurm.conf(5))
    size_relative: bool = False  # PriorityFlags=SMALL_RELATIVE_TO_TIME: job size per minute of limit
    fairshare_by: str = "group"  # classic formula's account: "group" (VC/account) or "user"
    fair_tree: bool = False  # Fair Tree on (group, user) associations instead of the classic formula
    weight_partition: float = 0.0  # Slurm default 0; one partition: a constant for every job

    @classmethod
    def from_settings(cls, settings: SchedulerSettings) -> MultifactorConfig:
        return cls(
            weight_age=float(settings.weight_age),
            weight_job_size=float(settings.weight_job_size),
            weight_fairshare=float(settings.weight_fairshare),
            max_age=settings.max_age,
            decay_half_life=settings.decay_half_life,
            calc_period=settings.calc_period,
            favor_small=settings.favor_small,
            size_relative="SMALL_RELATIVE_TO_TIME" in settings.priority_flags,
            fair_tree=settings.fair_tree,
            weight_partition=float(settings.weight_partition),
        )


# Site-typical weights (see the module docstring) with Slurm's defaults for the rest.
SITE_TYPICAL = SchedulerSettings(
    priority_type="priority/multifactor",
    weight_age=1000,
    weight_job_size=1000,
    weight_fairshare=10000,
)
_ASSOC = "\x1f"  # joins group and user into one association key under Fair Tree


def _association(job: JobView) -> str:
    return f"{job.group}{_ASSOC}{job.user}"


class _FairshareTable(dict[str, float]):
    """Fair-share factor per account; an account with no usage yet gets 1.0."""

    def __missing__(self, key: str) -> float:
        return 1.0


class MultifactorOrdering:
    def __init__(self, config: MultifactorConfig | None = None) -> None:
        self.config = config or MultifactorConfig()
        if self.config.fairshare_by not in ("group", "user"):
            raise ValueError(f"fairshare_by must be 'group' or 'user', not {self.config.fairshare_by!r}")
        self._account = _association if self.config.fair_tree else attrgetter(self.config.fairshare_by)
        self._ranking = Ranking(self._columns, self._keys, width=2)
        self._usage: dict[str, float] = {}  # decayed GPU-seconds per account, as of _usage_time
        self._usage_time: float | None = None
        self._fresh: dict[str, float] = {}  # usage of jobs that ended since the last calculation
        self._running: dict[str, tuple[str, int, float]] = {}  # job -> (account, GPUs, start)
        self._running_gpus: dict[str, int] = {}  # GPUs in use per account
        self._accounts: dict[str, int] = {}  # every account seen -> its number
        self.fairshare = _FairshareTable()
        self._fs = np.ones(0)  # fair-share factor by account number
        self._next_calc = -np.inf
        self._gpus_per_node = 1
        self._cluster_size = (1, 1)  # nodes, CPUs
        self._now = 0.0

    # -- usage and fair-share -------------------------------------------------------

    def _collect_finished(self, view: ClusterView) -> None:
        """Charge jobs that ended since the last pass for the time since the last calculation."""
        last = self._usage_time if self._usage_time is not None else view.now
        for done in view.finished:
            hit = self._running.pop(done.job.job_id, None)
            if hit is None:
                continue
            acct, gpus, _ = hit
            self._running_gpus[acct] -= gpus
            self._fresh[acct] = self._fresh.get(acct, 0.0) + gpus * max(0.0, done.end_time - last)

    def _note_starts(self, jobs: Sequence[JobView], now: float) -> None:
        last = self._usage_time if self._usage_time is not None else now
        for job in jobs:
            acct = self._account(job)
            self._running[job.job_id] = (acct, job.gpus, now)
            self._running_gpus[acct] = self._running_gpus.get(acct, 0) + job.gpus
            # Counted from the last calculation at the next one; take back what precedes the start.
            self._fresh[acct] = self._fresh.get(acct, 0.0) - job.gpus * max(0.0, now - last)

    def _resync_running(self, view: ClusterView) -> None:
        """Rebuild the running-job table from the view when it disagrees (jobs started elsewhere)."""
        if len(self._running) == len(view.running):
            return
        self._running.clear()
        self._running_gpus.clear()
        last = self._usage_time if self._usage_time is not None else view.now
        for job in view.running:
            acct = self._account(job)
            start = job.start_time if job.start_time is not None else view.now
            self._running[job.job_id] = (acct, job.gpus, start)
            self._running_gpus[acct] = self._running_gpus.get(acct, 0) + job.gpus
            if start > last:
                self._fresh[acct] = self._fresh.get(acct, 0.0) - job.gpus * (start - last)

    def recalculate(self, view: ClusterView) -> None:
        """Decay usage, add what ran since the last calculation, refresh fair-share factors."""
        cfg, now = self.config, view.now
        last = self._usage_time
        if last is not None and now > last:
            decay = 0.5 ** ((now - last) / cfg.decay_half_life) if cfg.decay_half_life > 0 else 1.0
            for acct in self._usage:
                self._usage[acct] *= decay
            for acct, gpus in self._running_gpus.items():
                self._fresh[acct] = self._fresh.get(acct, 0.0) + gpus * (now - last)
        self._usage_time = now
        for acct, used in self._fresh.items():
            self._usage[acct] = max(0.0, self._usage.get(acct, 0.0) + used)
        self._fresh.clear()
        for acct in (*self._usage, *self._running_gpus):
            self._account_number(acct)
        table = self._fair_tree() if cfg.fair_tree else self._classic()
        self.fairshare = table
        self._fs = np.fromiter(table.values(), dtype=float, count=len(table))

    def _classic(self) -> _FairshareTable:
        """F = 2^(-U/S) per account (classic_fair_share.html)."""
        total = sum(self._usage.values())
        shares = 1.0 / max(1, len(self._accounts))
        table = _FairshareTable()
        for acct in self._accounts:
            used = self._usage.get(acct, 0.0) / total if total > 0 else 0.0
            table[acct] = 2.0 ** (-used / shares)
        return table

    def _fair_tree(self) -> _FairshareTable:
        """Fair Tree's rank-based factor per (group, user) association."""
        usage = {tuple(a.split(_ASSOC, 1)): self._usage.get(a, 0.0) for a in self._accounts}
        factors = fair_tree_factors(usage)  # type: ignore[arg-type]
        table = _FairshareTable()
        for acct in self._accounts:
            table[acct] = factors[tuple(acct.split(_ASSOC, 1))]  # type: ignore[index]
        return table

    def _account_number(self, acct: str) -> int:
        number = self._accounts.get(acct)
        if number is None:
            number = self._accounts[acct] = len(self._accounts)
        return number

    # -- priorities ---------------------------------------------------------------------

    def _columns(self, job: JobView) -> tuple[float, float]:
        return (self._job_size(job), self._account_number(self._account(job)))

    def _job_size(self, job: JobView) -> float:
        """Slurm's job-size factor before PriorityFavorSmall and the clamp to [0, 1]: nodes and CPUs
        (one per node) over the cluster's, averaged; or, under SMALL_RELATIVE_TO_TIME, CPUs per
        minute of time limit over the cluster's CPUs."""
        nodes, cpus = self._cluster_size
        asked = job.num_nodes or max(1, math.ceil(job.gpus / self._gpus_per_node))
        if not self.config.size_relative:
            return (asked / nodes + asked / cpus) / 2.0
        minutes = math.ceil(limit_of(job) / 60.0)  # Slurm's limits are whole minutes (sbatch rounds up)
        size = max(asked * cpus / nodes, asked)  # CPUs: at least the nodes' share of the cluster's
        return size / minutes / cpus

    def _keys(self, rows: np.ndarray, now: float) -> np.ndarray:
        """Negated priorities of ranking rows (submit, job-size factor, account number).

        Whole numbers, as Slurm's are: jobs whose sums differ by less than one
        tie, and the ranking then serves the earlier submit time, then the
        earlier arrival (Slurm's job id: it numbers jobs as they are
        submitted), as ``sort_job_queue2`` in ``src/slurmctld/job_scheduler.c``
        does for the main scheduler and backfill alike.
        """
        cfg = self.config
        age = np.clip((now - rows[:, 0]) / cfg.max_age, 0.0, 1.0) if cfg.max_age > 0 else 1.0
        size = rows[:, 1]
        if cfg.favor_small:
            size = 1.0 - size
        size = np.clip(size, 0.0, 1.0)
        accounts = rows[:, 2].astype(np.int64)
        # Accounts first seen after the last calculation have no usage yet: factor 1.
        fs = np.ones(accounts.size)
        known = accounts < self._fs.size
        fs[known] = self._fs[accounts[known]]
        # Summed in _get_priority_internal's order, then made a whole number as Slurm stores
        # it (a uint32_t; 0 is kept for held jobs, so the least is 1).
        total = cfg.weight_age * age + cfg.weight_fairshare * fs + cfg.weight_job_size * size
        return -np.clip(np.floor(total + cfg.weight_partition), 1.0, MAX_PRIORITY)

    def priorities(self, jobs: Sequence[JobView], now: float) -> np.ndarray:
        """Slurm priority of each job under the current factors (higher runs first)."""
        rows = np.array([(j.submit_time, *self._columns(j)) for j in jobs], dtype=float).reshape(-1, 3)
        return -self._keys(rows, now)

    def order(self, view: ClusterView) -> Ranked:
        cluster = view.cluster
        self._gpus_per_node = max(1, cluster.max_gpus_per_node)
        self._cluster_size = (max(1, len(cluster.nodes)), max(1, sum(n.cpus or 1 for n in cluster.nodes)))
        self._now = view.now
        self._collect_finished(view)
        self._resync_running(view)
        self._ranking.absorb(view)  # registers new jobs' accounts before fair-share is computed
        if view.now >= self._next_calc:
            self.recalculate(view)
            self._next_calc = view.now + self.config.calc_period
            self._ranking.invalidate()
        return self._ranking.order(view)

    def started(self, job_ids: Sequence[str]) -> None:
        self._note_starts([j for j in map(self._ranking.job, job_ids) if j is not None], self._now)
        self._ranking.started(job_ids)

    def unstarted(self, job_ids: Sequence[str]) -> None:
        """Take back :meth:`started` for jobs whose start did not happen (a led pass held them back)."""
        last = self._usage_time if self._usage_time is not None else self._now
        for job_id in job_ids:
            noted = self._running.pop(job_id, None)
            if noted is not None:
                acct, gpus, start = noted
                self._running_gpus[acct] -= gpus
                self._fresh[acct] = self._fresh.get(acct, 0.0) + gpus * max(0.0, start - last)
        self._ranking.unstarted(job_ids)


class SlurmPolicy(SlurmBackfill):
    """Slurm's ordering and backfill, set up from the cluster's settings on the first pass.

    The registry builds policies from a placement alone, before any cluster
    is known; a cluster read from a site's slurm.conf carries that site's
    settings, which win over the defaults unless settings or a config were
    given explicitly.
    """

    def __init__(
        self, placement: PlacementPolicy, config: MultifactorConfig | None, settings: SchedulerSettings | None
    ) -> None:
        self._config = config
        self._explicit = settings is not None or config is not None
        self._configured = False
        super().__init__("slurm", FifoOrdering(), placement)
        self.settings = settings or SITE_TYPICAL
        self.configure(self.settings)

    def configure(self, settings: SchedulerSettings) -> None:
        """Take ``settings`` (a config given at construction keeps its weights)."""
        self.settings = settings
        if self._config is not None:
            self.ordering = MultifactorOrdering(self._config)
        elif settings.multifactor:
            self.ordering = MultifactorOrdering(MultifactorConfig.from_settings(settings))
        else:
            self.ordering = FifoOrdering()  # priority/basic: submit order
        self.max_job_test = settings.bf_max_job_test
        self.node_space_size = settings.node_space_size
        self.bf_interval = settings.bf_interval
        self.bf_resolution = settings.bf_resolution
        self.bf_window = settings.bf_window
        self.backfill = settings.backfill

    def before_pass(self, view: ClusterView) -> None:
        if not self._configured:
            self._configured = True
            site = view.cluster.scheduler
            if site is not None and not self._explicit:
                self.configure(site)
        super().before_pass(view)


def make_slurm(
    placement: PlacementPolicy,
    config: MultifactorConfig | None = None,
    *,
    settings: SchedulerSettings | None = None,
) -> SlurmPolicy:
    """Slurm's scheduler: ``settings`` if given, else the cluster's own, else :data:`SITE_TYPICAL`."""
    return SlurmPolicy(placement, config, settings)
