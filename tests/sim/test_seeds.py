from __future__ import annotations

import math

import pytest

from slurmrl.sim.seeds import SeedStat, aggregate, format_seed_table, seed_stat, t_quantile_975


def test_t_quantiles_match_the_tables() -> None:
    assert t_quantile_975(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile_975(4) == pytest.approx(2.776, abs=1e-3)
    assert t_quantile_975(30) == pytest.approx(2.042, abs=1e-3)
    # Beyond the table: 2.021 at 40, 2.000 at 60, 1.980 at 120 degrees of freedom.
    assert t_quantile_975(40) == pytest.approx(2.021, abs=1e-3)
    assert t_quantile_975(60) == pytest.approx(2.000, abs=1e-3)
    assert t_quantile_975(120) == pytest.approx(1.980, abs=1e-3)
    assert t_quantile_975(31) < t_quantile_975(30)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_seed_stat_by_hand() -> None:
    # 10, 12, 14: mean 12, sample sd 2, half-width t(0.975, 2) * 2 / sqrt(3).
    stat = seed_stat([10.0, 12.0, 14.0])
    assert stat.n == 3 and stat.mean == 12.0
    assert stat.half_width == pytest.approx(4.302653 * 2 / math.sqrt(3))
    one = seed_stat([5.0, math.nan])
    assert (one.mean, one.n) == (5.0, 1) and math.isnan(one.half_width)
    none = seed_stat([])
    assert none.n == 0 and math.isnan(none.mean)
    assert seed_stat([3.0, 3.0]).half_width == 0.0


def test_aggregate_keeps_numeric_keys_in_order() -> None:
    summaries = [
        {"jobs": 100, "avg_jct": 3600.0, "jain_fairness_users": None, "policy": "fifo", "meta": {"seed": s}}
        for s in range(3)
    ]
    summaries[1]["avg_jct"] = 7200.0
    summaries[2]["jain_fairness_users"] = 0.9
    stats = aggregate(summaries)
    assert list(stats) == ["jobs", "avg_jct", "jain_fairness_users"]
    assert stats["jobs"] == SeedStat(100.0, 0.0, 3)
    assert stats["avg_jct"].mean == pytest.approx(4800.0) and stats["avg_jct"].n == 3
    assert stats["jain_fairness_users"].n == 1 and math.isnan(stats["jain_fairness_users"].half_width)
    assert aggregate([]) == {}
    assert SeedStat(1.0, math.nan, 1).to_dict() == {"mean": 1.0, "half_width": None, "n": 1}


def test_seed_table_shows_mean_plus_minus_half_width() -> None:
    rows = [
        {"policy": "fifo", "avg_jct": SeedStat(36_000.0, 1_800.0, 5), "finished": SeedStat(99.5, 0.7, 5)},
        {"policy": "sjf", "avg_jct": SeedStat(7_200.0, math.nan, 1), "finished": None},
    ]
    lines = format_seed_table(rows, ["policy", "avg_jct", "finished"]).splitlines()
    assert lines[0].split() == ["policy", "avg_jct", "[h]", "finished"]
    assert lines[2].split() == ["fifo", "10.00", "±", "0.50", "99.5", "±", "0.7"]
    assert lines[3].split() == ["sjf", "2.00", "-"]
    assert len({len(line) for line in lines}) == 1  # right-aligned numbers
