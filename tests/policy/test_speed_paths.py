"""The schedulers' shortcuts decide exactly what the straightforward paths decide.

Backfill's reservation skips placements that free-count bounds show must
fail, the preemptive pass skips jobs an earlier, smaller failure dooms, and
the simulator skips the passes a strict pass promised would start
nothing; each is checked here against the plain computation it stands for.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmrl.cluster import load_cluster
from slurmrl.cluster.model import Cluster, Node, NodeAlloc, Placement, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy import make_placement, make_policy
from slurmrl.policy.backfill import MAX_RESERVATION_TRIES, EasyBackfill, NodeBound, _top_counts, limit_of
from slurmrl.policy.base import OrderedScheduler
from slurmrl.policy.ordering.fifo import FifoOrdering
from slurmrl.policy.ordering.gittins import GittinsLimit
from slurmrl.policy.ordering.limits import SrtfLimit
from slurmrl.policy.ordering.oracle import SrtfOracle
from slurmrl.policy.ordering.preemptive import PreemptiveScheduler
from slurmrl.policy.ordering.tiresias import Tiresias
from slurmrl.policy.placement.common import could_hold
from slurmrl.policy.placement.consolidate import Consolidate
from slurmrl.policy.placement.first_fit import FirstFit
from slurmrl.policy.view import ClusterView, Decisions, JobView, Promise, Start, by_job_id
from slurmrl.sim.experiment import prepare
from slurmrl.sim.locality import parse_locality
from slurmrl.sim.simulator import SimConfig, Simulator
from tests.policy.busy import draw_running
from tests.sim.fixtures.clusters import MIXED
from tests.sim.test_policy_properties import job_rows, make_trace

PLACEMENTS = ("first-fit", "consolidate", "topology")


def make_cluster(racks: int, nodes: int, gpus: int = 4) -> Cluster:
    return Cluster(
        "t",
        tuple(Rack(f"r{r}", r, tuple(range(r * nodes, (r + 1) * nodes))) for r in range(racks)),
        tuple(
            Node(f"n{i}", i, i // nodes, gpus, "v100", islands_for("nvlink:2", gpus))
            for i in range(racks * nodes)
        ),
    )


@st.composite
def busy_views(draw: st.DrawFn) -> tuple[ClusterView, JobView]:
    """A partly busy two-rack cluster and a head job that may need several nodes."""
    cluster = make_cluster(2, draw(st.integers(2, 3)))
    pool = GpuPool(cluster)
    running = draw_running(
        draw,
        cluster,
        pool,
        starts=st.sampled_from([0.0, 10.0, 20.0]),
        limits=st.sampled_from([50.0, 100.0, 200.0, 400.0]),
    )
    gpus = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12]))
    nodes = draw(st.sampled_from([None, 1, 2, 3]))
    if nodes is not None and nodes * 4 < gpus:
        nodes = math.ceil(gpus / 4)
    head = JobView("head", gpus, 30.0, time_limit=100.0, num_nodes=nodes)
    return ClusterView(30.0, cluster, pool.readonly(), (head,), tuple(running), ()), head


def assert_same_reservation(
    shadow: float, mask: np.ndarray | None, plain: tuple[float, Placement | None], pool: GpuPool
) -> None:
    """The fast reservation equals the plain scan's: same shadow time, same GPUs withheld."""
    want, found = plain
    assert shadow == want
    if found is None:
        assert mask is None
    else:
        assert mask is not None
        got = {(int(n), int(g)) for n, g in zip(*mask.nonzero(), strict=True)}
        assert got == {(a.node, g) for a in found.allocs for g in a.gpus if pool.free[a.node, g]}


def plain_reservation(
    view: ClusterView, head: JobView, placement: str, limit: int = MAX_RESERVATION_TRIES
) -> tuple[float, Placement | None]:
    """Release jobs group by group in limit order and try the head after every group (``limit`` tries)."""
    place = make_placement(placement).place
    pool = view.pool.copy()
    ends = sorted((j.start_time + limit_of(j), j.job_id, j.placement) for j in view.running)  # type: ignore[operator]
    tries = 0
    for t in sorted({e for e, _, _ in ends}):
        for e, _, p in ends:
            if e == t:
                pool.release(p)  # type: ignore[arg-type]
        if pool.total_free < head.gpus:
            continue
        found = place(head, pool, view)
        if found is not None:
            return max(t, view.now), found
        tries += 1
        if tries >= limit:
            break
    return math.inf, None


