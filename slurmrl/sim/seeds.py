"""Summaries of one workload replayed under several seeds, reduced to mean and confidence interval.

One seed is one sample of the workload's randomness (drawn model labels,
time limits, load scaling), so a difference between two policies means
something only when it exceeds the spread across seeds. Every numeric summary
key becomes a :class:`SeedStat`: the mean over the seeds where it is finite
and the half-width of the two-sided 95% Student-t confidence interval of that
mean, ``t(0.975, n - 1) * s / sqrt(n)`` with ``s`` the sample standard
deviation. With one value there is no spread to estimate: the half-width is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from slurmrl.sim.results import align_table, number_format

# t(0.975, df) for df = 1..30, from the Student-t distribution.
_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
    2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
    2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
)  # fmt: skip
_Z975 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class SeedStat:
    """Mean of one metric over seeds, with the 95% interval's half-width (NaN for one seed)."""

    mean: float
    half_width: float
    n: int

    def to_dict(self) -> dict[str, object]:
        """Strict-JSON form: NaN becomes ``None``."""
        return {
            "mean": self.mean if math.isfinite(self.mean) else None,
            "half_width": self.half_width if math.isfinite(self.half_width) else None,
            "n": self.n,
        }


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    Tabulated up to 30; beyond, the Cornish-Fisher expansion in ``1/df``
    (Abramowitz and Stegun, Handbook of Mathematical Functions, 26.7.5), whose
    error there is below 1e-7.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z, v = _Z975, float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


def seed_stat(values: Sequence[float]) -> SeedStat:
    """Mean and 95% half-width of the finite ``values``; NaNs (missing metrics) are left out."""
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return SeedStat(math.nan, math.nan, 0)
    mean = float(np.mean(x))
    if n == 1:
        return SeedStat(mean, math.nan, 1)
    half = t_quantile_975(n - 1) * float(np.std(x, ddof=1)) / math.sqrt(n)
    return SeedStat(mean, half, n)


def _numeric(value: object) -> float | None:
    """The value as a float when it is a number or ``None`` (missing: NaN); else None."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    return float(value)


def aggregate(summaries: Sequence[Mapping[str, object]]) -> dict[str, SeedStat]:
    """One :class:`SeedStat` per key that is numeric in every summary holding it, in first-seen order.

    ``summaries`` are :meth:`~slurmrl.sim.metrics.Summary.to_dict` dicts, one per
    seed; ``None`` (NaN) counts as missing. Keys holding text or objects
    anywhere (``meta``, a policy name) are left out.
    """
    columns: dict[str, list[float]] = {}
    skipped: set[str] = set()
    for summary in summaries:
        for key, value in summary.items():
            x = _numeric(value)
            if x is None:
                skipped.add(key)
            elif key not in skipped:
                columns.setdefault(key, []).append(x)
    return {key: seed_stat(values) for key, values in columns.items() if key not in skipped}


def _stat_cells(name: str, stats: Sequence[SeedStat | None]) -> tuple[str, list[str]]:
    means = [s.mean for s in stats if s is not None and math.isfinite(s.mean)]
    fmt = number_format(name, means)
    if fmt.spec == ",.0f" and any(m != round(m) for m in means):
        fmt = replace(fmt, spec=",.1f")  # a count's mean over seeds need not be whole
    cells = []
    for s in stats:
        if s is None or not math.isfinite(s.mean):
            cells.append("-")
        elif math.isfinite(s.half_width):
            cells.append(f"{fmt(s.mean)} ± {fmt(s.half_width)}")
        else:
            cells.append(fmt(s.mean))
    return fmt.header, cells


def format_seed_table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """An aligned table whose :class:`SeedStat` cells read ``mean ± half-width``.

    Other cells (a policy name) are shown as text. Units follow
    :func:`~slurmrl.sim.results.format_table`, chosen from the column's means
    and shared by mean and half-width; a cell from a single seed shows the
    mean alone, a missing one ``-``.
    """
    headers: list[str] = []
    cols: list[list[str]] = []
    right: list[bool] = []
    for name in columns:
        values = [row.get(name) for row in rows]
        if any(isinstance(v, SeedStat) for v in values):
            stats = [v if isinstance(v, SeedStat) else None for v in values]
            header, cells = _stat_cells(name, stats)
            headers.append(header)
            cols.append(cells)
            right.append(True)
        else:
            headers.append(name)
            cols.append(["-" if v is None else str(v) for v in values])
            right.append(False)
    return align_table(headers, cols, right)
