from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Placement
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.backfill import EasyBackfill
from slurmrl.policy.ordering.fifo import FifoOrdering
from slurmrl.policy.ordering.multifactor import make_slurm
from slurmrl.policy.placement.first_fit import FirstFit
from slurmrl.policy.slurm_backfill import NodeSpace, SlurmBackfill, TimeMap, _could_start, _could_start_all
from slurmrl.policy.view import ClusterView, JobView
from slurmrl.slurm.scheduler_conf import SchedulerSettings
from tests.policy.busy import draw_running, make_cluster


def busy_view(now: float, pending: tuple[JobView, ...]) -> ClusterView:
    """Two 4-GPU nodes: node 0 busy until t=1000, half of node 1 until t=100 (time limits)."""
    cluster = make_cluster(2)
    pool = GpuPool(cluster)
    long_run, short_run = Placement.of([(0, [0, 1, 2, 3])]), Placement.of([(1, [0, 1])])
    pool.allocate(long_run)
    pool.allocate(short_run)
    running = (
        JobView("r0", 4, 0.0, time_limit=1000.0, start_time=0.0, placement=long_run),
        JobView("r1", 2, 0.0, time_limit=100.0, start_time=0.0, placement=short_run),
    )
    return ClusterView(now, cluster, pool.readonly(), pending, running, ())


def slurm_backfill(**kw: float) -> SlurmBackfill:
    return SlurmBackfill("slurm", FifoOrdering(), FirstFit(), bf_resolution=1.0, **kw)  # type: ignore[arg-type]


def test_easy_would_delay_the_second_job_but_slurm_backfill_does_not() -> None:
    # "wide" (8 GPUs) can start at 1000 when node 0 frees up: reserved [1000, 1500) on both nodes.
    # "node" (4 GPUs) fits node 1 from t=100, done by 600: reserved [100, 600) on node 1.
    # "small" fits the 2 free GPUs now but would hold them until 300, into "node"'s reservation.
    pending = (
        JobView("wide", 8, 0.0, time_limit=500.0),
        JobView("node", 4, 0.0, time_limit=500.0),
        JobView("small", 2, 0.0, time_limit=300.0),
    )
    view = busy_view(0.0, pending)
    easy = EasyBackfill("fifo-backfill", FifoOrdering(), FirstFit()).decide(view)
    assert [s.job_id for s in easy.starts] == ["small"]  # ends by 1000: EASY only protects "wide"
    slurm = slurm_backfill()
    d = slurm.decide(view)
    assert d.starts == ()
    assert d.info["shadow_time"] == 1000.0
    # Once "node" holds node 1 from 100, nothing left could start now: the pass ends there.
    assert slurm.last_reservations == 2


def test_a_job_that_delays_no_reservation_is_backfilled() -> None:
    pending = (
        JobView("wide", 8, 0.0, time_limit=500.0),
        JobView("node", 4, 0.0, time_limit=500.0),
        JobView("quick", 2, 0.0, time_limit=90.0),  # done before "node" can start at 100
    )
    d = slurm_backfill().decide(busy_view(0.0, pending))
    assert [s.job_id for s in d.starts] == ["quick"]
    assert [(a.node, a.gpus) for a in d.starts[0].placement.allocs] == [(1, (2, 3))]


def test_jobs_starting_beyond_the_window_get_no_reservation() -> None:
    pending = (
        JobView("wide", 8, 0.0, time_limit=500.0),  # earliest start 1000
        JobView("small", 2, 0.0, time_limit=300.0),
    )
    # Window 900 s: "wide" cannot start within it, so nothing is reserved and "small"
    # runs now although it would still end before 1000 either way.
    narrow = slurm_backfill(bf_window=900.0)
    d = narrow.decide(busy_view(0.0, pending))
    assert [s.job_id for s in d.starts] == ["small"]
    assert narrow.last_reservations == 0
    assert math.isnan(d.info["shadow_time"])
    # The same queue with the window reaching 1000: "wide" is reserved and "small" still fits before it.
    wide = slurm_backfill(bf_window=1000.0)
    d = wide.decide(busy_view(0.0, pending))
    assert [s.job_id for s in d.starts] == ["small"]
    assert wide.last_reservations == 1 and d.info["shadow_time"] == 1000.0


