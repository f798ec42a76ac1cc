"""Parsers on real (22.05, 24.11) and constructed (23.02-26.05 but 24.11) Slurm output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmrl.errors import SlurmError
from slurmrl.slurm.parse_gres import gpu_items, gpu_request, job_gpu_detail, parse_index_list, tres_gpu_count
from slurmrl.slurm.parse_json import data_parser_version, parse_nodes_json, parse_squeue_json
from slurmrl.slurm.parse_text import (
    SEP,
    SQUEUE_FIELDS,
    parse_duration,
    parse_scontrol_jobs,
    parse_scontrol_nodes,
    parse_squeue_text,
    split_record,
)

FIX = Path(__file__).resolve().parent / "fixtures"
VERSIONS = ["v22.05", "v23.02", "v23.11", "v24.05", "v24.11", "v25.11", "v26.05"]
RECORDED = ["v22.05", "v24.11"]  # real recordings, with text outputs beside the JSON
QUOTED = """it's "quoted" | $(x) name"""

# What the 22.05 recording holds (README.md), the same in every constructed version.
HELD_INDICES = {
    "3": {"node01": (0,), "node02": (0,)},
    "4": {"node01": (1, 2)},
    "5": {"node01": (3, 4, 5, 6)},
    "6": {"node03": tuple(range(8))},
    "7_0": {"node02": (1, 2, 3, 4)},
    "7_1": {"node04": (0, 1, 2, 3)},
    "7_2": {"node04": (4, 5, 6, 7)},
}
# Slurm 24.11 hands the same jobs other GPUs: it spreads a job over the NVLink islands
# of gres.conf's Links= (GPUs 0-3 and 4-7), where 22.05 counts up from the lowest free.
HELD_INDICES_24_11 = {
    "4": {"node01": (1, 4)},
    "5": {"node01": (2, 3, 5, 6)},
    "7_0": {"node02": (1, 2, 4, 5)},
    "7_1": {"node04": (0, 1, 4, 5)},
    "7_2": {"node04": (2, 3, 6, 7)},
}


def held_indices(version: str) -> dict[str, dict[str, tuple[int, ...]]]:
    """GPU indices of the running jobs of a recording (constructed versions copy 22.05's)."""
    return {**HELD_INDICES, **(HELD_INDICES_24_11 if version == "v24.11" else {})}


PENDING_ASKS = {  # job id: (total GPUs, per node, field)
    "7_[3-5]": (4, 4, "tres_per_node"),  # --gres=gpu:4
    "11": (2, 2, "tres_per_job"),  # --gpus=2
    "12": (1, 1, "tres_per_node"),  # --gres=gpu:1
    "13": (8, 8, "tres_per_job"),  # --gpus=8 -N1
    "14": (16, 8, "tres_per_node"),  # -N2 --gpus-per-node=8
}


def _squeue(version: str):
    return {j.job_id: j for j in parse_squeue_json((FIX / version / "squeue.json").read_text())}


def _nodes(version: str):
    name = "sinfo.json" if version == "v22.05" else "scontrol_show_nodes.json"
    return {n.name: n for n in parse_nodes_json((FIX / version / name).read_text())}


@pytest.mark.parametrize("version", VERSIONS)
def test_running_jobs_gpu_indices(version: str) -> None:
    jobs = _squeue(version)
    for job_id, expected in held_indices(version).items():
        assert jobs[job_id].state == "RUNNING"
        assert jobs[job_id].gpu_indices() == expected, job_id
    assert jobs["3"].nodes == ("node01", "node02")
    assert jobs["6"].time_limit == 7200.0


@pytest.mark.parametrize("version", ["v22.05", "v23.11", "v24.05", "v24.11", "v25.11"])
def test_restart_counts(version: str) -> None:
    """``restart_cnt``, a plain integer in every squeue --json shape that has it."""
    doc = json.loads((FIX / version / "squeue.json").read_text())
    assert all(rec["restart_cnt"] == 0 for rec in doc["jobs"])
    doc["jobs"][0]["restart_cnt"] = 3
    jobs = parse_squeue_json(json.dumps(doc))
    assert jobs[0].restarts == 3 and all(j.restarts == 0 for j in jobs[1:])


