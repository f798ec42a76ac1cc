"""``benchmarks/information_bound.py``: its known-distribution bound is gittins-limit's own curve on every run time."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

from slurmrl.policy.ordering.gittins import RunTimes
from slurmrl.traces.schema import TraceJob
from tests.policy.test_gittins import job
from tests.policy.test_limit_baselines import view_of

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "information_bound.py"


def _module():
    spec = importlib.util.spec_from_file_location("information_bound", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bound_keys_as_gittins_limit_told_every_run_time_and_learns_nothing_more() -> None:
    rng = np.random.default_rng(3)
    limits = rng.choice([3600.0, 86400.0, 604800.0], 300)
    runs = [float(limit * rng.random() ** 2) for limit in limits]
    jobs = [
        TraceJob(f"t{i}", 0.0, ran, 1, vc="a", time_limit=float(limit))
        for i, (limit, ran) in enumerate(zip(limits, runs, strict=True))
    ]
    known = _module().KnownRunTimes(jobs, by_vc=False)
    told = RunTimes()
    for i, (limit, ran) in enumerate(zip(limits, runs, strict=True)):
        told.learn(job(f"t{i}", float(limit)), ran, from_accounting=True)
    told.refresh()
    asks = [
        job(f"w{i}", limit, start=0.0, service=s)
        for i, (limit, s) in enumerate([(3600.0, 0.0), (86400.0, 5e3), (604800.0, 9e4)])
    ]
    assert [known.key(j, 1e5) for j in asks] == [told.key(j, 1e5) for j in asks]
    before = [known.key(j, 1e5) for j in asks]
    for i in range(500):
        known.learn(job(f"late{i}", 3600.0), 1.0)
    known.refresh()
    assert [known.key(j, 1e5) for j in asks] == before


def test_a_table_is_handed_over_once_as_if_read_from_accounting() -> None:
    table = [TraceJob(f"t{i}", 10.0 * i, 600.0 + i, 1, time_limit=3600.0) for i in range(40)]
    policy = _module().tabled("first-fit", table)
    view = view_of("1x1x8", [], now=1e5)
    policy.prepare(view)
    assert policy.runs._count(None) == 40 and len(policy.runs._pooled_history) == 40
    policy.prepare(view)
    assert policy.runs._count(None) == 40


def test_it_refuses_a_held_out_window() -> None:
    for args in (["--scenario", "philly-280-weeks7-8-warm"], ["--table", "philly-448-weeks3-4"]):
        done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
        assert done.returncode != 0 and "training-side windows only" in done.stderr, args