def test_window_decides_whether_a_long_job_is_held_back() -> None:
    # "long" would run past 1000 on node 1 and so delay "wide" once "wide" is reserved.
    pending = (JobView("wide", 8, 0.0, time_limit=500.0), JobView("long", 2, 0.0, time_limit=5000.0))
    assert slurm_backfill(bf_window=1000.0).decide(busy_view(0.0, pending)).starts == ()
    starts = slurm_backfill(bf_window=900.0).decide(busy_view(0.0, pending)).starts
    assert [s.job_id for s in starts] == ["long"]


def test_max_job_test_and_builtin_scheduler_limit_backfill() -> None:
    pending = (JobView("wide", 8, 0.0, time_limit=500.0), JobView("quick", 2, 0.0, time_limit=90.0))
    assert slurm_backfill(max_job_test=1).decide(busy_view(0.0, pending)).starts == ()
    assert len(slurm_backfill(max_job_test=2).decide(busy_view(0.0, pending)).starts) == 1
    builtin = make_slurm(FirstFit(), settings=SchedulerSettings(scheduler_type="sched/builtin"))
    assert builtin.decide(busy_view(0.0, pending)).starts == ()


def test_max_job_test_counts_only_the_jobs_actually_tested() -> None:
    """backfill.c counts bf_last_depth_try just before _try_sched: a job with too few nodes
    outside the reservations at every start in the window is passed over and not counted."""
    pending = (
        JobView("wide", 8, 0.0, time_limit=500.0),  # reserves both nodes from 1000 to the window's end
        JobView("pair", 2, 0.0, time_limit=2000.0, num_nodes=2),  # never two free nodes: untested
        JobView("quick", 2, 0.0, time_limit=90.0),
    )
    policy = slurm_backfill(max_job_test=2, bf_window=1200.0)
    d = policy.decide(busy_view(0.0, pending))
    assert [s.job_id for s in d.starts] == ["quick"]
    assert policy.last_tested == 2  # wide and quick
    # A job tested in its place counts (three: reserved on node 1 from 100): quick is never tried.
    tried = (pending[0], JobView("three", 3, 0.0, time_limit=20.0), pending[2])
    assert slurm_backfill(max_job_test=2, bf_window=1200.0).decide(busy_view(0.0, tried)).starts == ()


def test_node_space_counts_records_as_add_reservation_does() -> None:
    space = NodeSpace(0.0, 1000.0, 1.0)
    assert space.records == 1
    space.add(100.0, 200.0, (0,))  # splits where it starts and where it ends
    assert (space.records, space.slices) == (3, [[0, 100, 0], [100, 200, 1], [200, 1000, 0]])
    space.add(200.0, 300.0, (0,))  # starts on a boundary; merges with its twin before it
    assert (space.records, space.slices) == (4, [[0, 100, 0], [100, 300, 1], [300, 1000, 0]])
    space.add(0.0, 50.0, (1,))  # at the slice's own start: still a record, the first left empty
    assert space.records == 6 and space.slices[:3] == [[0, 0, 0], [0, 50, 2], [50, 100, 0]]
    space.add(2000.0, 2100.0, (1,))  # after the window: nothing
    assert space.records == 6


def test_a_full_node_space_table_ends_the_pass() -> None:
    pending = (
        JobView("wide", 8, 0.0, time_limit=500.0),  # reserved: 3 records
        JobView("node", 4, 0.0, time_limit=500.0),  # no room for its reservation: the pass stops
        JobView("quick", 2, 0.0, time_limit=90.0),
    )
    assert [s.job_id for s in slurm_backfill().decide(busy_view(0.0, pending)).starts] == ["quick"]
    settings = SchedulerSettings(priority_type="priority/basic", bf_resolution=1, bf_node_space_size=2)
    small = make_slurm(FirstFit(), settings=settings)
    assert small.decide(busy_view(0.0, pending)).starts == ()
    assert small.last_reservations == 1


