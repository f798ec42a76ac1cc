"""``--format NAME`` on the command line reaches every loader.

Each tiny workload below is written under a name that says nothing of its
format (``workload.data``), so only ``--format`` can pick the loader; the run
records the format it used in the results' ``meta``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from slurmrl.cli import main
from slurmrl.traces import FORMATS

# format -> (file content, jobs it yields, extra files beside it)
WORKLOADS: dict[str, tuple[str, int, dict[str, str]]] = {
    "normalized": (
        "job_id,user,vc,submit_time,duration_s,num_gpus,num_nodes,status,job_type\n"
        "n1,u1,vc1,0,600,1,,COMPLETED,\nn2,u2,vc1,30,1200,4,1,FAILED,\n",
        2,
        {},
    ),
    "philly": (
        json.dumps(
            [
                {
                    "jobid": "application_1",
                    "user": "u1",
                    "vc": "vcA",
                    "status": "Pass",
                    "submitted_time": "2017-10-03 00:00:00",
                    "attempts": [
                        {
                            "start_time": "2017-10-03 00:01:00",
                            "end_time": "2017-10-03 00:11:00",
                            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}],
                        }
                    ],
                }
            ]
        ),
        1,
        {},
    ),
    "helios": (
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
        "j1,uA,vc7,8,64,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:00:20,2020-04-01 00:10:20,600,10\n",
        1,
        {},
    ),
    "acme": (
        "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
        "a1,u1,1,8,128,Evaluation,COMPLETED,2023-03-01 00:00:00+08:00,2023-03-01 00:00:10+08:00,"
        "2023-03-01 00:10:10+08:00,600,10,4800.0\n",
        1,
        {},
    ),
    "pai": (
        "jA,i1,u1,Terminated,1000,2000\njB,i2,u2,Failed,1100,1500\n",
        2,
        {
            "pai_task_table.csv": "jA,worker,2,Terminated,1010,1800,600,30,50,MISC\n"
            "jB,worker,3,Failed,1200,1400,600,30,100,MISC\n"
        },
    ),
    "openb": (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\npod-a,1000,100,1,300,,LS,Running,10,110,15\npod-c,1000,100,8,1000,,LS,Succeeded,5,500,100\n",
        2,
        {},
    ),
    "tiresias": (
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,606,vgg19,164,30\n"
        "1,8,30,133,vgg11,147,23\n",
        2,
        {},
    ),
    "chronus": (
        "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
        "expect_value_list,best_effort,job_type\n0,vc_6214e9,1,8555,5049,vgg16,747,14,1105,10,0,strict\n",
        1,
        {},
    ),
    "gavel": ("ResNet-50 (batch size 64)\tpython3 main.py\t--num_steps\t1\t5460\t6.0\t2\n", 1, {}),
    "pollux": (
        "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,4,2048\n"
        "imagenet-1,110,imagenet,8,800\n",
        2,
        {},
    ),
    "swf": ("; Version: 2.2\n1 0 5 100 8 -1 -1 8 3600 -1 1 3 1 -1 2 -1 -1 -1\n", 1, {}),
}


def test_every_loader_has_a_workload_here() -> None:
    assert set(WORKLOADS) == set(FORMATS)


def _simulate(path: Path, fmt: str) -> Result:
    args = ["simulate", "--trace", str(path), "--format", fmt, "--cluster", "1x2x8:v100", "--json"]
    return CliRunner().invoke(main, [*args, "--no-progress"])


@pytest.mark.parametrize("fmt", sorted(WORKLOADS))
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_format_option_picks_the_loader(tmp_path: Path, fmt: str, gzipped: bool) -> None:
    text, jobs, beside = WORKLOADS[fmt]
    for name, content in beside.items():
        (tmp_path / name).write_text(content)
    path = tmp_path / ("workload.data.gz" if gzipped else "workload.data")
    path.write_bytes(gzip.compress(text.encode(), mtime=0) if gzipped else text.encode())
    result = _simulate(path, fmt)
    assert result.exception is None, result.output
    out = json.loads(result.output)
    assert out["meta"]["trace_format"] == fmt
    assert out["meta"]["trace"] == str(path)
    assert out["jobs"] == jobs


def test_format_option_with_a_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, jobs, _ = WORKLOADS["tiresias"]
    (tmp_path / "jobs.txt").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = _simulate(Path("jobs.txt"), "tiresias")
    assert result.exception is None, result.output
    assert json.loads(result.output)["jobs"] == jobs


def test_a_wrong_format_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "workload.data"
    path.write_text(WORKLOADS["tiresias"][0])
    result = _simulate(path, "pollux")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and str(path) in errors[0], result.output


def test_unknown_format_names_the_known_ones(tmp_path: Path) -> None:
    result = _simulate(tmp_path / "workload.data", "normalised")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert "'normalized'" in result.output and "'swf'" in result.output
