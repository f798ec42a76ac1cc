"""Lower bounds on what any scheduler could achieve on a workload.

A policy's average JCT or makespan means little alone: a 10 h average is
excellent on an overloaded trace and poor on an idle one. Dividing by a bound
that no schedule can beat gives a scale-free "distance from optimal" that can
be compared across traces, loads and cluster sizes.

All bounds take parallel arrays: submit (release) times ``r``, ideal run times
``p`` (the trace duration under ideal placement), GPU counts ``g`` and the
cluster's GPU count ``G``. They rely only on two facts about every feasible
schedule: a job occupies ``g_j`` GPUs for at least ``p_j`` seconds (placement
slowdowns, preemption and restarts only add time), and at most ``G`` GPUs are
busy at any instant.
"""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import ArrayLike


def _arrays(
    r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ra = np.asarray(r, dtype=np.float64).ravel()
    pa = np.asarray(p, dtype=np.float64).ravel()
    ga = np.asarray(g, dtype=np.float64).ravel()
    if not (ra.shape == pa.shape == ga.shape):
        raise ValueError(f"r, p and g must have the same length, got {ra.size}, {pa.size} and {ga.size}")
    if total_gpus <= 0:
        raise ValueError(f"the cluster must have at least one GPU, got {total_gpus}")
    if ra.size and not (np.isfinite(ra).all() and np.isfinite(pa).all() and np.isfinite(ga).all()):
        raise ValueError("submit times, durations and GPU counts must all be finite")
    if ra.size and ((pa < 0).any() or (ga < 0).any()):
        raise ValueError("durations and GPU counts must not be negative")
    return ra, pa, ga


def jct_lower(p: ArrayLike) -> np.ndarray:
    """Per-job JCT bound: a job cannot finish sooner than its ideal run time."""
    return np.asarray(p, dtype=np.float64).copy()


def makespan_lower_bound(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> float:
    """Earliest time at which the last job could possibly end (an absolute time).

    Two arguments, each valid on its own, so their maximum is too:

    * job ``j`` cannot end before ``r_j + p_j``;
    * the work released at or after any submit time ``r_k`` — the GPU-seconds
      ``sum g_j p_j`` over jobs with ``r_j >= r_k`` — cannot start before
      ``r_k`` and is processed at most ``G`` GPU-seconds per second, so the
      last job ends no earlier than ``r_k + that work / G``.

    Taking ``r_k = min r`` gives the classic ``min r + sum g p / G``; maximising
    over every ``r_k`` is never weaker and is much tighter on traces whose load
    arrives late. Subtract ``min r`` for a makespan measured from the first
    submission. Returns NaN for an empty workload.
    """
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    if ra.size == 0:
        return float("nan")
    order = np.argsort(ra, kind="stable")
    rs = ra[order]
    work = (ga * pa)[order]
    # Work released at or after rs[i]: suffix sums, with ties sharing the first index of their group.
    suffix = np.cumsum(work[::-1])[::-1]
    first_of_tie = np.searchsorted(rs, rs, side="left")
    area = float(np.max(rs + suffix[first_of_tie] / total_gpus))
    return max(float(np.max(ra + pa)), area)


def srpt_fluid_response_times(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> np.ndarray:
    """Response times (completion − submit) of preemptive SRPT on one pooled machine.

    The machine runs at speed ``G`` and job ``j`` brings work ``w_j = g_j p_j``.
    Exact event simulation: between two arrivals the job with the least
    remaining work runs alone; an arrival can only preempt the running job, so
    there are at most ``2n`` heap operations — O(n log n).
    """
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    n = ra.size
    out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return out
    order = np.argsort(ra, kind="stable")
    r_list = ra[order].tolist()
    w_list = (ga * pa)[order].tolist()
    speed = float(total_gpus)
    heap: list[tuple[float, int]] = []  # (remaining work, position in sorted order)
    done = np.zeros(n, dtype=np.float64)
    t = r_list[0]
    i = 0
    while i < n or heap:
        if not heap:
            t = max(t, r_list[i])
        while i < n and r_list[i] <= t:
            heapq.heappush(heap, (w_list[i], i))
            i += 1
        remaining, k = heap[0]
        finish = t + remaining / speed
        next_arrival = r_list[i] if i < n else float("inf")
        if finish <= next_arrival:
            heapq.heappop(heap)
            t = finish
            done[k] = t
        else:
            # Run the shortest job until the next arrival; shrinking the minimum keeps the heap valid.
            heap[0] = (remaining - (next_arrival - t) * speed, k)
            t = next_arrival
    out[order] = done - ra[order]
    return out


def avg_jct_lower_bound(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> float:
    """A value that the mean JCT of any feasible schedule cannot go below.

    ``max(mean p_j, fluid)`` where ``fluid`` is the mean response time of
    preemptive SRPT on a single pooled machine of speed ``G`` (work
    ``w_j = g_j p_j``, release ``r_j``). Why each part is a lower bound:

    * ``mean p_j``: every job's JCT is at least its ideal run time.
    * ``fluid``: pool the cluster into one machine that processes ``G``
      GPU-seconds per second and may give any share of that rate to any job.
      Every schedule on ``G`` GPUs is also a schedule of this machine (at each
      instant it processes each running job's ``g_j`` GPU-seconds per second,
      never more than ``G`` in total), and each job finishes no later there
      than in the real schedule, so the pooled machine's optimal total flow
      time is at most that of the real schedule. Preemptive SRPT is optimal for total flow time on a
      single machine with release dates (Schrage, "A proof of the optimality
      of the shortest remaining processing time discipline", Oper. Res. 16,
      1968), so its mean response time is that optimum.

    Both bound the same quantity, so their maximum is a valid bound too.
    Neither dominates: ``mean p`` wins on a lightly loaded cluster with long
    wide jobs, ``fluid`` wins when queueing is inevitable. Returns NaN for an
    empty workload.
    """
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    if ra.size == 0:
        return float("nan")
    fluid = float(np.mean(srpt_fluid_response_times(ra, pa, ga, total_gpus)))
    return max(float(np.mean(pa)), fluid)