def test_backfill_runs_at_most_every_interval() -> None:
    pending = (JobView("wide", 8, 0.0, time_limit=500.0), JobView("quick", 2, 0.0, time_limit=30.0))
    policy = slurm_backfill(bf_interval=30.0)
    policy.decide(busy_view(0.0, (pending[0],)))  # a pass with nothing to backfill
    assert policy.decide(busy_view(10.0, pending)).starts == ()  # 10 s later: no backfill pass yet
    assert [s.job_id for s in policy.decide(busy_view(30.0, pending)).starts] == ["quick"]


def pinned_view(pending: tuple[JobView, ...]) -> ClusterView:
    """Three 4-GPU nodes; half of n0 busy until t=1000."""
    cluster = make_cluster(3)
    pool = GpuPool(cluster)
    held = Placement.of([(0, [0, 1])])
    pool.allocate(held)
    running = (JobView("r0", 2, 0.0, time_limit=1000.0, start_time=0.0, placement=held),)
    return ClusterView(0.0, cluster, pool.readonly(), pending, running, ())


def test_a_job_with_a_node_list_withholds_its_nodes_instead_of_blocking_the_queue() -> None:
    """_schedule (job_scheduler.c): a job whose req_node_bitmap covers its node count clears
    fail_by_part and its nodes leave avail_node_bitmap; the jobs after it go on elsewhere."""
    pinned = JobView("pinned", 4, 0.0, time_limit=500.0, num_nodes=1, required_nodes=("n0",))
    two = JobView("two", 2, 1.0, time_limit=500.0)  # first fit would take n0's two free GPUs
    four = JobView("four", 4, 2.0, time_limit=500.0)
    main_only = slurm_backfill(backfill=False)  # type: ignore[arg-type]
    d = main_only.decide(pinned_view((pinned, two, four)))
    assert [(s.job_id, s.placement.nodes) for s in d.starts] == [("two", (1,)), ("four", (2,))]
    # A node list shorter than the job's node count blocks the queue as any job does.
    short = JobView("short", 8, 0.0, time_limit=500.0, num_nodes=2, required_nodes=("n0",))
    assert slurm_backfill(backfill=False).decide(pinned_view((short, two, four))).starts == ()  # type: ignore[arg-type]


def test_a_job_with_a_node_list_runs_only_there_and_backfill_reserves_them() -> None:
    pinned = JobView("pinned", 4, 0.0, time_limit=500.0, num_nodes=1, required_nodes=("n0",))
    wide = JobView("wide", 12, 1.0, time_limit=500.0)  # the main scheduler stops here
    quick = JobView("quick", 2, 2.0, time_limit=100.0)
    late = JobView("late", 2, 3.0, time_limit=5000.0)  # would run on n1 past wide's start at 1000
    policy = slurm_backfill()
    d = policy.decide(pinned_view((pinned, wide, quick, late)))
    # pinned never lands on the idle n1/n2; backfill reserves n0 for it from 1000 and every
    # node for wide from 1500, so quick (done by 100) fits n0's free GPUs and late nowhere.
    assert [(s.job_id, s.placement.nodes) for s in d.starts] == [("quick", (0,))]
    assert policy.last_reservations == 2


