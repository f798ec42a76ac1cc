"""sprio's factors keyed by the snapshot's job ids, array tasks included."""

from __future__ import annotations

from slurmrl.daemon.factors import PriorityFactors, keyed_like, parse_sprio
from slurmrl.slurm.snapshot import SlurmJob


def test_an_array_task_finds_its_factors_under_its_numeric_id() -> None:
    # sprio prints numeric ids: 41 is task 7_2 split off array 7; 9 is a plain job.
    factors = parse_sprio("41|1700|700|25|0|0|0|1000|0|0\n9|1000|0|0|0|0|0|1000|0|0\n")
    jobs = [
        SlurmJob("7_2", array_job_id=7, array_task="2", slurm_id=41),
        SlurmJob("9", slurm_id=9),
        SlurmJob("7_3", array_job_id=7, array_task="3", slurm_id=42),  # not listed by sprio
    ]
    keyed = keyed_like(factors, jobs)
    assert keyed == {"7_2": PriorityFactors(700, 25, False), "9": PriorityFactors(0, 0, False)}


def test_factors_already_keyed_by_the_snapshot_ids_are_kept() -> None:
    own = {"7_2": PriorityFactors(5, 0, False)}
    assert keyed_like(own, [SlurmJob("7_2", slurm_id=41)]) == own