@settings(max_examples=300, deadline=None)
@given(busy_views(), st.sampled_from(PLACEMENTS))
def test_reservation_matches_the_plain_scan(case: tuple[ClusterView, JobView], placement: str) -> None:
    view, head = case
    policy = EasyBackfill("t", FifoOrdering(), make_placement(placement))
    policy.before_pass(view)
    shadow, mask = policy.reservation(view, view.pool.copy(), head)
    assert_same_reservation(shadow, mask, plain_reservation(view, head, placement), view.pool)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(busy_views(), st.sampled_from(PLACEMENTS), st.integers(1, 4))
def test_reservation_keeps_the_scans_limit_on_tries(
    monkeypatch: pytest.MonkeyPatch, case: tuple[ClusterView, JobView], placement: str, limit: int
) -> None:
    """With a limit of a few tries (the heads first fit places on whole nodes are found without a
    scan), a head placed only after more groups than the limit gets no reservation, as in the scan."""
    monkeypatch.setattr("slurmrl.policy.backfill.MAX_RESERVATION_TRIES", limit)
    view, head = case
    policy = EasyBackfill("t", FifoOrdering(), make_placement(placement))
    policy.before_pass(view)
    shadow, mask = policy.reservation(view, view.pool.copy(), head)
    assert_same_reservation(shadow, mask, plain_reservation(view, head, placement, limit), view.pool)


@settings(max_examples=300, deadline=None)
@given(busy_views(), st.sampled_from(PLACEMENTS + ("type-aware", "interference-aware")))
def test_could_hold_is_the_node_bound_and_every_placement_needs_it(
    case: tuple[ClusterView, JobView], placement: str
) -> None:
    """The one-shot check a FIFO promise is ended by is NodeBound's condition, and no placement
    places a job it refuses."""
    view, head = case
    held = could_hold(head, view.pool, view.now)
    assert held == NodeBound(head, view.pool.copy(), view.now).possible()
    if not held:
        assert make_placement(placement).place(head, view.pool, view) is None


@settings(max_examples=300, deadline=None)
@given(busy_views(), st.sampled_from(PLACEMENTS), st.data())
def test_bounds_refuse_only_what_placements_refuse(
    case: tuple[ClusterView, JobView], placement: str, data: st.DataObject
) -> None:
    """A bound's verdict never contradicts the placement; first fit's and the monotone ones' are exact."""
    view, head = case
    place = make_placement(placement)
    pool = view.pool.copy()
    maker = getattr(place, "bound", None)
    bound = maker(head, pool, view.now) if maker is not None else NodeBound(head, pool, view.now)
    order = data.draw(st.permutations(list(view.running)))
    for job in [None, *order]:
        if job is not None:
            assert bound.release(job.placement) == job.gpus  # type: ignore[arg-type]
            pool.release(job.placement)  # type: ignore[arg-type]
        placed = place.place(head, pool, view) is not None
        assert bound.possible() == placed


class _PlainConsolidate(Consolidate):
    monotone = False  # no skipping of doomed jobs in the preemptive pass


class _PlainFirstFit(FirstFit):
    bound = None  # type: ignore[assignment]  # reservations with the generic bound


def _replay(policy: object, cluster: str, speed_model: str) -> list[tuple[object, ...]]:
    workload = prepare(cluster=cluster, target_load=2.0, limit=400)
    sim = Simulator(workload.trace, workload.cluster, config=SimConfig(seed=0, speed_model=speed_model))
    result = sim.run(policy)  # type: ignore[arg-type]
    return sorted(
        (r.job_id, r.start_time, r.end_time, r.nodes, r.worst_link, r.killed_at_limit, r.preemptions)
        for r in result.records
    )


def test_tiresias_skipping_doomed_jobs_changes_no_replay() -> None:
    fast = _replay(make_policy("tiresias", "consolidate"), "2x4x8", "placement")
    plain = _replay(Tiresias(_PlainConsolidate()), "2x4x8", "placement")
    assert fast == plain
    assert any(p for *_, p in fast)  # the load makes it preempt


class _RemainingKeyed(SrtfOracle):
    """SRTF as defined: every running job keyed by its remaining time at each pass."""

    key_changes_at = PreemptiveScheduler.key_changes_at

    def key(self, job: JobView, now: float) -> tuple[float, float, str]:  # type: ignore[override]
        return (self.remaining(job, now), job.submit_time, job.job_id)

    def keys(self, jobs: list[JobView], now: float) -> list[tuple[float, float, str]]:  # type: ignore[override]
        return [self.key(j, now) for j in jobs]


