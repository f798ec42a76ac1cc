"""Sweep axes crossed into cells, and sweep files read with one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmrl.errors import ConfigError
from slurmrl.grid.spec import Grid, option_axes, read_sweep_file, seeds_of


def test_cross_product_of_every_axis() -> None:
    grid = Grid(
        policies=(("fifo", None), ("tiresias", "topology")),
        scenarios=("philly-sample",),
        traces=("a.csv",),
        clusters=("2x4x8", "4x4x8"),
        seeds=(0, 1),
        options=option_axes({"target_load": [0.8, 1.0], "speed_model": ["none"]}),
    )
    cells = grid.cells()
    assert len(cells) == (1 + 1 * 2) * 2 * 2 * 2
    assert {(c.scenario, c.trace, c.cluster) for c in cells} == {
        ("philly-sample", None, None),
        (None, "a.csv", "2x4x8"),
        (None, "a.csv", "4x4x8"),
    }
    assert all(dict(c.options)["speed_model"] == "none" for c in cells)
    assert grid.varied() == ["target_load"]
    assert len({c.id for c in cells}) == len(cells)


def test_repeated_cells_and_empty_axes_are_errors() -> None:
    with pytest.raises(ConfigError, match="same cell twice"):
        Grid(policies=(("fifo", None), ("fifo", None))).cells()
    with pytest.raises(ConfigError, match="a scenario fixes its own cluster"):
        Grid(policies=(("fifo", None),), scenarios=("philly-sample",), clusters=("2x4x8",)).cells()
    with pytest.raises(ConfigError, match="option 'limit' has no values"):
        option_axes({"limit": []})


def test_seeds_are_a_count_or_a_list() -> None:
    assert seeds_of(3, 5) == (5, 6, 7)
    assert seeds_of([0, 4]) == (0, 4)
    for bad in (0, True, ["a"], 1.5):
        with pytest.raises(ConfigError, match="seeds"):
            seeds_of(bad)


def test_sweep_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text('policies = ["fifo"]\n[options]\ntarget-load = [0.8]\n')
    assert read_sweep_file(path) == {"policies": ["fifo"], "target_load": [0.8]}
    path.write_text("policies = [\n")
    with pytest.raises(ConfigError, match=f"{path}: invalid TOML"):
        read_sweep_file(path)
    path.write_text("limit = 5\n[options]\nlimit = 6\n")
    with pytest.raises(ConfigError, match="limit given both"):
        read_sweep_file(path)
    with pytest.raises(ConfigError, match="cannot read sweep file"):
        read_sweep_file(tmp_path / "missing.toml")
    path.write_text('policies = ["fifo"]\ntarget_lod = 0.8\n')
    with pytest.raises(ConfigError, match=f"{path}: unknown key 'target_lod'.*did you mean 'target_load'"):
        read_sweep_file(path)
    path.write_text('[grid]\npolicies = ["fifo"]\n')
    with pytest.raises(ConfigError, match=rf"{path}: \[grid\] is not a table a sweep file has"):
        read_sweep_file(path)
