"""Time limits as users write them, for traces that record none.

Backfill and every deployable policy that reads limits rank and reserve on
what users asked for, so how well a modelled limit predicts the true duration
decides how much those policies can gain. Real requests predict poorly; a
model that hands out duration x a narrow factor (``lognormal``, Spearman
0.88 with true durations on philly-sample) flatters them.

What logs that record both request and run time show:

* Requests are modal: about 20 values account for about 90% of jobs, and a
  model given little more than the largest allowed value and the share of
  jobs that ask for it reproduces scheduling behaviour close to the real
  estimates' (Tsafrir, Etsion & Feitelson, "Modeling user runtime
  estimates", JSSPP 2005, LNCS 3834).
* Over-estimates are large and widespread (Mu'alem & Feitelson,
  "Utilization, predictability, workloads, and user runtime estimates in
  scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001).

Two public logs with both fields, measured for this model (run time > 0 and
request > 0; figures from ``benchmarks/limit_fit.py``):

=============================  ======  ==========  ========  ========  ===========
log                            jobs    Spearman    median    run >     request at
                                       req vs run  req/run   request   the max (own
                                                                         queue's)
=============================  ======  ==========  ========  ========  ===========
HPC2N Seth 2002 (PWA, first    3,145   0.50        2.2x      10.2%     0.3%
3,171 jobs, Alea's copy)
MetaCentrum 2013 (Alea's       17,898  0.41        13.5x     3.9%      0.3% (64%)
``wagap-2013.swf``)
=============================  ======  ==========  ========  ========  ===========

(Alea: github.com/aleasimulator/alea, ``Alea/data-set``.) HPC2N users write
many hand-picked values (15, 20, 30 min, 8, 10, 12 h: 61% of requests are one
of :data:`ROUND_VALUES`, 13% are non-round and within 1.25x of the run time);
MetaCentrum's users mostly take their queue's maximum (24 h, 2 h, 4 h, 2 d,
4 d, 7 d; 76% round). The jobs past their request were killed at it.

The model mixes five kinds of users, each job drawing one:

* ``at_max`` (15%, our choice between the two logs' 0.3% and 64%): the
  partition maximum, :data:`MAX_LIMIT` (7 days, a common Slurm MaxTime and
  the limit :mod:`slurmrl.policy.backfill` assumes when a job has none);
* ``under`` (5%, between the logs' 3.9% and 10.2%): the largest round value
  below the duration. Replayed durations are what the jobs really ran, so
  the job runs past this limit unless ``--enforce-limits`` kills it there;
* ``tight`` (10%, after HPC2N's 13% of close non-round requests): the
  duration x (1 + a log-normal margin, median 15%), in whole minutes;
* ``popular`` (21%): a round value at or above the duration, drawn with the
  popularity weights of :data:`ROUND_WEIGHTS` renormalised over the values
  that cover it, whatever the run time (Tsafrir et al.'s model assigns
  estimates this way), so short jobs over-estimate by orders of magnitude;
* ``scaled`` (the rest, 49%): the duration x a log-normal factor (median 3,
  sigma 1.5), then one of the next three round values by popularity.

The shares of ``popular`` and ``scaled`` and the factor were tuned so that
the model, applied to each log's own run times, lands near the logs'
Spearman and median over-estimate (``benchmarks/limit_fit.py`` prints both
side by side): 0.55 on HPC2N's run times (real 0.50), 0.63 on MetaCentrum's
(real 0.41: two thirds of its users take their queue's maximum), median
request/run 11.5x and 7.5x (real 2.2x and 13.5x). On philly-sample the
limits have Spearman 0.44 with durations (the ``lognormal`` model: 0.88),
median 10x the duration, 17% at the maximum, 91% round, 3.9% short of the
duration.

Jobs longer than :data:`MAX_LIMIT` (except the ``under`` ones) get their
duration rounded up to a whole day, as if granted an exception, so a trace's
long jobs are not killed at a limit they never had. Every draw is a pure
function of (seed, job id), so adding or dropping other jobs never changes a
job's limit, and the model is numpy array arithmetic (about 1 CPU-second for a
million jobs on a loaded machine; ``benchmarks/limit_fit.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from slurmrl.sim.siphash import finalise, hash_strings

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0

# Values users pick, with their popularity as our blend of the two logs above
# (each request snapped up to the next listed value, then smoothed).
_MODES: tuple[tuple[float, float], ...] = (
    (5 * MINUTE, 0.01),
    (10 * MINUTE, 0.01),
    (15 * MINUTE, 0.04),
    (20 * MINUTE, 0.05),
    (30 * MINUTE, 0.07),
    (1 * HOUR, 0.07),
    (2 * HOUR, 0.15),
    (3 * HOUR, 0.02),
    (4 * HOUR, 0.06),
    (6 * HOUR, 0.02),
    (8 * HOUR, 0.04),
    (10 * HOUR, 0.03),
    (12 * HOUR, 0.06),
    (18 * HOUR, 0.02),
    (1 * DAY, 0.15),
    (2 * DAY, 0.05),
    (3 * DAY, 0.01),
    (4 * DAY, 0.03),
    (5 * DAY, 0.04),
    (7 * DAY, 0.02),
)
ROUND_VALUES: tuple[float, ...] = tuple(v for v, _ in _MODES)
ROUND_WEIGHTS: tuple[float, ...] = tuple(w for _, w in _MODES)
MAX_LIMIT = ROUND_VALUES[-1]


@dataclass(frozen=True)
class UserLimitModel:
    """Shares of the five kinds of users (the rest are ``scaled``) and their factors."""

    at_max: float = 0.15
    under: float = 0.05
    tight: float = 0.10
    popular: float = 0.21
    tight_margin_median: float = 0.15  # tight: duration x (1 + margin), margin log-normal
    tight_margin_sigma: float = 0.7
    scaled_median: float = 3.0  # scaled: duration x factor, factor log-normal, before rounding up
    scaled_sigma: float = 1.5
    scaled_choices: int = 3  # scaled: one of this many round values at or above duration x factor

    def __post_init__(self) -> None:
        shares = (self.at_max, self.under, self.tight, self.popular)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError(f"user shares must be >= 0 and sum to at most 1, got {shares}")
        if self.scaled_choices < 1:
            raise ValueError(f"scaled_choices must be >= 1, got {self.scaled_choices}")


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_VALUES = np.asarray(ROUND_VALUES)
_WEIGHTS = np.asarray(ROUND_WEIGHTS)


def job_uniforms(job_ids: np.ndarray, seed: int, streams: int) -> np.ndarray:
    """``streams`` uniforms in [0, 1) per job, each a pure function of (seed, job id, stream).

    Job ids are hashed as pandas hashes strings (SipHash-2-4 of their UTF-8
    bytes under a fixed key, :mod:`slurmrl.sim.siphash`), so draws are the
    same on every platform and for any job order.
    """
    keys = hash_strings(job_ids.tolist() if isinstance(job_ids, np.ndarray) else list(job_ids))
    out = np.empty((streams, len(keys)))
    with np.errstate(over="ignore"):
        base = finalise(keys ^ finalise(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)))
        for s in range(streams):
            bits = finalise(base + _GOLDEN * np.uint64(s + 1))
            out[s] = (bits >> np.uint64(11)).astype(np.float64) / 2.0**53
    return out


def _popular(durations: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A popular round value >= the duration, weights renormalised over the values that cover it."""
    cum = np.concatenate(([0.0], np.cumsum(_WEIGHTS)))
    first = np.minimum(np.searchsorted(_VALUES, durations, side="left"), len(_VALUES) - 1)
    low = cum[first]
    pick = np.searchsorted(cum, low + u * (cum[-1] - low), side="right") - 1
    return _VALUES[np.clip(pick, first, len(_VALUES) - 1)]