def _plain(base: type[PreemptiveScheduler]) -> type[PreemptiveScheduler]:
    if base is SrtfOracle:
        return _RemainingKeyed
    plain = {"key_changes_at": PreemptiveScheduler.key_changes_at, "keys_fall": False}
    return type(f"Plain{base.__name__}", (base,), plain)


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("tiresias", Tiresias),
        ("gittins-limit", GittinsLimit),
        ("srtf-oracle", SrtfOracle),
        ("srtf-limit", SrtfLimit),
    ],
)
def test_keeping_running_jobs_ranked_changes_no_replay(name: str, base: type[PreemptiveScheduler]) -> None:
    """Victims and wake-ups from the index kept between passes (re-keyed whenever the scheduler
    learns, as gittins-limit does; keyed by when their remaining time runs out, as srtf-oracle
    does; read lazily from keys that only fall, as srtf-limit's) equal those of ranking every
    running job by its key at each pass."""
    plain = _plain(base)
    assert make_policy(name, "consolidate").index is not None and plain(Consolidate()).index is None
    for speed_model in ("none", "placement"):
        fast = _replay(make_policy(name, "consolidate"), "2x4x8", speed_model)
        assert fast == _replay(plain(Consolidate()), "2x4x8", speed_model)
        assert any(p for *_, p in fast)  # the load makes it preempt


@pytest.mark.parametrize("name", ["tiresias", "srtf-oracle", "srtf-limit"])
def test_checking_every_candidate_at_once_first_changes_no_replay(name: str) -> None:
    """A displacement given up because the job's nodes could not hold it with every candidate
    stopped is one that releasing them one by one would not have found either."""

    def plain() -> PreemptiveScheduler:
        policy = make_policy(name, "consolidate")
        policy._could_hold = lambda *args: True  # type: ignore[method-assign]
        return policy  # type: ignore[return-value]

    for speed_model in ("none", "placement"):
        fast = _replay(make_policy(name, "consolidate"), "2x4x8", speed_model)
        assert fast == _replay(plain(), "2x4x8", speed_model)
        assert any(p for *_, p in fast)  # the load makes it preempt


def test_backfill_bounds_change_no_replay() -> None:
    fast = _replay(make_policy("sjf-oracle", "first-fit"), "2x4x8", "none")
    generic = make_policy("sjf-oracle", "first-fit")
    generic.placement = _PlainFirstFit()  # type: ignore[attr-defined]
    assert _replay(generic, "2x4x8", "none") == fast


@settings(max_examples=300, deadline=None)
@given(busy_views(), st.sampled_from(PLACEMENTS), st.data())
def test_reservation_with_starts_in_the_pass_matches_the_plain_scan(
    case: tuple[ClusterView, JobView], placement: str, data: st.DataObject
) -> None:
    """Jobs started earlier in the pass are released at their limits like the running ones."""
    view, head = case
    policy = EasyBackfill("t", FifoOrdering(), make_placement(placement))
    policy.before_pass(view)
    pool = view.pool.copy()
    started: list[JobView] = []
    for node in range(len(view.cluster.nodes)):
        free = pool.free_gpus(node)
        if free and data.draw(st.booleans()):
            p = Placement.of([(node, free[: data.draw(st.integers(1, len(free)))])])
            job = JobView(
                f"s{node}", p.num_gpus, 30.0, time_limit=data.draw(st.sampled_from([20.0, 70.0, 170.0]))
            )
            pool.allocate(p)
            policy.on_start(job, p)
            started.append(
                JobView(job.job_id, job.gpus, 30.0, time_limit=job.time_limit, start_time=30.0, placement=p)
            )
    shadow, mask = policy.reservation(view, pool, head)
    after = ClusterView(30.0, view.cluster, pool.readonly(), (head,), (*view.running, *started), ())
    assert_same_reservation(shadow, mask, plain_reservation(after, head, placement), pool)


