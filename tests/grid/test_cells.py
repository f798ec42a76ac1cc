"""Cells: options checked and normalised, stable ids, and a replay equal to simulate's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from slurmrl.errors import ConfigError
from slurmrl.grid.cells import Cell, Replay, normal_options, replay, simulate_cell, split_options
from slurmrl.sim.experiment import SimSettings, prepare, run_policy
from slurmrl.sim.results import read_results


def test_defaults_are_dropped_and_values_are_plain_data() -> None:
    options = normal_options(
        {"speed_model": "placement", "limit": 50, "vcs": "vc1", "locality": "pack", "target_load": None}
    )
    assert options == (("limit", 50), ("vcs", ("vc1",)))
    workload, settings = split_options({"speed_model": "none", "locality": "any", "limit": 5})
    assert workload == {"limit": 5}
    assert settings.speed_model == "none" and str(settings.locality) == "any"


def test_unknown_option_names_the_close_ones() -> None:
    with pytest.raises(ConfigError, match="unknown option 'target_lod'.*did you mean 'target_load'"):
        normal_options({"target_lod": 1.0})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"limit": "8000"}, "option 'limit' takes an integer, not '8000'"),
        ({"target_load": "0.9"}, "option 'target_load' takes a number, not '0.9'"),
        ({"enforce_limits": "yes"}, "option 'enforce_limits' takes true/false, not 'yes'"),
        ({"speed_model": 3}, "option 'speed_model' takes text, not 3"),
        ({"limit": 2.5}, "option 'limit' takes an integer, not 2.5"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_clear_error(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        normal_options(options, "simulate")


def test_numbers_of_any_kind_are_taken_where_a_number_is() -> None:
    assert normal_options(
        {"limit": np.int64(50), "target_load": 1, "start": np.float32(2.0), "skip_bad": np.bool_(True)}
    )
    assert normal_options({"target_load": None, "limit": None}) == ()


def test_id_is_readable_and_changes_with_any_choice() -> None:
    cell = Cell("fifo", None, 0, "embedded:philly-sample", "2x4x8:v100", None, (("limit", 50),))
    assert cell.id.startswith("embedded-philly-sample_fifo+_s0_")
    assert cell.id == Cell(**{**cell.__dict__}).id
    others = [
        Cell("fifo", None, 1, cell.trace, cell.cluster),
        Cell("fifo", "topology", 0, cell.trace, cell.cluster),
    ]
    assert len({cell.id, *(c.id for c in others)}) == 3


def test_replay_saves_the_run_simulate_gives(tmp_path: Path) -> None:
    cell = Cell("sjf-oracle", None, 3, None, "2x4x8:v100", None, normal_options({"limit": 60}))
    row = replay(Replay(cell, str(tmp_path), runs=True))
    direct = run_policy(prepare(cluster="2x4x8:v100", seed=3, limit=60), "sjf-oracle", settings=SimSettings())
    saved = read_results(tmp_path / "runs" / "sjf-oracle+first-fit")
    assert saved.records == direct.records
    assert row["policy"] == "sjf-oracle" and row["avg_jct"] == direct.summary["avg_jct"]
    assert simulate_cell(cell).records == direct.records