def _scaled(wanted: np.ndarray, u: np.ndarray, choices: int) -> np.ndarray:
    """One of the ``choices`` round values at or above ``wanted``, by popularity."""
    first = np.minimum(np.searchsorted(_VALUES, wanted, side="left"), len(_VALUES) - 1)
    idx = first[:, None] + np.arange(choices)[None, :]
    weights = np.where(idx < len(_VALUES), _WEIGHTS[np.minimum(idx, len(_VALUES) - 1)], 0.0)
    cum = np.cumsum(weights, axis=1)
    pick = (u[:, None] * cum[:, -1:] >= cum).sum(axis=1)
    return _VALUES[np.minimum(first + pick, len(_VALUES) - 1)]


def _normal(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """Standard normal draws from two uniforms (Box-Muller)."""
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def user_time_limits(
    durations: np.ndarray, job_ids: np.ndarray, seed: int, model: UserLimitModel = UserLimitModel()
) -> np.ndarray:
    """The limit (seconds) each job's user writes, given its true duration; see the module docstring."""
    d = np.maximum(np.asarray(durations, dtype=np.float64), 1.0)
    kind_u, value_u, n1, n2 = job_uniforms(job_ids, seed, 4)
    z = _normal(n1, n2)  # each kind of user uses at most one normal draw

    cuts = np.cumsum([model.at_max, model.under, model.tight, model.popular])
    kind = np.searchsorted(cuts, kind_u, side="right")  # 0 max, 1 under, 2 tight, 3 popular, 4 scaled
    below = np.searchsorted(_VALUES, d, side="left") - 1  # the largest round value < duration
    kind = np.where((kind == 1) & (below < 0), 4, kind)  # nothing round below a very short job

    wanted = d * np.maximum(model.scaled_median * np.exp(model.scaled_sigma * z), 1.0)
    tight = np.ceil(d * (1.0 + model.tight_margin_median * np.exp(model.tight_margin_sigma * z)) / MINUTE)
    limits = np.select(
        [kind == 0, kind == 1, kind == 2, kind == 3],
        [
            np.full_like(d, MAX_LIMIT),
            _VALUES[np.maximum(below, 0)],
            np.minimum(tight * MINUTE, MAX_LIMIT),
            _popular(d, value_u),
        ],
        _scaled(wanted, value_u, model.scaled_choices),
    )
    # Beyond the maximum: an exception in whole days, so the trace's job is not cut short.
    covered = np.maximum(limits, np.ceil(d / DAY) * DAY)
    return np.where((kind != 1) & (d > limits), covered, limits)