def test_backfill_skips_the_reservation_only_when_no_candidate_could_fit() -> None:
    """A pass whose candidates the free nodes cannot hold starts nothing and leaves no shadow."""
    cluster = make_cluster(1, 2)
    pool = GpuPool(cluster)
    busy = Placement.of([(0, [0, 1, 2]), (1, [0, 1, 2])])
    pool.allocate(busy)
    running = (JobView("r", 6, 0.0, time_limit=100.0, start_time=0.0, placement=busy, num_nodes=2),)
    head = JobView("head", 8, 1.0, time_limit=100.0, num_nodes=2)
    packed = JobView("packed", 2, 2.0, time_limit=10.0, num_nodes=1)  # 2 GPUs, one node: no node has 2 free
    spread = JobView("spread", 2, 3.0, time_limit=10.0, num_nodes=2)  # may span both nodes' last GPUs
    policy = EasyBackfill("t", FifoOrdering(), make_placement("first-fit"))
    view = ClusterView(10.0, cluster, pool.readonly(), (head, packed), running, ())
    decisions = policy.decide(view)
    assert decisions.starts == () and math.isnan(decisions.info["shadow_time"])
    view = ClusterView(10.0, cluster, pool.readonly(), (head, packed, spread), running, ())
    policy = EasyBackfill("t", FifoOrdering(), make_placement("first-fit"))
    decisions = policy.decide(view)
    assert [s.job_id for s in decisions.starts] == ["spread"]
    assert decisions.info["shadow_time"] == 100.0


@settings(max_examples=200, deadline=None)
@given(busy_views(), st.sampled_from(PLACEMENTS))
def test_candidates_refused_on_top_counts_are_ones_placements_refuse(
    case: tuple[ClusterView, JobView], placement: str
) -> None:
    """Backfill refuses a candidate asking more than the k fullest-free nodes hold without asking the placement."""
    view, job = case
    top = _top_counts(view.pool)
    k = job.max_nodes(view.now)
    k = -1 if k is None or k >= len(top) else k
    if job.gpus > top[k]:
        assert make_placement(placement).place(job, view.pool, view) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1, 2, 4, 8]),  # GPUs
            st.one_of(st.none(), st.floats(0, 500, allow_nan=False)),  # start
            st.one_of(st.none(), st.sampled_from([0.0, 60.0, 3600.0])),  # time limit
            st.floats(0, 5000, allow_nan=False),  # attained GPU-seconds
            st.booleans(),  # the oracle knows its duration
        ),
        max_size=12,
    ),
    st.floats(0, 1000, allow_nan=False),
)
def test_srtf_keys_of_many_jobs_are_their_keys(rows: list[tuple], now: float) -> None:
    """The SRTF schedulers key the running jobs of every pass in one loop: the same keys as one by one."""
    jobs = [
        JobView(f"j{i}", g, float(i), time_limit=limit, start_time=start, attained_service=done)
        for i, (g, start, limit, done, _) in enumerate(rows)
    ]
    oracle = make_policy("srtf-oracle")
    oracle.bind_oracle({f"j{i}": 100.0 * i for i, row in enumerate(rows) if row[4]})
    for policy in (oracle, make_policy("srtf-limit")):
        assert policy.keys(jobs, now) == [policy.key(j, now) for j in jobs]  # type: ignore[attr-defined]


def _index_state(policy: PreemptiveScheduler) -> tuple[object, ...]:
    index = policy.index
    assert index is not None
    return (index._order, index._protected, index._changes, index._key, sorted(index._jobs), index.unstarted)


@pytest.mark.parametrize("form", ["list", "dict values"])
def test_the_running_index_follows_reorders_and_restarts_as_a_fresh_one_would(form: str) -> None:
    """Running jobs are followed by identity whatever their order, as a list (the daemon's) or as
    a dict's values by job id (the simulator's): a job restarted under the same id (a new view) is
    dropped and keyed again; a reordered collection changes nothing."""
    p = [Placement.of([(n, (0, 1))]) for n in range(4)]
    a, b, c = (JobView(f"j{i}", 2, 0.0, start_time=10.0 * i, placement=p[i]) for i in range(3))
    b_again = JobView("j1", 2, 0.0, start_time=500.0, placement=p[3], attained_service=40.0)  # restarted
    views = [[a, b, c], [c, a, b], [c, a, b_again], [a], [a, b]]  # the second: the same jobs reordered
    cluster = make_cluster(1, 4, gpus=2)
    followed = make_policy("tiresias", "consolidate")
    for k, jobs in enumerate(views):
        running = jobs if form == "list" else {j.job_id: j for j in jobs}.values()
        view = ClusterView(
            now=1000.0 + k, cluster=cluster, pool=GpuPool(cluster).readonly(), pending=[], running=running
        )
        followed.index.sync(view)  # type: ignore[union-attr]
        fresh = make_policy("tiresias", "consolidate")
        fresh.index.sync(view)  # type: ignore[union-attr]
        assert _index_state(followed) == _index_state(fresh), k  # type: ignore[arg-type]
        assert {followed.index._jobs[j.job_id] is j for j in jobs} == {True}  # type: ignore[union-attr]