@pytest.mark.parametrize("version", VERSIONS)
def test_pending_gpu_asks_and_flags(version: str) -> None:
    jobs = _squeue(version)
    for job_id, (total, per_node, source) in PENDING_ASKS.items():
        req = jobs[job_id].gpus
        assert (req.total, req.per_node, req.source) == (total, per_node, source), job_id
        assert jobs[job_id].state == "PENDING"
    assert jobs["11"].held and jobs["11"].required_nodes == ("node03",)
    assert not jobs["12"].held and jobs["12"].dependency == "afterok:4(unfulfilled)"
    assert not jobs["12"].eligible and not jobs["11"].eligible and jobs["14"].eligible
    assert jobs["13"].name == QUOTED and jobs["13"].partition == "debug"
    assert jobs["14"].admin_comment == "slurmrl: placed by policy"
    assert jobs["7_[3-5]"].task_ids() == ["7_3", "7_4", "7_5"]
    assert jobs["2"].state == "FAILED" and jobs["1"].state == "COMPLETED"
    assert jobs["14"].time_limit is None and jobs["14"].start_time is None


@pytest.mark.parametrize("version", VERSIONS)
def test_nodes(version: str) -> None:
    nodes = _nodes(version)
    assert sorted(nodes) == ["node01", "node02", "node03", "node04"]
    n1 = nodes["node01"]
    assert n1.states == {"MIXED"} and not n1.unavailable
    assert n1.partitions == ("gpu", "debug")
    assert (n1.gpu_count, n1.gpu_type, n1.used_count, n1.used_indices) == (8, "v100", 7, tuple(range(7)))
    on_node02 = {i for held in held_indices(version).values() for i in held.get("node02", ())}
    assert nodes["node02"].used_indices == tuple(sorted(on_node02))
    assert (n1.cpus, n1.memory_mb) == (64, 256000)


@pytest.mark.parametrize("version", ["v23.11", "v24.05", "v24.11", "v25.11", "v26.05"])
def test_sinfo_node_groups(version: str) -> None:
    nodes = {n.name: n for n in parse_nodes_json((FIX / version / "sinfo.json").read_text())}
    assert nodes["node01"].partitions == ("gpu", "debug")
    assert nodes["node01"].used_indices == tuple(range(7))


def test_data_parser_versions() -> None:
    assert data_parser_version(json.loads((FIX / "v22.05" / "squeue.json").read_text())) == "v0.0.38"
    assert data_parser_version(json.loads((FIX / "v24.11" / "squeue.json").read_text())) == "v0.0.42"


def test_unknown_shape_names_field_and_version() -> None:
    doc = json.loads((FIX / "v24.11" / "squeue.json").read_text())
    doc["jobs"][0]["priority"] = {"weird": 1}
    with pytest.raises(SlurmError) as err:
        parse_squeue_json(json.dumps(doc))
    assert "'priority'" in str(err.value) and "v0.0.42" in str(err.value) and "24.11" in str(err.value)
    with pytest.raises(SlurmError, match="jobs"):
        parse_squeue_json(json.dumps({"meta": doc["meta"], "something": []}))
    with pytest.raises(SlurmError, match="did not print JSON"):
        parse_squeue_json("squeue: error: oops")


def test_gres_spellings() -> None:
    assert [(i.type, i.count, i.indices) for i in gpu_items("gpu:v100:2(IDX:0-1),nic:1")] == [
        ("v100", 2, (0, 1))
    ]
    assert gpu_items("gres/gpu:a100:4")[0].count == 4
    assert gpu_items("gres:gpu:3")[0].count == 3
    assert gpu_items("gpu:v100:8(S:0-1)")[0].indices is None
    assert gpu_items("gpu:v100:0(IDX:N/A)")[0].indices == ()
    assert gpu_items("(null)") == () and gpu_items("") == ()
    assert gpu_items("gpu:v100:1(IDX:0),gpu:a100:2(IDX:1,3)")[1].indices == (1, 3)
    assert tres_gpu_count("cpu=4,mem=8G,gres/gpu=2,gres/gpu:v100=2") == 2
    assert tres_gpu_count("cpu=4") is None
    detail = job_gpu_detail(["gpu:v100:1(IDX:0)", "nic:1"])
    assert detail[0].indices == (0,) and detail[1] is None


