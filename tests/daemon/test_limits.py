"""Accounting limits read from sacctmgr, and the check a grow of an elastic job must pass."""

from __future__ import annotations

from slurmrl.daemon.limits import AccountLimits, grows, limit_problem, parse_assoc, parse_qos
from slurmrl.slurm.accounting import parse_tres
from slurmrl.slurm.elastic import GpuAsk
from slurmrl.slurm.snapshot import SlurmJob

QOS = "normal|||\ngpu8|cpu=128,gres/gpu=8,node=2|gres/gpu=8|\ngrp|||node=3\n"
ASSOC = "root||||||\nml|||root|node=4||\nml|alice|||||gres/gpu:v100=12\nml|bob||||gres/gpu=2|\n"
JOB = SlurmJob("7", user="alice", account="ml", partition="gpu", qos="gpu8", min_cpus=8)


def test_tres_text_is_read_as_counts() -> None:
    assert parse_tres("cpu=128,gres/gpu=8,node=2") == {"cpu": 128, "gres/gpu": 8, "node": 2}
    assert parse_tres("") == {} and parse_tres("gres/gpu:V100=4") == {"gres/gpu:v100": 4}


def test_a_job_meets_its_qos_its_association_and_every_account_above() -> None:
    limits = AccountLimits(parse_qos(QOS), parse_assoc(ASSOC))
    sources = [lim.source for lim in limits.for_job(JOB)]
    assert sources == ["QOS gpu8", "association ml/alice", "association ml", "association root"]


def test_a_grow_past_a_limit_names_it() -> None:
    limits = AccountLimits(parse_qos(QOS), parse_assoc(ASSOC)).for_job(JOB)
    assert limit_problem(JOB, GpuAsk(8, 1, cpus=8), limits) == ""
    assert limit_problem(JOB, GpuAsk(8, 2, cpus=16), limits) == (
        "QOS gpu8 MaxTRESPerJob gres/gpu=8 (it would ask for 16)"
    )
    assert limit_problem(JOB, GpuAsk(2, 3, cpus=8), limits) == (
        "QOS gpu8 MaxTRESPerJob node=2 (it would ask for 3)"
    )
    # A GPU type's own limit on the user's association (GrpTRES compared with the job alone).
    other = SlurmJob("8", user="alice", account="ml", qos="normal", min_cpus=1)
    mine = AccountLimits(parse_qos(QOS), parse_assoc(ASSOC)).for_job(other)
    assert limit_problem(other, GpuAsk(4, 4, "v100"), mine) == (
        "association ml/alice GrpTRES gres/gpu:v100=12 (it would ask for 16)"
    )


def test_only_a_request_for_more_of_something_is_a_grow() -> None:
    now = GpuAsk(8, 1, cpus=32)
    assert grows(now, GpuAsk(8, 2, cpus=64)) and grows(now, GpuAsk(8, 1, cpus=64))
    assert not grows(now, GpuAsk(4, 1, cpus=16)) and grows(now, GpuAsk(2, 2, cpus=32))  # nodes count too