def _bucketed(policy: Tiresias, view: ClusterView) -> list[JobView]:
    """Tiresias's ranking worked out afresh: every waiting job in its queue, each queue by submit time."""
    queues: list[list[JobView]] = [[] for _ in range(len(policy.thresholds) + 1)]
    for job in view.pending:
        counted = job.attained_service - policy._offset.get(job.job_id, 0.0)
        top = job.attained_service < policy.thresholds[0]  # offsets never count below the first threshold
        queues[0 if top else bisect.bisect_right(policy.thresholds, counted)].append(job)
    return [j for q in queues for j in sorted(q, key=lambda j: (j.submit_time, j.job_id))]


class _CheckedQueues(Tiresias):
    """Tiresias whose kept queues are checked against bucketing the pass's waiting jobs afresh."""

    checked = 0

    def rank(self, view: ClusterView) -> list[JobView]:
        kept = super().rank(view)
        plain = _bucketed(self, view)
        as_list = type(self._queues)(self._queue_of_pending, len(self.thresholds) + 1)
        listed = as_list.follow(by_job_id(list(view.pending)))  # the daemon's list, from empty queues
        assert [j.job_id for j in kept] == [j.job_id for j in plain] == [j.job_id for j in listed]
        self.checked += 1
        return kept


@pytest.mark.parametrize("starve_limit", [0.5, 10.0])
def test_tiresias_queues_kept_between_passes_rank_as_bucketing_afresh(starve_limit: float) -> None:
    """Arrivals, starts, requeues after preemption and promotions (frequent with a short starve
    limit) move the kept queues exactly as bucketing every waiting job at each pass orders them."""
    policy = _CheckedQueues(Consolidate(), starve_limit=starve_limit)
    _replay(policy, "2x4x8", "placement")
    assert policy.checked > 100 and policy.promotions > 0


class _Unpromising:
    """A policy's answers with their promise (``Decisions.promise``) taken away."""

    def __init__(self, policy: OrderedScheduler) -> None:
        self.policy = policy
        self.deployable = policy.deployable
        self.passes = 0

    def bind_oracle(self, durations: object) -> None:
        self.policy.bind_oracle(durations)  # type: ignore[arg-type]

    def decide(self, view: ClusterView) -> Decisions:
        self.passes += 1
        return replace(self.policy.decide(view), promise=None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=job_rows,
    spec=st.sampled_from(["1x2x4", "2x2x4:v100", "2x3x2", MIXED]),
    speed_model=st.sampled_from(["none", "placement", "full"]),
    placement=st.sampled_from(["first-fit", "consolidate", "topology", "type-aware", "interference-aware"]),
    locality=st.sampled_from(["pack", "relax:600", "any"]),
    enforce=st.booleans(),
)
def test_passes_fifo_promises_nothing_in_are_skipped_with_the_same_replay(
    rows, spec: str, speed_model: str, placement: str, locality: str, enforce: bool
) -> None:
    """The passes a blocked FIFO head makes idle (arrivals behind it, releases too few GPUs) are
    skipped and counted: every record, sample and the decision count equal the replay asking
    the policy at every pass."""
    cluster = load_cluster(spec)
    trace = make_trace(rows, cluster.total_gpus)
    config = SimConfig(
        speed_model=speed_model, locality=parse_locality(locality), enforce_time_limits=enforce
    )
    fast_sim, plain_sim = Simulator(trace, cluster, config=config), Simulator(trace, cluster, config=config)
    fast = fast_sim.run(make_policy("fifo", placement))
    plain_policy = _Unpromising(make_policy("fifo", placement))  # type: ignore[arg-type]
    plain = plain_sim.run(plain_policy)  # type: ignore[arg-type]
    assert fast.records == plain.records
    assert fast.samples == plain.samples
    assert fast.decisions == plain.decisions == plain_policy.passes


def test_fifo_promises_to_wait_for_its_blocked_head_and_skips_passes() -> None:
    workload = prepare(cluster="2x4x8", target_load=2.0, limit=400)
    policy = make_policy("fifo", "consolidate")
    asked = []
    decide = policy.decide

    def counting(view: ClusterView) -> Decisions:
        out = decide(view)
        asked.append(out.promise)
        return out

    policy.decide = counting  # type: ignore[method-assign]
    result = Simulator(workload.trace, workload.cluster, config=SimConfig(speed_model="none")).run(policy)
    assert (
        any(w is not None for w in asked) and len(asked) < result.decisions
    )  # promises made, passes skipped


