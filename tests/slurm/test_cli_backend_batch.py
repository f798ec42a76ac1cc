"""``scontrol update JobId=a,b,c``: which ids scontrol named as refused."""

from __future__ import annotations

import pytest

from slurmrl.slurm.cli_backend import CliBackend, refused_ids
from slurmrl.slurm.run import CommandFailed, JobNotFound, PartlyRefused, RateLimited, classify


def test_refused_ids_are_the_ids_scontrol_names_and_nothing_else() -> None:
    ids = ["7", "8", "9_2"]
    text = "Invalid job id specified for job 8\nJob is no longer pending execution for job 9_2\n"
    assert refused_ids(text, ids) == ("8", "9_2")
    assert refused_ids("Invalid job id specified for job 12", ids) is None  # not in the list
    assert refused_ids("scontrol: error: something else\nInvalid job id specified for job 8", ids) is None
    assert refused_ids("", ids) is None


def _backend(stderr: str) -> CliBackend:
    def runner(cmd, **kw):
        raise classify(cmd, 1, stderr)

    return CliBackend(runner=runner)


def test_a_partly_refused_list_names_the_refused_ids() -> None:
    with pytest.raises(PartlyRefused) as info:
        _backend("Invalid job id specified for job 8\n").update_many(["7", "8"], "site_factor", 10)
    assert info.value.refused == ("8",)


def test_other_list_failures_keep_their_kind() -> None:
    with pytest.raises(RateLimited):  # the rest of the list may not have been sent
        _backend("Resource temporarily unavailable for job 8\n").update_many(["7", "8"], "site_factor", 1)
    with pytest.raises(JobNotFound):
        _backend("scontrol: error: Invalid job id specified\n").update_many(["7", "8"], "site_factor", 1)
    with pytest.raises(CommandFailed):
        _backend("").update_many(["7", "8"], "site_factor", 1)
