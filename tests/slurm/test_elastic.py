"""The elastic opt-in tag on the read side (``gpus=MIN-MAX`` in the comment -> JobView.gpu_range),
and the GPU request the daemon writes back (``scontrol update Gres= NumNodes= NumCPUs=``)."""

from __future__ import annotations

from dataclasses import replace

import fake_slurm  # loaded by conftest.py
import pytest

from slurmrl.daemon.config import ScopeConfig
from slurmrl.daemon.scope import build_view, elastic_problems, scoped_pending
from slurmrl.errors import SlurmError
from slurmrl.slurm.cli_backend import CliBackend
from slurmrl.slurm.elastic import GpuAsk, elastic_tag, resized_layout
from slurmrl.slurm.parse_gres import GpuRequest, gpu_request
from slurmrl.slurm.parse_text import parse_scontrol_jobs
from slurmrl.slurm.run import CommandResult

PER_NODE = GpuRequest(8, 8, "v100", "tres_per_node")


@pytest.mark.parametrize(
    ("comment", "gpu_range"),
    [("gpus=2-8", (2, 8)), ("model=bert gpus=8-8", (8, 8)), ("x;gpus=1-16", (1, 16))],
)
def test_a_tag_holding_the_request_grants_its_range(comment: str, gpu_range: tuple[int, int]) -> None:
    tag = elastic_tag(comment, PER_NODE)
    assert tag is not None and tag.gpu_range == gpu_range and tag.problem == ""


@pytest.mark.parametrize(
    ("comment", "problem"),
    [
        ("gpus=8", "malformed"),
        ("gpus=8-2", "malformed"),
        ("gpus=0-4", "malformed"),
        ("gpus=two-8", "malformed"),
        ("gpus=", "malformed"),
        ("gpus=2-4", "outside its range 2-4"),
    ],
)
def test_a_bad_tag_is_reported_not_honoured(comment: str, problem: str) -> None:
    tag = elastic_tag(comment, PER_NODE)
    assert tag is not None and tag.gpu_range is None and problem in tag.problem


def test_only_a_per_node_request_can_be_elastic() -> None:
    tag = elastic_tag("gpus=2-8", GpuRequest(8, 8, "", "tres_per_job"))
    assert tag is not None and tag.gpu_range is None and "--gres=gpu:N" in tag.problem


def test_a_request_with_other_gres_is_not_elastic() -> None:
    """Rewriting ``Gres=gpu:P`` would drop the NIC the job also asked for."""
    request = gpu_request(per_node="gres:gpu:4,gres:nic:1")
    assert request.other_gres and not gpu_request(per_node="gres:gpu:v100:4").other_gres
    tag = elastic_tag("gpus=2-8", request)
    assert tag is not None and tag.gpu_range is None and "other GRES" in tag.problem


def test_no_tag_and_tags_elsewhere_are_not_elastic() -> None:
    assert elastic_tag("model=bert", PER_NODE) is None
    assert elastic_tag("ngpus=2-8", PER_NODE) is None  # a longer word ending in gpus= is not the tag
    job = replace(fake_slurm.pending("1", 8, 0.0, admin_comment="gpus=2-8"), name="gpus=2-8")
    assert job.gpu_range is None  # only the user's comment opts in


def test_views_carry_the_range_and_the_daemon_lists_unusable_tags() -> None:
    jobs = [
        fake_slurm.pending("1", 8, 1.0, comment="gpus=2-8"),
        fake_slurm.pending("2", 8, 2.0, comment="gpus=9-12"),
        fake_slurm.pending("3", 8, 3.0),
    ]
    snap = fake_slurm.FakeSlurm(jobs).snapshot()
    ranges = {j.job_id: j.gpu_range for j in snap.to_view().pending}
    assert ranges == {"1": (2, 8), "2": None, "3": None}
    scoped = scoped_pending(snap, ScopeConfig())
    assert {j.job_id: j.gpu_range for j in build_view(snap, scoped, ScopeConfig()).pending} == ranges
    assert [(jid, tag.text) for jid, tag in elastic_problems(scoped)] == [("2", "gpus=9-12")]


def test_the_request_as_scontrol_shows_it() -> None:
    line = (
        "JobId=7 JobName=x UserId=alice(1000) Account=ml JobState=PENDING Reason=Resources "
        "NumNodes=2-2 NumCPUs=2 NumTasks=2 NtasksPerN:B:S:C=1:0:*:* TresPerNode=gres:gpu:v100:4 "
        "Comment=gpus=2-8"
    )
    (job,) = parse_scontrol_jobs(line)
    assert job.gpu_range == (2, 8)
    assert job.gpu_ask == GpuAsk(4, 2, "v100", 2, 2, 2, 1)