@pytest.mark.slurm
def test_slurm_itself_withholds_a_node_list_and_goes_on() -> None:
    """What the emulation copies, on the test cluster: behind a job pinned to a busy node, a job
    barred from every other node is still tried by the main scheduler (select_nodes finds its
    one node withheld: ReqNodeNotAvail); behind a job that is merely barred, it waits on the
    partition (Priority).

    Both releases withhold the pinned job's nodes and go on (_schedule in job_scheduler.c,
    the same at slurm-22-05-8-1 and slurm-24-11-5-1); only the text differs. select_nodes
    (node_scheduler.c) names as UnavailableNodes the nodes of the job's partition it may not
    use; from 24.11.2 on only those that are not up (SchedMD commit dcf7c730c7, "Healthy
    nodes will not be reported as unavailable in job reasons", ticket 21190), so a withheld
    healthy node gives "ReqNodeNotAvail, May be reserved for other job" instead."""
    import live_slurm  # loaded by tests/conftest.py

    account = f"slurmrl-emu{os.getpid()}"
    gpus = live_slurm.node_gpus()
    first, others = next(iter(gpus)), [n for n in gpus if n != next(iter(gpus))]
    whole = f"--gres=gpu:{gpus[first]}"
    ids: list[str] = []

    def submit(*args: str) -> str:
        ids.append(live_slurm.sbatch("-N1", whole, "--time=5", *args, account=account))
        return ids[-1]

    def reason(jid: str) -> str:
        return live_slurm.slurm("squeue", "-h", "-j", jid, "-o", "%r").stdout.strip()

    names_healthy_nodes = live_slurm.slurm_version() < (24, 11, 2)

    def withheld(text: str) -> bool:
        """Tried with ``first`` withheld: 22.05 names it (with any node another job withholds)."""
        if names_healthy_nodes:
            return text.startswith("ReqNodeNotAvail, UnavailableNodes:") and first in text
        return text == "ReqNodeNotAvail, May be reserved for other job"

    try:
        fill = submit(f"-w{first}")
        live_slurm.wait_for(lambda: live_slurm.state(fill) == "RUNNING", 60, "the filler to start")
        pinned = submit(f"-w{first}")
        barred = submit(f"--exclude={','.join(others)}")
        live_slurm.wait_for(lambda: reason(pinned) == "Resources", 30, "the pinned job to be tried")
        live_slurm.wait_for(
            lambda: withheld(reason(barred)),
            30,
            f"the barred job to be tried with {first} withheld, not held back (it says {reason(barred)!r})",
        )
        live_slurm.cancel([pinned, barred])
        blocker, behind = submit(f"--exclude={','.join(others)}"), submit(f"--exclude={','.join(others)}")
        live_slurm.wait_for(lambda: reason(blocker) == "Resources", 30, "the first barred job to be tried")
        live_slurm.wait_for(lambda: reason(behind) == "Priority", 30, "the second to wait on the partition")
    finally:
        live_slurm.cancel(ids)


# --------------------------------------------------------------------------- shortcuts


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(0, 8), min_size=1, max_size=12),
    levels=st.lists(st.sampled_from([50.0, 200.0, 1000.0, math.inf]), min_size=12, max_size=12),
    rows=st.lists(
        st.tuples(
            st.integers(1, 40),
            st.integers(1, 14),
            st.sampled_from([30.0, 100.0, 500.0, 5000.0]),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_one_job_fit_test_matches_the_array_one(
    counts: list[int], levels: list[float], rows: list[tuple[int, int, float, bool]]
) -> None:
    """The queue tests its first jobs on plain lists and the rest as arrays: same verdicts."""
    reserved = levels[: len(counts)]
    rows = [(g, min(span, len(counts)), limit, typed) for g, span, limit, typed in rows]
    table = np.array(rows, dtype=float)
    expected = _could_start_all(table, 10.0, np.array(counts, dtype=np.int32), np.array(reserved)).tolist()
    assert [_could_start(row, 10.0, counts, reserved) for row in rows] == expected


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    nodes=st.integers(1, 4),
    horizon=st.sampled_from([150.0, 400.0, 1e6]),
)
def test_starting_jobs_on_the_time_map_matches_counting_again(
    data: st.DataObject, nodes: int, horizon: float
) -> None:
    """A start updates the released-GPU table in place; counting every release again agrees."""
    ends = st.sampled_from([100.0, 100.0, 160.0, 300.0, 900.0, math.inf])
    release = np.array([[data.draw(ends) for _ in range(4)] for _ in range(nodes)])
    release[release == 100.0] = 0.0  # free now
    tmap = TimeMap(release, 0.0, horizon, 10.0)
    for _ in range(data.draw(st.integers(1, 4))):
        free = np.argwhere(tmap.release <= 0.0)
        if not len(free):
            break
        picked = data.draw(
            st.lists(st.sampled_from([tuple(x) for x in free.tolist()]), min_size=1, unique=True)
        )
        mask = np.zeros_like(release, dtype=bool)
        mask[tuple(np.array(picked).T)] = True
        tmap.start(mask, data.draw(st.sampled_from([5.0, 100.0, 155.0, 300.0, 2e6])))
        assert tmap.released.tolist() == tmap._released_at(tmap.times).tolist()


@settings(max_examples=200, deadline=None)
@given(data=st.data(), nodes=st.integers(1, 5), k=st.sampled_from([None, 1, 2, 3, 7]))
def test_most_released_bounds_every_start_time(data: st.DataObject, nodes: int, k: int | None) -> None:
    """What a job may use at any candidate time, reservations or not, is within most_released."""
    ends = st.sampled_from([0.0, 0.0, 160.0, 300.0, 900.0, math.inf])
    release = np.array([[data.draw(ends) for _ in range(4)] for _ in range(nodes)])
    tmap = TimeMap(release, 0.0, 600.0, 10.0)
    for _ in range(data.draw(st.integers(0, 3))):
        picked = data.draw(st.lists(st.integers(0, nodes - 1), min_size=1, max_size=2, unique=True))
        start = data.draw(st.sampled_from([0.0, 160.0, 300.0]))
        tmap.reserve(tuple(picked), start, start + data.draw(st.sampled_from([50.0, 500.0])))
    counts, _ = tmap.node_counts(0, tmap.times.size, data.draw(st.sampled_from([10.0, 200.0])))
    width = nodes if k is None else min(k, nodes)
    best = np.sort(counts, axis=1)[:, ::-1][:, :width].sum(axis=1)
    assert best.max() <= tmap.most_released(k)
    assert tmap.most_released(k) == np.sort(tmap.released[-1])[::-1][:width].sum()


# --------------------------------------------------------------------------- against a brute-force pass


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ClusterView, float]:
    cluster = make_cluster(draw(st.integers(2, 4)))
    pool = GpuPool(cluster)
    running = draw_running(
        draw,
        cluster,
        pool,
        starts=st.integers(0, 100).map(float),
        limits=st.sampled_from([50.0, 200.0, 400.0, 800.0, 1600.0]),
    )
    pending = [
        JobView(
            f"p{i}",
            draw(st.sampled_from([1, 1, 2, 3, 4, 6, 8])),
            100.0 + i,
            time_limit=draw(st.sampled_from([30.0, 100.0, 300.0, 900.0, 3000.0])),
        )
        for i in range(draw(st.integers(1, 10)))
    ]
    window = draw(st.sampled_from([100.0, 500.0, 1e6]))
    return ClusterView(150.0, cluster, pool.readonly(), tuple(pending), tuple(running), ()), window


