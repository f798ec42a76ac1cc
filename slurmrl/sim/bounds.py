"""Lower bounds on what any scheduler could achieve on a workload.

A policy's average JCT or makespan means little alone: a 10 h average is
excellent on an overloaded trace and poor on an idle one. Dividing by a bound
that no schedule can beat gives a scale-free "distance from optimal" that can
be compared across traces, loads and cluster sizes.

All bounds take parallel arrays: submit (release) times ``r``, ideal run times
``p`` (the fastest a job could run anywhere on the cluster under the run's
speed model), GPU counts ``g`` and the cluster's GPU count ``G``. They rely
only on two facts about every feasible schedule: a job occupies ``g_j`` GPUs
for at least ``p_j`` seconds, making progress no faster than ``1 / p_j`` of
its work per second (placement slowdowns, preemption and restarts only add
time), and at most ``G`` GPUs are busy at any instant.
"""

from __future__ import annotations

import heapq
import math

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


def _pooled_schedule(
    ra: np.ndarray, work: np.ndarray, speed: float, *, remaining_first: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Completion times and ``integral of (t - r_j) * rate dt`` per job on one pooled machine.

    The moment is taken about each job's own release: about time zero, the
    product of a short slice (``stop - t``, which carries the rounding of
    ``t``) with a large absolute time loses about ``t / p`` of relative
    precision, enough to lift a tight bound above an exact schedule on a trace
    whose clock reads thousands of seconds.

    The machine processes ``speed`` units of work per second and gives all of
    it to one available job: the one with the least remaining work
    (``remaining_first``, SRPT) or the least total work (shortest total work
    first); ties go to the earlier release. Between two releases the chosen
    job runs until it ends or the next release, so each release preempts at
    most once: at most ``2n`` heap operations, O(n log n).
    """
    n = ra.size
    order = np.argsort(ra, kind="stable")
    r_list = ra[order].tolist()
    w_list = work[order].tolist()
    rem = list(w_list)
    done = [0.0] * n
    moment = [0.0] * n
    heap: list[tuple[float, int]] = []  # (priority key, position in release order)
    t = r_list[0]
    i = 0
    while i < n or heap:
        if not heap:
            t = max(t, r_list[i])
        while i < n and r_list[i] <= t:
            heapq.heappush(heap, (w_list[i], i))
            i += 1
        k = heap[0][1]
        finish = t + rem[k] / speed
        next_release = r_list[i] if i < n else math.inf
        stop = min(finish, next_release)
        # integral of (t - r_k) over [t, stop] at rate `speed`.
        moment[k] += speed * (stop - t) * ((stop - r_list[k]) + (t - r_list[k])) / 2
        if finish <= next_release:
            heapq.heappop(heap)
            rem[k] = 0.0
            done[k] = finish
        else:
            rem[k] -= (next_release - t) * speed
            if remaining_first:
                # Only the minimum shrinks, so the heap stays valid.
                heap[0] = (rem[k], k)
        t = stop
    ends = np.empty(n, dtype=np.float64)
    moments = np.empty(n, dtype=np.float64)
    ends[order] = done
    moments[order] = moment
    return ends, moments


def srpt_fluid_response_times(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> np.ndarray:
    """Response times (completion − submit) of preemptive SRPT on one pooled machine.

    The machine runs at speed ``G`` and job ``j`` brings work ``w_j = g_j p_j``.
    Exact event simulation, O(n log n) (see :func:`_pooled_schedule`).
    """
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    if ra.size == 0:
        return np.zeros(0, dtype=np.float64)
    ends, _ = _pooled_schedule(ra, ga * pa, float(total_gpus), remaining_first=True)
    return ends - ra


def mean_busy_times(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> np.ndarray:
    """Each job's mean busy time under preemptive shortest-total-work-first on the pooled machine.

    The mean busy time of job ``j`` is ``M_j = (1/w_j) * integral of t * rate_j(t) dt``,
    the average instant at which its work is done. Jobs without work
    (``w_j = g_j p_j = 0``) have none: NaN.
    """
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    return _busy_after_release(ra, pa, ga, total_gpus) + ra


def _busy_after_release(ra: np.ndarray, pa: np.ndarray, ga: np.ndarray, total_gpus: int) -> np.ndarray:
    """``M_j - r_j`` of :func:`mean_busy_times`, computed without the absolute clock; NaN without work."""
    out = np.full(ra.size, np.nan)
    work = ga * pa
    has_work = work > 0
    if has_work.any():
        _, moments = _pooled_schedule(ra[has_work], work[has_work], float(total_gpus), remaining_first=False)
        out[has_work] = moments / work[has_work]
    return out


def mean_busy_time_bound(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> float:
    """Mean over jobs of ``M_j + p_j / 2 - r_j`` (``p_j`` for a job without work).

    Why no feasible schedule has a lower mean JCT:

    * Every schedule on ``G`` GPUs is a schedule of the pooled machine (speed
      ``G`` GPU-seconds per second, job ``j`` bringing ``w_j = g_j p_j`` from
      ``r_j``): at each instant it processes at most ``g_j`` GPU-seconds per
      second of each running job, never more than ``G`` in total. Let ``M'_j``
      be job ``j``'s mean busy time in it.
    * Job ``j`` is processed at most at its own rate ``g_j``, so the latest its
      work can be centred, given its end ``C_j``, is with all of it in
      ``[C_j - p_j, C_j]``: ``M'_j <= C_j - p_j / 2``.
    * On one machine with release dates and preemption, the schedule that
      always runs the available job with the least total processing time
      minimises the sum of mean busy times (Goemans, Queyranne, Schulz,
      Skutella and Wang, "Single machine scheduling with release dates", SIAM
      J. Discrete Math. 15(2), 2002: their LP schedule for unit weights). So
      ``sum M'_j >= sum M_j`` with ``M_j`` from :func:`mean_busy_times`.

    Hence ``sum (C_j - r_j) >= sum (M_j + p_j / 2 - r_j)``. A job without work
    uses no machine time and only contributes its ``C_j - r_j >= p_j``. Any
    ``p_j`` no larger than the true minimum run time keeps the bound valid:
    slowing a schedule's processing of ``j`` in proportion gives a schedule of
    the smaller instance with the same ends. Returns NaN for an empty workload.
    """
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    if ra.size == 0:
        return float("nan")
    busy = _busy_after_release(ra, pa, ga, total_gpus)
    per_job = np.where(np.isnan(busy), pa, busy + pa / 2)
    return float(np.mean(per_job))


def avg_jct_lower_bound(r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int) -> float:
    """A value that the mean JCT of any feasible schedule cannot go below.

    The largest of three lower bounds on the same quantity:

    * ``mean p_j``: every job's JCT is at least its ideal run time.
    * ``fluid``, the mean response time of preemptive SRPT on the pooled
      machine (speed ``G``, work ``w_j = g_j p_j`` from ``r_j``): every
      schedule on ``G`` GPUs is a schedule of that machine with the same ends,
      and SRPT minimises total flow time there (Schrage, "A proof of the
      optimality of the shortest remaining processing time discipline", Oper.
      Res. 16, 1968).
    * :func:`mean_busy_time_bound`: the pooled machine again, but keeping that
      no job runs faster than its own ``g_j`` GPUs allow.

    None dominates: ``mean p`` wins on a lightly loaded cluster with long wide
    jobs, ``fluid`` when wide jobs queue, the mean-busy-time bound when many
    narrow jobs queue. Returns NaN for an empty workload.
    """
    return max(avg_jct_lower_bounds(r, p, g, total_gpus))


def avg_jct_lower_bounds(
    r: ArrayLike, p: ArrayLike, g: ArrayLike, total_gpus: int
) -> tuple[float, float, float]:
    """The parts of :func:`avg_jct_lower_bound`: ``(mean p, SRPT fluid, mean busy time)``; NaNs when empty."""
    ra, pa, ga = _arrays(r, p, g, total_gpus)
    if ra.size == 0:
        return (math.nan, math.nan, math.nan)
    fluid = float(np.mean(srpt_fluid_response_times(ra, pa, ga, total_gpus)))
    return (float(np.mean(pa)), fluid, mean_busy_time_bound(ra, pa, ga, total_gpus))