@pytest.mark.parametrize(
    ("ask", "text", "settings"),
    [
        (GpuAsk(4, 1), "4x1", ("Gres=gpu:4", "NumNodes=1")),
        (GpuAsk(4, 2, "v100", 2), "4x2-2,type=v100", ("Gres=gpu:v100:4", "NumNodes=2-2")),
        (
            GpuAsk(8, 1, "v100", None, 1),
            "8x1,cpus=1,type=v100",
            ("Gres=gpu:v100:8", "NumNodes=1", "NumCPUs=1"),
        ),
        (
            GpuAsk(8, 1, "", 1, 32, 1, 1),
            "8x1-1,cpus=32,tasks=1,tpn=1",
            ("Gres=gpu:8", "NumNodes=1-1", "NumTasks=1", "TasksPerNode=1", "NumCPUs=32"),
        ),
    ],
)
def test_a_request_round_trips_through_its_text(ask: GpuAsk, text: str, settings: tuple[str, ...]) -> None:
    assert ask.text == text and GpuAsk.parse(text) == ask
    assert ask.settings((22, 5, 8)) == settings


@pytest.mark.parametrize(
    ("version", "nodes"),
    [((22, 5, 8), "NumNodes=1"), ((23, 2, 7), "NumNodes=1-0"), ((25, 5, 0), "NumNodes=1-0")],
)
def test_a_request_without_a_node_maximum_says_so_where_a_count_sets_one(
    version: tuple[int, int, int], nodes: str
) -> None:
    # From 23.02 scontrol's NumNodes=K sets the maximum to K too (verify_node_count); a job
    # that had none gets "K-0" back. 22.05 rejects "K-0" and leaves the maximum alone for "K".
    assert GpuAsk(8, 1).settings(version) == ("Gres=gpu:8", f"NumNodes={nodes.split('=')[1]}")
    assert GpuAsk(8, 1, max_nodes=1).settings(version)[1] == "NumNodes=1-1"


@pytest.mark.parametrize("text", ["", "4", "4x", "x2", "4x2,gpus=3", "4 x 2", "4x2,tasks=a"])
def test_a_malformed_request_text_is_an_error(text: str) -> None:
    with pytest.raises(SlurmError, match="is not a GPU request"):
        GpuAsk.parse(text)


def test_the_cli_backend_sends_one_update_and_checks_it() -> None:
    seen: list[list[str]] = []

    def runner(cmd, *, timeout=30, env=None):
        if cmd[0] == "sinfo":
            return CommandResult(tuple(cmd), 0, "slurm 22.05.8\n", "", 0.0)
        seen.append(list(cmd))
        return CommandResult(tuple(cmd), 0, "", "", 0.0)

    backend = CliBackend(runner=runner)
    backend.set_gpus("12", GpuAsk(2, 2, "v100", None, 1), ("nodes", ["node02", "node03"]))
    pinned = ["Gres=gpu:v100:2", "NumNodes=2", "NumCPUs=1", "ReqNodeList=node02,node03"]
    assert seen == [["scontrol", "update", "JobId=12", *pinned]]  # one update: no start in between
    for bad in (GpuAsk(0, 1), GpuAsk(2, 2, "", 1), replace(GpuAsk(2, 1), gpu_type="v100 NumNodes=9")):
        with pytest.raises(SlurmError):
            backend.set_gpus("12", bad)
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("current", "per_node", "nodes", "layout"),
    [
        # one task per node, 32 CPUs each: grown to two nodes, two tasks and 64 CPUs
        (GpuAsk(8, 1, "", 1, 32, 1, 1), 8, 2, (2, 1, 64)),
        # one rank per GPU: 8 ranks per node become 4 with 4 GPUs per node
        (GpuAsk(8, 1, "", 1, 8, 8, 8), 4, 1, (4, 4, 4)),
        # no --ntasks-per-node, one task per node (Slurm's default): one per node again
        (GpuAsk(8, 1, "", None, 1, 1, None), 4, 2, (2, None, 2)),
        # 16 tasks on one node, GPUs per node changed but not the node count: tasks kept
        (GpuAsk(8, 1, "", None, 16, 16, None), 4, 1, (16, None, 16)),
    ],
)
def test_a_rewrite_carries_the_task_layout_over(
    current: GpuAsk, per_node: int, nodes: int, layout: tuple[int | None, ...]
) -> None:
    assert resized_layout(current, per_node, nodes) == (layout, "")


@pytest.mark.parametrize(
    ("current", "per_node", "nodes", "words"),
    [
        (GpuAsk(8, 1, "", 1, 2, 2, 2), 4, 1, "--ntasks-per-node=2"),  # 2 ranks on 8 GPUs: no rule
        (GpuAsk(8, 1, "", None, 16, 16, None), 8, 2, "16 tasks"),  # spread by Slurm over nodes
    ],
)
def test_a_layout_without_a_faithful_rewrite_is_refused(
    current: GpuAsk, per_node: int, nodes: int, words: str
) -> None:
    (tasks, per, cpus), why = resized_layout(current, per_node, nodes)
    assert (tasks, per, cpus) == (None, None, None) and words in why