def brute_force(view: ClusterView, window: float) -> list[str]:
    """Strict order until a job blocks, then every job from it on, one by one: try each
    candidate time in turn, start it now or reserve its nodes, with nothing pruned."""
    now, place = view.now, FirstFit()
    release = np.where(view.pool.free, now, math.inf)
    for job in view.running:
        end = max(float(math.ceil(job.start_time + job.time_limit)), now + 1)  # type: ignore[operator]
        for a in job.placement.allocs:  # type: ignore[union-attr]
            release[a.node, list(a.gpus)] = end
    reservations: list[tuple[set[int], float, float]] = []
    started: list[str] = []
    blocked = False
    for job in view.pending:
        limit = job.time_limit or 0.0
        times = sorted({now, *release[np.isfinite(release)].tolist(), *(e for _, _, e in reservations)})
        for t in [t for t in times if t <= now + window] if blocked else [now]:
            avail = release <= t
            for nodes, s, e in reservations:
                if s < t + limit and e > t:
                    avail[sorted(nodes)] = False
            scratch = GpuPool(view.cluster)
            scratch.withhold(~avail)
            found = place.place(job, scratch, view)
            if found is None:
                continue
            end = float(math.ceil(t + limit))
            if t == now:
                started.append(job.job_id)
                for a in found.allocs:
                    release[a.node, list(a.gpus)] = end
            else:
                reservations.append((set(found.nodes), t, end))
            break
        else:
            if not blocked:  # the main scheduler stops here; backfill tests this job again
                blocked = True
                times = sorted({now, *release[np.isfinite(release)].tolist()})
                for t in [t for t in times if now < t <= now + window]:
                    avail = release <= t
                    scratch = GpuPool(view.cluster)
                    scratch.withhold(~avail)
                    found = place.place(job, scratch, view)
                    if found is not None:
                        reservations.append((set(found.nodes), t, float(math.ceil(t + limit))))
                        break
    return started


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_pass_matches_brute_force(case: tuple[ClusterView, float]) -> None:
    view, window = case
    policy = slurm_backfill(bf_window=window)
    assert [s.job_id for s in policy.decide(view).starts] == brute_force(view, window)