class _QueueReading(FirstFit):
    """First fit, minus the declaration that it never reads the waiting queue."""

    queue_blind = False


def test_a_placement_that_reads_the_queue_promises_nothing() -> None:
    """A placement that may read the waiting queue may move when a job arrives behind the head."""
    policy = OrderedScheduler("fifo", FifoOrdering(), _QueueReading())
    workload = prepare(cluster="2x4x8", target_load=2.0, limit=200)
    sim = Simulator(workload.trace, workload.cluster, config=SimConfig(speed_model="none"))
    view = sim.next_view()
    while view is not None:
        out = policy.decide(view)
        assert out.promise is None
        sim.apply(out)
        view = sim.next_view()


@pytest.mark.parametrize("name", ["fifo-backfill", "sjf-limit", "sjf-oracle"])
def test_backfill_promises_up_to_its_next_pass_and_names_who_may_overtake(name: str) -> None:
    """A blocked EASY head covers only the strict passes before the next backfill pass; under SJF an
    arrival with a smaller key may rank before it, under FIFO none may."""
    policy = make_policy(name, "first-fit")
    workload = prepare(cluster="2x4x8", target_load=2.0, limit=200)
    sim = Simulator(workload.trace, workload.cluster, config=SimConfig(speed_model="none"))
    if not policy.deployable:
        policy.bind_oracle(sim.durations())
    promises, passes = [], 0
    view = sim.next_view()
    while view is not None:
        out = policy.decide(view)
        passes += 1
        if out.promise is not None:
            promises.append(out.promise)
            assert out.promise.until == policy._next_backfill  # type: ignore[attr-defined]
            assert out.promise.job.job_id in {j.job_id for j in view.pending}
        sim.apply(out)
        view = sim.next_view()
    assert promises and passes < sim.decisions  # promises made, passes skipped
    head = promises[-1].job
    larger = replace(head, job_id="larger", gpus=2 * head.gpus, time_limit=2 * limit_of(head))
    assert not promises[-1].overtaken_by(larger)
    smaller = replace(head, job_id="smaller", gpus=1, time_limit=1.0)
    # The oracle ranks a job it was told nothing of last.
    assert promises[-1].overtaken_by(smaller) is (name == "sjf-limit")
    if name == "sjf-oracle":
        assert promises[-1].overtaken_by(replace(smaller, job_id=head.job_id))


# Crowded multi-node traces on 4-GPU nodes: heads that need whole nodes, partly free nodes
# that backfilled jobs fill, arrivals between backfill passes.
crowded_rows = st.lists(
    st.tuples(
        st.floats(0, 300, allow_nan=False),  # submit
        st.floats(10, 3_000, allow_nan=False),  # duration
        st.sampled_from([1, 1, 2, 3, 4, 8]),  # GPUs
        st.just(""),
        st.one_of(st.none(), st.floats(10, 6_000, allow_nan=False)),  # time limit
    ),
    min_size=2,
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=crowded_rows,
    spec=st.sampled_from(["1x3x4", "2x2x4:v100", "2x3x2", MIXED]),
    speed_model=st.sampled_from(["none", "placement", "full"]),
    name=st.sampled_from(["fifo-backfill", "sjf-limit", "sjf-oracle"]),
    placement=st.sampled_from(["first-fit", "consolidate", "topology", "type-aware", "interference-aware"]),
    locality=st.sampled_from(["pack", "relax:600", "any"]),
    enforce=st.booleans(),
)
def test_passes_backfill_promises_nothing_in_are_skipped_with_the_same_replay(
    rows, spec: str, speed_model: str, name: str, placement: str, locality: str, enforce: bool
) -> None:
    """Strict passes between backfill passes, made idle by arrivals ranked behind the blocked head
    and releases too small for it, are skipped and counted: every record, sample and the decision
    count equal the replay asking the policy at every pass."""
    cluster = load_cluster(spec)
    trace = make_trace(rows, cluster.total_gpus)
    config = SimConfig(
        speed_model=speed_model, locality=parse_locality(locality), enforce_time_limits=enforce
    )
    fast_sim, plain_sim = Simulator(trace, cluster, config=config), Simulator(trace, cluster, config=config)
    fast = fast_sim.run(make_policy(name, placement))
    plain_policy = _Unpromising(make_policy(name, placement))  # type: ignore[arg-type]
    plain = plain_sim.run(plain_policy)  # type: ignore[arg-type]
    assert fast.records == plain.records
    assert fast.samples == plain.samples
    assert fast.decisions == plain.decisions == plain_policy.passes


