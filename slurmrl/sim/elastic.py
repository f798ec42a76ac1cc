"""Which jobs of a replay are elastic, and over which GPU counts (``--elastic``).

No public trace records GPU ranges: Philly, Helios and Pollux list the count
a job ran with. A study of elastic scheduling therefore needs a stated rule
that turns some rigid jobs into elastic ones, and the same jobs each time:

* ``off`` (the default): every job is rigid, the replay is the rigid one.
* ``fraction:F``: a job is elastic when a keyed hash of ``(seed, job id)``,
  read as a number in [0, 1), is below F. As with model assignment
  (:func:`slurmrl.perf.zoo.model_for`) a job's draw depends on nothing else,
  so it keeps its range however the trace is cut. An elastic job that asked
  for ``g`` GPUs may run on any count from the smallest power of two at
  least ``g / 2`` up to the largest power of two at most ``2 g``: half to
  twice its request, in the power-of-two steps data-parallel jobs are
  usually sized in (batch sizes and NVLink islands come in powers of two).
  The upper end is clipped to the counts its model class can use (the
  batch-size cap of :mod:`slurmrl.perf.scaling`, what its user would know)
  and to the cluster, never below ``g``; a job whose range is then just
  ``g`` stays rigid. One-GPU jobs get [1, 2] like any other: they are most
  of every trace, and Pollux's own workloads start most jobs on one GPU and
  grow them (Qiao et al., OSDI'21).

Ranges a trace declares would be kept as they are; no loader produces one
today (:class:`~slurmrl.traces.schema.TraceJob` has no range field).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from slurmrl.errors import ConfigError

_HINT = "use off, or fraction:F with F in [0, 1] (e.g. fraction:0.5)"


@dataclass(frozen=True, slots=True)
class ElasticRule:
    """The share of jobs a replay makes elastic (0 = off)."""

    fraction: float = 0.0

    def __str__(self) -> str:
        return "off" if self.fraction == 0.0 else f"fraction:{self.fraction:g}"

    @property
    def on(self) -> bool:
        return self.fraction > 0.0

    def chosen(self, job_id: str, seed: int) -> bool:
        """Whether this job is one of the elastic share (seeded, per job)."""
        if not self.on:
            return False
        digest = hashlib.blake2b(f"elastic\x1f{seed}\x1f{job_id}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2.0**64 < self.fraction

    def gpu_range(
        self, job_id: str, gpus: int, seed: int, *, useful: int, total: int
    ) -> tuple[int, int] | None:
        """The (min, max) GPU counts of this job, or None when it stays rigid.

        ``useful``: the most GPUs its model class can use; ``total``: the
        cluster's GPUs.
        """
        if gpus < 1 or not self.chosen(job_id, seed):
            return None
        return power_of_two_range(gpus, min(useful, total))


def power_of_two_range(gpus: int, ceiling: int) -> tuple[int, int] | None:
    """Powers of two between ``gpus / 2`` and ``2 gpus``, the top clipped to ``ceiling`` (never below ``gpus``)."""
    low = min(gpus, 1 << max(0, math.ceil(math.log2(gpus / 2)))) if gpus > 1 else 1
    high = max(gpus, min(1 << int(math.floor(math.log2(2 * gpus))), ceiling))
    return None if low == high == gpus else (low, high)


def parse_elastic(text: str | ElasticRule) -> ElasticRule:
    """``off`` or ``fraction:F`` as an :class:`ElasticRule`; a one-line error otherwise."""
    if isinstance(text, ElasticRule):
        return text
    mode, _, arg = str(text).strip().partition(":")
    if mode == "off" and not arg:
        return ElasticRule()
    if mode == "fraction":
        try:
            share = float(arg)
        except ValueError:
            share = math.nan
        if 0.0 <= share <= 1.0:
            return ElasticRule(share)
        raise ConfigError(f"elastic '{text}' needs a fraction in [0, 1]", column="elastic", hint=_HINT)
    raise ConfigError(f"unknown elastic setting '{text}'", column="elastic", hint=_HINT)
