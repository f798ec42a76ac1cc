"""Small clusters and partly busy pools for the policy tests."""

from __future__ import annotations

from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, Node, Placement, Rack, islands_for
from slurmrl.cluster.pool import GpuPool
from slurmrl.policy.view import JobView

NO_MODEL = st.just("")  # running jobs of no recorded model class


def make_cluster(nodes: int, gpus: int = 4) -> Cluster:
    """One rack of ``nodes`` NVSwitch nodes with ``gpus`` GPUs each."""
    return Cluster(
        "t",
        (Rack("r", 0, tuple(range(nodes))),),
        tuple(Node(f"n{i}", i, 0, gpus, "v100", islands_for("nvswitch", gpus)) for i in range(nodes)),
    )


def draw_running(
    draw: st.DrawFn,
    cluster: Cluster,
    pool: GpuPool,
    *,
    starts: st.SearchStrategy[float],
    limits: st.SearchStrategy[float],
    models: st.SearchStrategy[str] = NO_MODEL,
) -> list[JobView]:
    """Fill each node from its first free GPU with running jobs, allocated in ``pool``.

    Per node, while a coin says so, a job takes the next 1..free GPUs and draws
    its start time from ``starts``, its time limit from ``limits`` and its
    model class from ``models``.
    """
    running: list[JobView] = []
    for n, node in enumerate(cluster.nodes):
        free = list(range(node.gpus))
        while free and draw(st.booleans()):
            k = draw(st.integers(1, len(free)))
            p = Placement.of([(n, free[:k])])
            free = free[k:]
            pool.allocate(p)
            start = draw(starts)
            limit = draw(limits)
            model = draw(models)
            running.append(
                JobView(
                    f"r{len(running)}", k, start, time_limit=limit, model=model, start_time=start, placement=p
                )
            )
    return running
