"""Placement probes are pure: asking where a job would go never changes a later answer.

Schedulers ask a placement more than they act on it: EasyBackfill prices the
blocked head job's reservation on a scratch pool, TopDRL's window asks where
every candidate would go, AFS tries sizes. Every registered placement, and
the learned pointer placements of harmony and meta-rl, must answer a pass's
real starts the same whether or not such probes came in between; only a
confirmed start (``confirm_start``) may change what later jobs of the pass see.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.base import PlacementPolicy, confirm_start
from slurmrl.policy.registry import make_placement, placement_names
from slurmrl.policy.view import ClusterView, JobView
from tests.policy.busy import draw_running

MODELS = ("resnet50", "lm", "transformer", "cyclegan", "")


def cluster_of(racks: int, per_rack: int, gpus: int, mixed: bool) -> Cluster:
    nodes, rack_list = [], []
    for r in range(racks):
        ids = tuple(range(r * per_rack, (r + 1) * per_rack))
        kind = "k80" if mixed and r == racks - 1 else "v100"
        nodes += [Node(f"n{i}", i, r, gpus, kind, islands_for("nvlink:4", gpus)) for i in ids]
        rack_list.append(Rack(f"r{r}", r, ids))
    return Cluster("t", tuple(rack_list), tuple(nodes))


def learned(name: str) -> Callable[[], PlacementPolicy]:
    """The pointer placement of a shipped harmony-format checkpoint, greedy as deployed."""

    def build() -> PlacementPolicy:
        from slurmrl.rl.checkpoints import shipped_policy_dir
        from slurmrl.rl.harmony.placement import HarmonyPlacement, greedy_chooser
        from slurmrl.rl.harmony.policy import read_checkpoint
        from slurmrl.rl.nets.numpy_nets import NumpyHarmony

        ckpt, state = read_checkpoint(shipped_policy_dir(name))
        net = NumpyHarmony(ckpt.net, state)
        return HarmonyPlacement(ckpt.obs, greedy_chooser(net.logits), make_placement("interference-aware"))

    return build


FACTORIES: dict[str, Callable[[], PlacementPolicy]] = {
    **{name: (lambda n=name: make_placement(n)) for name in placement_names()},
    "harmony": learned("harmony-philly"),
    "meta-rl": learned("meta-rl-philly"),
}

jobs_st = st.builds(
    lambda i, g, m, n: JobView(f"q{i}", g, 0.0, model=m, time_limit=3600.0, num_nodes=n),
    st.integers(0, 10_000),
    st.sampled_from([1, 1, 2, 4, 8, 12, 16]),
    st.sampled_from(MODELS),
    st.sampled_from([None, None, 1, 2]),
)


@st.composite
def scenes(draw: st.DrawFn) -> tuple[ClusterView, list[JobView], list[tuple[JobView, list[int]] | None]]:
    cluster = cluster_of(draw(st.integers(1, 3)), draw(st.integers(1, 4)), 8, draw(st.booleans()))
    pool = GpuPool(cluster)
    running = draw_running(
        draw, cluster, pool, starts=st.just(0.0), limits=st.just(3600.0), models=st.sampled_from(MODELS)
    )
    n = draw(st.integers(1, 6))
    jobs = [
        JobView(f"j{i}", j.gpus, 0.0, model=j.model, time_limit=3600.0, num_nodes=j.num_nodes)
        for i, j in enumerate(draw(st.lists(jobs_st, min_size=n, max_size=n)))
    ]
    probes = draw(
        st.lists(
            st.none() | st.tuples(jobs_st, st.lists(st.integers(0, max(len(running) - 1, 0)), max_size=4)),
            min_size=n,
            max_size=n,
        )
    )
    view = ClusterView(100.0, cluster, pool.readonly(), tuple(jobs), tuple(running))
    return view, jobs, probes


def walk(
    policy: PlacementPolicy,
    view: ClusterView,
    jobs: list[JobView],
    probes: list[tuple[JobView, list[int]] | None],
) -> list[Placement | None]:
    """Place ``jobs`` in turn as a scheduler pass would, probing before each where a probe is given."""
    begin = getattr(policy, "begin", None)
    if begin is not None:
        begin(view, jobs)
    pool = view.pool.copy()
    running = list(view.running)
    answers: list[Placement | None] = []
    for job, probe in zip(jobs, probes, strict=True):
        if probe is not None:
            asked, released = probe
            scratch = pool.copy()  # a reservation: some running jobs' GPUs released on a scratch pool
            for i in sorted(set(released)):
                if i < len(running) and scratch.is_free(running[i].placement) is False:
                    scratch.release(running[i].placement)  # type: ignore[arg-type]
            before = (pool.free.copy(), scratch.free.copy())
            policy.place(asked, scratch, view)
            policy.place(asked, pool, view)  # a what-if on the live pass pool
            assert np.array_equal(before[0], pool.free) and np.array_equal(before[1], scratch.free)
        placed = policy.place(job, pool, view)
        answers.append(placed)
        if placed is not None:
            pool.allocate(placed)
            confirm_start(policy, job, placed, view)
    return answers


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scene=scenes(), name=st.sampled_from(sorted(FACTORIES)))
def test_probes_never_change_a_later_answer(
    scene: tuple[ClusterView, list[JobView], list[tuple[JobView, list[int]] | None]], name: str
) -> None:
    view, jobs, probes = scene
    plain = walk(FACTORIES[name](), view, jobs, [None] * len(jobs))
    probed = walk(FACTORIES[name](), view, jobs, probes)
    assert plain == probed, name


def test_every_registered_placement_is_covered() -> None:
    assert set(placement_names()) <= set(FACTORIES)


def test_a_confirmed_start_is_a_neighbour_a_probe_is_not() -> None:
    """interference-aware keeps two sensitive jobs apart only once the first one really starts."""
    cluster = cluster_of(1, 2, 8, False)
    view = ClusterView(0.0, cluster, GpuPool(cluster).readonly(), (), ())
    first, second = (JobView(n, 2, 0.0, model="lstm") for n in ("a", "b"))
    for confirmed in (False, True):
        place = make_placement("interference-aware")
        pool = view.pool.copy()
        got = place.place(first, pool, view)
        assert got is not None
        if confirmed:
            pool.allocate(got)
            confirm_start(place, first, got, view)
        other = place.place(second, pool, view)
        assert other is not None
        assert (other.nodes == got.nodes) is not confirmed  # a mere probe leaves node 0 looking empty
