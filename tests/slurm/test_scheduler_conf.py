from __future__ import annotations

from pathlib import Path

import pytest

from slurmrl.errors import SpecError
from slurmrl.slurm.conf import parse_slurm_conf
from slurmrl.slurm.scheduler_conf import (
    SchedulerSettings,
    format_time,
    parse_time,
    read_scheduler_settings,
    scheduler_settings,
    settings_from_mapping,
    settings_from_show_config,
)

TESTCLUSTER_CONF = Path(__file__).parent / "fixtures" / "v22.05" / "conf" / "slurm.conf"
DAY = 86400.0

FULL = """\
ClusterName=site
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightJobSize=500 PriorityWeightFairshare=10000
PriorityWeightPartition=200
PriorityWeightQOS=300
PriorityMaxAge=14-0
PriorityDecayHalfLife=2-12:00:00
PriorityCalcPeriod=10
PriorityFavorSmall=YES
PriorityFlags=NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME
SchedulerType=sched/backfill
SchedulerParameters=default_queue_depth=200,bf_interval=60,bf_window=2880,\\
bf_resolution=300,bf_max_job_test=1000,bf_node_space_size=800,bf_continue
NodeName=n1 Gres=gpu:4
"""


def test_every_setting_is_read_from_a_constructed_slurm_conf() -> None:
    s = scheduler_settings(parse_slurm_conf(FULL, "site/slurm.conf"))
    assert s == SchedulerSettings(
        priority_type="priority/multifactor",
        weight_age=1000,
        weight_job_size=500,
        weight_fairshare=10000,
        weight_partition=200,
        weight_qos=300,
        max_age=14 * DAY,
        decay_half_life=2.5 * DAY,
        calc_period=600.0,
        favor_small=True,
        priority_flags=("NO_FAIR_TREE", "SMALL_RELATIVE_TO_TIME"),
        scheduler_type="sched/backfill",
        bf_interval=60.0,
        bf_window=2 * DAY,
        bf_resolution=300.0,
        bf_max_job_test=1000,
        bf_node_space_size=800,
    )
    assert s.multifactor and s.backfill and not s.fair_tree
    assert s.node_space_size == 800 and SchedulerSettings(bf_max_job_test=40).node_space_size == 40
    assert s.source == "site/slurm.conf"


def test_defaults_are_slurms_own() -> None:
    s = scheduler_settings(parse_slurm_conf("ClusterName=x\n", "slurm.conf"))
    assert s == SchedulerSettings()
    assert (s.priority_type, s.weight_age, s.weight_job_size, s.weight_fairshare) == (
        "priority/basic",
        0,
        0,
        0,
    )
    assert (s.max_age, s.decay_half_life, s.calc_period) == (7 * DAY, 7 * DAY, 300.0)
    assert (s.bf_interval, s.bf_resolution, s.bf_window, s.bf_max_job_test) == (30.0, 60.0, DAY, 500)
    assert s.fair_tree and s.backfill and not s.multifactor and not s.favor_small


def test_the_test_clusters_generated_conf() -> None:
    s = read_scheduler_settings(TESTCLUSTER_CONF)
    assert s.priority_type == "priority/multifactor"
    assert (s.weight_job_size, s.weight_partition, s.weight_age, s.weight_fairshare) == (1000, 1000, 0, 0)
    assert not s.favor_small
    # sched_interval and sched_min_interval are not backfill options; bf_window keeps its default.
    assert (s.bf_interval, s.bf_resolution, s.bf_window, s.bf_max_job_test) == (5.0, 60.0, DAY, 500)


def test_scontrol_show_config_output() -> None:
    text = """\
Configuration data as of 2026-01-01T00:00:00
PriorityParameters      = (null)
PriorityCalcPeriod      = 00:05:00
PriorityDecayHalfLife   = 7-00:00:00
PriorityFavorSmall      = No
PriorityFlags           = NO_FAIR_TREE
PriorityMaxAge          = 1-00:00:00
PriorityType            = priority/multifactor
PriorityWeightAge       = 100
PriorityWeightFairShare = 0
SchedulerParameters     = bf_interval=5,bf_resolution=60
SchedulerType           = sched/backfill
"""
    s = settings_from_show_config(text)
    assert (s.calc_period, s.max_age, s.weight_age, s.bf_interval) == (300.0, DAY, 100, 5.0)
    assert s.priority_flags == ("NO_FAIR_TREE",) and not s.fair_tree


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5", 300.0),
        ("5:30", 330.0),
        ("1:02:03", 3723.0),
        ("2-3", 2 * DAY + 3 * 3600),
        ("2-3:04", 2 * DAY + 3 * 3600 + 240),
        ("7-00:00:00", 7 * DAY),
        ("0", 0.0),
        ("1-", None),
        ("abc", None),
        ("-5", None),
        ("INFINITE", None),
    ],
)
def test_time_strings(text: str, seconds: float | None) -> None:
    assert parse_time(text) == seconds
    if seconds is not None:
        assert parse_time(format_time(seconds)) == seconds


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("PriorityWeightAge=-3", "PriorityWeightAge"),
        ("PriorityWeightFairshare=lots", "PriorityWeightFairshare"),
        ("PriorityMaxAge=soon", "PriorityMaxAge"),
        ("PriorityCalcPeriod=0", "PriorityCalcPeriod"),
        ("PriorityFavorSmall=MAYBE", "PriorityFavorSmall"),
        ("PriorityFlags=FAIR_TREE_PLEASE", "PriorityFlags"),
        ("PriorityType=priority/fancy", "PriorityType"),
        ("SchedulerType=sched/hold", "SchedulerType"),
        ("SchedulerParameters=bf_window=0", "SchedulerParameters"),
        ("SchedulerParameters=bf_interval=x", "SchedulerParameters"),
        ("SchedulerParameters=bf_max_job_test", "SchedulerParameters"),
        ("SchedulerParameters=bf_resolution=3601", "SchedulerParameters"),
    ],
)
def test_bad_values_name_file_line_and_key(line: str, key: str) -> None:
    conf = parse_slurm_conf(f"ClusterName=x\n{line}\n", "etc/slurm.conf")
    with pytest.raises(SpecError) as err:
        scheduler_settings(conf)
    message = err.value.format()
    assert message.startswith(f"etc/slurm.conf, line 2, column '{key}': ")
    assert "\n" not in message


def test_settings_round_trip_through_conf_pairs() -> None:
    s = scheduler_settings(parse_slurm_conf(FULL, "site/slurm.conf"))
    assert settings_from_mapping(s.as_conf(), "spec.toml") == s
    assert settings_from_mapping({}, "spec.toml") == SchedulerSettings()
    with pytest.raises(SpecError, match="scheduler.PriorityWeightAges"):
        settings_from_mapping({"PriorityWeightAges": 3}, "spec.toml")
    assert settings_from_mapping({"PriorityWeightAge": 7}, "spec.toml").weight_age == 7
    assert "fair tree" in SchedulerSettings(priority_type="priority/multifactor").describe()