def _passes_until(sim: Simulator, policy: OrderedScheduler, until: float) -> list[tuple[float, list[str]]]:
    """The passes the simulator asks ``policy`` for up to ``until``: their times and the jobs each starts."""
    seen = []
    view = sim.next_view()
    while view is not None and view.now <= until:
        out = policy.decide(view)
        seen.append((view.now, [s.job_id for s in out.starts]))
        sim.apply(out)
        view = sim.next_view()
    return seen


def test_an_arrival_that_may_overtake_the_head_voids_the_promise() -> None:
    """Under SJF a short arrival ranks before the blocked head: its pass comes, and starts it."""
    cluster = load_cluster("1x1x8")
    rows = [(0.0, 1000.0, 4, "", 2000.0), (10.0, 500.0, 8, "", 600.0)]
    rows += [(15.0, 50.0, 1, "", 9000.0), (20.0, 50.0, 1, "", 60.0)]
    sim = Simulator(make_trace(rows, 8), cluster, config=SimConfig(speed_model="none"))
    seen = _passes_until(sim, make_policy("sjf-limit", "first-fit"), 20.0)
    # 10: j1 waits (backfill starts nothing, 4 GPUs free but j2 and j3 to come); 15: j2's limit
    # makes it rank behind j1 and the backfill pass waits until 40, so no pass; 20: j3 ranks first.
    assert seen == [(0.0, ["j0"]), (10.0, []), (20.0, ["j3"])]
    assert sim.decisions == 4  # the pass at 15 is counted


def test_backfill_that_fills_the_nodes_before_the_head_leaves_no_promise() -> None:
    """First fit gives the head (8 GPUs on two 4-GPU nodes) the first two nodes with free GPUs; once
    a backfilled job fills node 0, nodes 1 and 2 hold it, though no GPU was freed: the next pass
    (an arrival behind it) starts it."""
    cluster = load_cluster("1x3x4")
    rows = [(0.0, 1000.0, 2, "", 1000.0), (0.0, 500.0, 8, "", 600.0), (0.0, 50.0, 2, "", 100.0)]
    rows += [(10.0, 50.0, 1, "", 100.0)]
    trace = make_trace(rows, 12)
    config = SimConfig(speed_model="none")
    sim = Simulator(trace, cluster, config=config)
    policy = make_policy("fifo-backfill", "first-fit")
    view = sim.next_view()
    assert view is not None
    out = policy.decide(view)
    assert [s.job_id for s in out.starts] == ["j0", "j2"] and out.promise is None
    fast = Simulator(trace, cluster, config=config).run(make_policy("fifo-backfill", "first-fit"))
    plain = Simulator(trace, cluster, config=config).run(
        _Unpromising(make_policy("fifo-backfill", "first-fit"))  # type: ignore[arg-type]
    )
    assert fast.records == plain.records
    assert {r.job_id: r.start_time for r in fast.records}["j1"] == 10.0


def test_the_next_backfill_pass_voids_the_promise() -> None:
    """A job that arrived behind the head and was skipped may start by backfill: the first event
    at or after the backfill interval brings a pass."""
    cluster = load_cluster("1x1x8")
    rows = [(0.0, 1000.0, 4, "", 2000.0), (10.0, 500.0, 8, "", 600.0), (15.0, 50.0, 1, "", 100.0)]
    rows += [(45.0, 50.0, 1, "", 100.0)]
    sim = Simulator(make_trace(rows, 8), cluster, config=SimConfig(speed_model="none"))
    seen = _passes_until(sim, make_policy("fifo-backfill", "first-fit"), 45.0)
    assert seen == [(0.0, ["j0"]), (10.0, []), (45.0, ["j2", "j3"])]


def _started(sim: Simulator, *starts: tuple[str, int, tuple[int, ...]]) -> None:
    sim.apply(Decisions(starts=tuple(Start(j, Placement((NodeAlloc(n, g),))) for j, n, g in starts)))