def test_gpu_request_styles() -> None:
    assert gpu_request(per_node="gres/gpu:2", num_nodes=3).total == 6
    r = gpu_request(per_job="gres/gpu:4", num_nodes=2)
    assert (r.total, r.per_node) == (4, None)
    r = gpu_request(per_task="gres/gpu:1", num_tasks=8, num_nodes=2, tasks_per_node=4)
    assert (r.total, r.per_node, r.source) == (8, 4, "tres_per_task")
    r = gpu_request(per_task="gres:gpu:2", num_tasks=3, num_nodes=1)
    assert (r.total, r.per_node) == (6, 6)
    assert gpu_request(per_node="gres/gpu:v100:2").gpu_type == "v100"
    assert gpu_request(tres_req="cpu=1,gres/gpu=3").total == 3
    assert gpu_request().total == 0


@given(st.lists(st.integers(0, 200), min_size=0, max_size=30))
def test_index_list_roundtrip(idx: list[int]) -> None:
    values = sorted(set(idx))
    ranges: list[str] = []
    for v in values:
        if ranges and "-" not in ranges[-1].split(",")[-1] and int(ranges[-1]) == v - 1:
            ranges[-1] = f"{ranges[-1]}-{v}"
        elif ranges and "-" in ranges[-1] and int(ranges[-1].split("-")[1]) == v - 1:
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{v}"
        else:
            ranges.append(str(v))
    assert parse_index_list(",".join(ranges)) == tuple(values)


def _one_line(path: Path) -> str:
    return "\n".join(
        " ".join(line.strip() for line in rec.splitlines() if line.strip())
        for rec in path.read_text().split("\n\n")
        if rec.strip()
    )


@pytest.mark.parametrize("version", RECORDED)
def test_scontrol_text_matches_json(version: str) -> None:
    text_jobs = {j.job_id: j for j in parse_scontrol_jobs(_one_line(FIX / version / "scontrol_show_job.txt"))}
    json_jobs = _squeue(version)
    assert set(text_jobs) == set(json_jobs)
    for job_id, expected in held_indices(version).items():
        assert text_jobs[job_id].gpu_indices() == expected
    for job_id, (total, per_node, _) in PENDING_ASKS.items():
        assert (text_jobs[job_id].gpus.total, text_jobs[job_id].gpus.per_node) == (total, per_node)
    assert text_jobs["13"].name == QUOTED
    assert text_jobs["14"].admin_comment == "slurmrl: placed by policy"
    assert text_jobs["11"].held and text_jobs["11"].required_nodes == ("node03",)
    # A job without --time (partition MaxTime=UNLIMITED) reads UNLIMITED on 22.05; 24.11 gives it
    # 365 days when it starts (TimeLimit=365-00:00:00, JSON time_limit 525600 minutes).
    unlimited = 365 * 86400.0 if version == "v24.11" else None
    assert text_jobs["6"].time_limit == 7200.0 and text_jobs["1"].time_limit == unlimited
    assert json_jobs["1"].time_limit == unlimited and json_jobs["14"].time_limit is None  # 14 is pending
    nodes = {n.name: n for n in parse_scontrol_nodes(_one_line(FIX / version / "scontrol_show_node.txt"))}
    assert nodes["node01"].used_indices == tuple(range(7)) and nodes["node01"].partitions == ("gpu", "debug")


def test_split_record_free_text() -> None:
    line = (
        "JobId=5 JobName=a b Foo=1 c=2 UserId=me(1) Reason=maint [root@x] "
        "Comment=model=resnet50 x Partition=gpu"
    )
    pairs = dict(split_record(line))
    assert pairs["JobName"] == "a b Foo=1 c=2"
    assert pairs["Reason"] == "maint [root@x]"
    assert pairs["Comment"] == "model=resnet50 x" and pairs["Partition"] == "gpu"


def test_squeue_text_name_last() -> None:
    values = {f: "" for f in SQUEUE_FIELDS}
    values.update(
        jobid="42",
        array_job_id="42",
        array_task_id="N/A",
        state="PENDING",
        reason="Resources",
        priority="100",
        tres_per_node="gres:gpu:2",
        num_nodes="2",
        time_limit="1-00:00:00",
        submit_time="2026-01-01T00:00:00",
        start_time="N/A",
        user="alice",
        account="ml",
        partition="gpu",
        qos="normal",
        nodes="",
        dependency="",
        comment="model=bert",
        name=f"{QUOTED}{SEP}tail",
    )
    line = SEP.join(values[f] for f in SQUEUE_FIELDS)
    (job,) = parse_squeue_text(line + "\n")
    assert job.name == f"{QUOTED}{SEP}tail"
    assert (job.gpus.total, job.time_limit, job.model, job.account) == (4, 86400.0, "bert", "ml")
    with pytest.raises(SlurmError, match="fields"):
        parse_squeue_text("1|2|3\n")


def test_durations() -> None:
    assert parse_duration("UNLIMITED") is None
    assert parse_duration("365-00:00:00") == 365 * 86400
    assert parse_duration("2:00:00") == 7200
    assert parse_duration("30") == 1800
    assert parse_duration("1-2") == 86400 + 7200


@pytest.mark.parametrize("text", ["1e400", "1:2:3:4", "-5:00", "1-", "soon"])
def test_a_time_limit_slurm_never_prints_is_a_slurm_error(text: str) -> None:
    with pytest.raises(SlurmError, match=f"cannot read Slurm time limit '{text}'"):
        parse_duration(text)


def _paths(node: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every key path into a JSON document (the first three items of each list)."""
    out: list[tuple[object, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node[:3]) if isinstance(node, list) else ()
    for key, child in items:
        out.append((*path, key))
        out.extend(_paths(child, (*path, key)))
    return out


_JSON_DOCS = [
    (v, name) for v in VERSIONS for name in ("squeue.json", "sinfo.json") if (FIX / v / name).is_file()
]


@settings(max_examples=300, deadline=None)
@given(
    doc=st.sampled_from(_JSON_DOCS),
    pick=st.integers(min_value=0),
    value=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=6),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.sampled_from(["set", "infinite", "number"]), st.integers() | st.booleans()),
    ),
)
def test_any_value_anywhere_in_slurm_json_parses_or_is_a_slurm_error(
    doc: tuple[str, str], pick: int, value: object
) -> None:
    """A release whose JSON shapes differ must fail naming a field, never with a traceback."""
    version, name = doc
    data = json.loads((FIX / version / name).read_text())
    paths = _paths(data)
    path = paths[pick % len(paths)]
    target = data
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    parse = parse_squeue_json if name == "squeue.json" else parse_nodes_json
    try:
        parse(json.dumps(data))
    except SlurmError as exc:
        assert "\n" not in str(exc)


ODD = "odd\x0cname\x1eend\u2028x"  # form feed, record separator, line separator: in a job name


def test_a_job_name_with_line_breaks_other_than_newline_keeps_its_record_whole() -> None:
    """``scontrol -o`` and ``squeue`` end records at newlines only; a name may hold other breaks."""
    text = (
        f"JobId=5 JobName={ODD} UserId=alice(1000) JobState=PENDING Reason=Resources "
        "NumNodes=1 TimeLimit=01:00:00 SubmitTime=2026-01-01T00:00:00 Partition=gpu TresPerNode=gres:gpu:2\n"
        "JobId=6 JobName=plain UserId=bob(1001) JobState=PENDING Reason=Priority NumNodes=1 "
        "TimeLimit=00:30:00 SubmitTime=2026-01-01T00:00:00 Partition=gpu TresPerNode=gres:gpu:1\n"
    )
    jobs = {j.job_id: j for j in parse_scontrol_jobs(text)}
    assert set(jobs) == {"5", "6"}
    assert (jobs["5"].name, jobs["5"].state, jobs["5"].gpus.total, jobs["5"].time_limit) == (
        ODD,
        "PENDING",
        2,
        3600.0,
    )