def test_only_a_release_that_could_place_the_job_waited_for_ends_the_promise() -> None:
    """FIFO's head needs 4 GPUs on one node: an arrival, then a release leaving 4 free on two
    nodes, make no pass (both counted as decisions); the release freeing a whole node does."""
    cluster = load_cluster("1x2x4")
    rows = [(0.0, 100.0, 2, "", None), (0.0, 300.0, 2, "", None), (10.0, 50.0, 4, "", None)]
    rows += [(50.0, 50.0, 1, "", None), (0.0, 60.0, 1, "", None)]
    sim = Simulator(make_trace(rows, 8), cluster, config=SimConfig(speed_model="none"))
    assert sim.next_view() is not None
    _started(sim, ("j0", 0, (0, 1)), ("j1", 1, (0, 1)), ("j4", 1, (2,)))
    fifo = make_policy("fifo", "first-fit")
    view = sim.next_view()
    assert view is not None and view.now == 10.0
    out = fifo.decide(view)
    assert not out.starts and out.promise is not None and out.promise.job.job_id == "j2"
    sim.apply(out)
    view = sim.next_view()
    assert view is not None and view.now == 100.0  # not the arrival at 50, nor j4's end at 60
    assert sim.decisions == 4  # the two skipped passes are counted
    assert [s.job_id for s in fifo.decide(view).starts] == ["j2", "j3"]  # j3 waited behind j2


def test_a_wake_up_voids_the_promise() -> None:
    """A pass that promised to wait for an 8-GPU job is asked again at its wake-up, though no GPU freed."""
    cluster = load_cluster("1x1x8")
    trace = make_trace([(0.0, 1000.0, 4, "", None), (10.0, 50.0, 8, "", None), (20.0, 50.0, 1, "", None)], 8)
    sim = Simulator(trace, cluster, config=SimConfig(speed_model="none"))
    assert sim.next_view() is not None
    _started(sim, ("j0", 0, (0, 1, 2, 3)))
    view = sim.next_view()
    assert view is not None and view.now == 10.0
    (waiting,) = view.pending
    sim.apply(Decisions(promise=Promise(waiting), wake_at=15.0))
    view = sim.next_view()
    assert view is not None and view.now == 15.0  # the wake-up, not the arrival at 20
    sim.apply(Decisions(promise=Promise(waiting)))
    assert sim.next_view() is not None and sim.now == 1000.0  # arrival at 20 skipped, release at 1000
    assert sim.decisions == 4  # the skipped arrival's pass is counted


def test_a_job_that_may_spread_voids_the_promise() -> None:
    """A head that may not spread over nodes until it has waited (``relax``) is placed the
    moment it may, though no GPU freed and only arrivals came since the promise."""
    cluster = load_cluster("1x4x2")
    rows = [(0.0, 9000.0, 1, "", None)] * 4 + [(10.0, 50.0, 4, "", None), (50.0, 50.0, 1, "", None)]
    trace = make_trace(rows, 8)
    sim = Simulator(
        trace, cluster, config=SimConfig(speed_model="none", locality=parse_locality("relax:100"))
    )
    view = sim.next_view()
    assert view is not None
    _started(sim, *((f"j{n}", n, (0,)) for n in range(4)))
    fifo = make_policy("fifo", "first-fit")
    view = sim.next_view()
    assert view is not None and view.now == 10.0
    out = fifo.decide(view)
    assert not out.starts and out.promise is not None  # two nodes of two GPUs: none has them
    sim.apply(out)
    view = sim.next_view()
    assert view is not None and view.now == 110.0  # its spread, not the arrival at 50
    assert [s.job_id for s in fifo.decide(view).starts] == ["j4"]


def test_an_answer_that_stops_a_job_promises_nothing() -> None:
    """The stopped job waits again, which the pass never saw: the next pass comes at once."""
    cluster = load_cluster("1x2x4")
    trace = make_trace([(0.0, 1000.0, 4, "", None), (0.0, 1000.0, 4, "", None), (10.0, 50.0, 8, "", None)], 8)
    sim = Simulator(trace, cluster, config=SimConfig(speed_model="none"))
    assert sim.next_view() is not None
    _started(sim, ("j0", 0, (0, 1, 2, 3)), ("j1", 1, (0, 1, 2, 3)))
    view = sim.next_view(skip_when_full=False)  # a preemptive policy is asked on a full cluster
    assert view is not None and view.now == 10.0
    (waiting,) = view.pending
    sim.apply(Decisions(preempt=("j0",), promise=Promise(waiting)))  # 4 GPUs free: not enough for it
    view = sim.next_view(skip_when_full=False)
    assert view is not None and view.now == 10.0 and {j.job_id for j in view.pending} == {"j0", "j2"}
