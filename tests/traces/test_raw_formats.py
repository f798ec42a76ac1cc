import gzip
import json
from pathlib import Path

import pytest

from slurmrl.traces import TraceJob, load_trace
from slurmrl.traces.gavel import V100_STEPS_PER_S
from slurmrl.traces.pollux import APPLICATIONS


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_philly_raw_json(tmp_path: Path) -> None:
    jobs = [
        {
            "jobid": "application_2",
            "user": "u1",
            "vc": "vcA",
            "status": "Pass",
            "submitted_time": "2017-10-03 00:00:10",
            "attempts": [
                {
                    "start_time": "2017-10-03 00:01:00",
                    "end_time": "2017-10-03 00:02:00",
                    "detail": [
                        {"ip": "m1", "gpus": ["gpu0", "gpu1"]},
                        {"ip": "m2", "gpus": ["gpu0", "gpu1"]},
                    ],
                },
                {
                    "start_time": "2017-10-03 01:00:00",
                    "end_time": "2017-10-03 01:00:30",
                    "detail": [{"ip": "m3", "gpus": ["gpu0"]}],
                },
            ],
        },
        {
            "jobid": "application_1",
            "user": "u2",
            "vc": "vcB",
            "status": "Killed",
            "submitted_time": "2017-10-03 00:00:00",
            "attempts": [
                {
                    "start_time": "2017-10-03 00:00:05",
                    "end_time": "2017-10-03 00:00:09",
                    "detail": [{"ip": "m1", "gpus": ["gpu3"]}],
                }
            ],
        },
        {
            "jobid": "application_3",
            "user": "u3",
            "vc": "vcB",
            "status": "Failed",
            "submitted_time": "2017-10-03 00:05:00",
            "attempts": [{"start_time": None, "end_time": None, "detail": []}],
        },
    ]
    path = write(tmp_path / "cluster_job_log.json", json.dumps(jobs, indent=1))
    trace = load_trace(path)
    assert trace.format == "philly"
    assert trace.jobs == (
        TraceJob("application_1", 0.0, 4.0, 1, num_nodes=1, user="u2", vc="vcB", status="KILLED"),
        # Its last attempt held 1 GPU, not the 4 it asked for: the node count stays unknown.
        TraceJob("application_2", 10.0, 90.0, 4, user="u1", vc="vcA", status="COMPLETED"),
    )
    assert trace.dropped == {"no usable attempt": 1}
    assert trace.lines is not None and trace.lines["application_2"] == 2


def _attempt(start: str, end: str | None, machines: dict[str, int]) -> dict[str, object]:
    detail = [{"ip": ip, "gpus": [f"gpu{i}" for i in range(n)]} for ip, n in machines.items()]
    return {"start_time": f"2017-10-03 {start}", "end_time": end and f"2017-10-03 {end}", "detail": detail}


def test_philly_raw_node_count_is_the_last_attempts_machines(tmp_path: Path) -> None:
    jobs = [
        {  # 16 GPUs over two 8-GPU machines, then retried on four machines
            "jobid": "moved",
            "vc": "v",
            "status": "Pass",
            "submitted_time": "2017-10-03 00:00:00",
            "attempts": [
                _attempt("00:01:00", "00:02:00", {"m1": 8, "m2": 8}),
                _attempt("00:03:00", "00:04:00", {"m3": 4, "m4": 4, "m5": 4, "m6": 4}),
            ],
        },
        {  # the last attempt never started but was placed: its machines still count
            "jobid": "placed",
            "vc": "v",
            "status": "Failed",
            "submitted_time": "2017-10-03 00:00:01",
            "attempts": [
                _attempt("00:01:00", "00:02:00", {"m1": 2, "m2": 2}),
                _attempt("00:03:00", None, {"m7": 4}),
            ],
        },
        {  # a machine listed twice is one node; a trailing attempt without machines is passed over
            "jobid": "twice",
            "vc": "v",
            "status": "Pass",
            "submitted_time": "2017-10-03 00:00:02",
            "attempts": [
                {
                    "start_time": "2017-10-03 00:01:00",
                    "end_time": "2017-10-03 00:02:00",
                    "detail": [{"ip": "m9", "gpus": ["gpu0"]}, {"ip": "m9", "gpus": ["gpu1"]}],
                },
                {"start_time": None, "end_time": None, "detail": []},
            ],
        },
    ]
    trace = load_trace(write(tmp_path / "cluster_job_log.json", json.dumps(jobs)))
    nodes = {j.job_id: (j.num_gpus, j.num_nodes) for j in trace.jobs}
    assert nodes == {"moved": (16, 4), "placed": (4, 1), "twice": (2, 1)}


def test_helios_cluster_log(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cluster_log.csv",
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
        "j1,uA,vc7,8,64,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:00:20,2020-04-01 00:10:20,600,10\n"
        "j2,uB,vc7,0,4,1,COMPLETED,2020-04-01 00:00:00,,,5,0\n"
        "j3,uB,vc8,16,128,2,TIMEOUT,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:00:40,40,0\n",
    )
    trace = load_trace(path)
    assert trace.format == "helios"
    assert trace.jobs == (
        TraceJob("j3", 0.0, 40.0, 16, user="uB", vc="vc8", num_nodes=2, status="KILLED"),
        TraceJob("j1", 10.0, 600.0, 8, user="uA", vc="vc7", num_nodes=1, status="COMPLETED"),
    )
    assert trace.dropped == {"no GPUs": 1}


@pytest.mark.parametrize("header", [False, True])
def test_pai_job_and_task_tables(tmp_path: Path, header: bool) -> None:
    jobs = "job_name,inst_id,user,status,start_time,end_time\n" if header else ""
    jobs += "jA,i1,u1,Terminated,1000,2000\njB,i2,u2,Failed,1100,1500\njC,i3,u3,Terminated,900,950\n"
    tasks = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
    tasks = tasks if header else ""
    tasks += (
        "jA,worker,2,Terminated,1010,1800,600,30,50,V100\n"  # 2 x 0.5 GPU
        "jA,ps,1,Terminated,1005,1810,600,30,,MISC\n"  # CPU-only task
        "jB,worker,3,Failed,1200,1400,600,30,100,MISC\n"
        "jC,worker,1,Terminated,905,940,600,30,,\n"  # no GPUs at all
    )
    write(tmp_path / "pai_task_table.csv", tasks)
    trace = load_trace(write(tmp_path / "pai_job_table.csv", jobs))
    assert trace.format == "pai"
    assert trace.jobs == (
        TraceJob("jA", 100.0, 805.0, 1, user="u1", status="COMPLETED", gpu_type="V100"),
        TraceJob("jB", 200.0, 200.0, 3, user="u2", status="FAILED"),
    )
    assert trace.dropped == {"no GPUs": 1}


def test_pai_without_task_table_names_it(tmp_path: Path) -> None:
    from slurmrl.errors import TraceError

    path = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,1000,2000\n")
    with pytest.raises(TraceError, match="pai_task_table.csv"):
        load_trace(path)


def test_openb_raw_pod_list(tmp_path: Path) -> None:
    path = write(
        tmp_path / "openb_pod_list_default.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n"
        "pod-a,1000,100,1,300,,LS,Running,10,110,15\n"
        "pod-b,1000,100,0,0,,BE,Succeeded,11,50,12\n"
        "pod-c,1000,100,8,1000,V100M16,LS,Succeeded,5,500,100\n"
        "pod-d,1000,100,1,1000,,LS,Pending,7,20,\n"
        "pod-e,1000,100,2,1000,G2|T4,LS,Failed,8,30,9\n",
    )
    trace = load_trace(path)
    assert trace.format == "openb"
    assert trace.jobs == (
        TraceJob("pod-c", 5.0, 400.0, 8, num_nodes=1, status="COMPLETED", gpu_type="V100M16"),
        TraceJob("pod-e", 8.0, 21.0, 2, num_nodes=1, status="FAILED"),
        TraceJob("pod-a", 10.0, 95.0, 1, num_nodes=1, status="RUNNING"),
    )
    assert trace.dropped == {"no GPUs": 1, "never scheduled (empty duration)": 1}


def test_tiresias_and_chronus(tmp_path: Path) -> None:
    tir = write(
        tmp_path / "60_job.csv",
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,606,vgg19,164,30\n"
        "1,8,30,133,vgg11,147,23\n",
    )
    trace = load_trace(tir)
    assert trace.format == "tiresias"
    assert trace.jobs == (
        TraceJob("0", 0.0, 164.0, 1, model="vgg19"),
        TraceJob("1", 30.0, 147.0, 8, model="vgg11"),
    )
    chr_path = tmp_path / "trace_job_Philly_MIX1.csv.gz"
    chr_path.write_bytes(
        gzip.compress(
            b"job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
            b"expect_value_list,best_effort,job_type\n"
            b"0,vc_6214e9,1,8555,5049,vgg16,747,14,1105,10,0,strict\n"
            b"1,vc_ed69ec,0,832,296,mobilenet_v2,98,8,128,10,0,strict\n"
        )
    )
    trace = load_trace(chr_path)
    assert trace.format == "chronus"
    assert trace.jobs == (TraceJob("0", 8555.0, 747.0, 1, user="vc_6214e9", vc="6214e9", model="vgg16"),)
    assert trace.dropped == {"no GPUs": 1}


def test_gavel_old_and_new_layouts(tmp_path: Path) -> None:
    old = "ResNet-50 (batch size 64)\tpython3 main.py\t--num_steps\t1\t5460\t6.0\t2\n"
    old += "LM (batch size 20)\tpython main.py\t--steps\t1\t10800\t0.0\t1\n"
    trace = load_trace(write(tmp_path / "vc.trace", old))
    assert trace.format == "gavel"
    r50, lm = V100_STEPS_PER_S["ResNet-50 (batch size 64)"], V100_STEPS_PER_S["LM (batch size 20)"]
    assert trace.jobs == (
        TraceJob("gavel-1", 0.0, 10800 / lm, 1, model="lstm", name="LM (batch size 20)"),
        TraceJob("gavel-0", 6.0, 5460 / (r50 * 2), 2, model="resnet50", name="ResNet-50 (batch size 64)"),
    )
    new = "CycleGAN\tpython3 cyclegan.py\timage_translation\t--n_steps\t1\t492\t4\t1\t-1.000000\t30\n"
    trace = load_trace(write(tmp_path / "phys.trace", new))
    assert trace.jobs == (
        TraceJob(
            "gavel-0", 30.0, 492 / (V100_STEPS_PER_S["CycleGAN"] * 4), 4, model="cyclegan", name="CycleGAN"
        ),
    )


def test_pollux_workload(tmp_path: Path) -> None:
    path = write(
        tmp_path / "workload-1.csv",
        "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,4,2048\nimagenet-1,110,imagenet,8,800\n",
    )
    trace = load_trace(path)
    assert trace.format == "pollux"
    assert trace.jobs == (
        TraceJob(
            "cifar10-0", 107.0, APPLICATIONS["cifar10"][1] * 3600 / 4, 4, model="resnet18", name="cifar10"
        ),
        TraceJob(
            "imagenet-1", 110.0, APPLICATIONS["imagenet"][1] * 3600 / 8, 8, model="resnet50", name="imagenet"
        ),
    )


def test_swf_with_procs_per_gpu(tmp_path: Path) -> None:
    text = (
        "; Version: 2.2\n; Computer: test\n"
        "1 0 5 100 8 -1 -1 8 3600 -1 1 3 1 -1 2 -1 -1 -1\n"
        "2 10 0 50 -1 -1 -1 6 -1 -1 0 4 1 -1 -1 -1 -1 -1\n"  # requested procs used
        "3 20 0 -1 4 -1 -1 4 60 -1 5 4 1 -1 1 -1 -1 -1\n"  # unknown run time
    )
    path = write(tmp_path / "log.swf", text)
    trace = load_trace(path, procs_per_gpu=4)
    assert trace.format == "swf"
    assert trace.jobs == (
        TraceJob("1", 0.0, 100.0, 2, user="3", vc="2", status="COMPLETED", time_limit=3600.0),
        TraceJob("2", 10.0, 50.0, 2, user="4", status="FAILED"),
    )
    assert trace.lines == {"1": 3, "2": 4}
    assert trace.dropped == {"unknown run time": 1}
    assert [j.num_gpus for j in load_trace(path).jobs] == [8, 6]


def test_explicit_format_overrides_detection(tmp_path: Path) -> None:
    path = write(
        tmp_path / "noext",
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,1,m,5,1\n",
    )
    assert load_trace(path, format="tiresias").jobs == (TraceJob("0", 0.0, 5.0, 1, model="m"),)


# The AcmeTrace job tables (trace_seren.csv, trace_kalos.csv) are not in the
# shared traces folder. The first two rows of each table below are the example
# rows of the AcmeTrace README (InternLM/AcmeTrace @ 6d6ac9cd, CC-BY-4.0); the
# rows whose job_id starts with "hand-" are HAND-WRITTEN for this test, to cover
# CPU-only, never-started, TIMEOUT and NODE_FAIL jobs. Not a data sample.
ACME_SEREN = (
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
    "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
    "2023-03-01 00:20:51+08:00,117,32,936.0\n"
    "5778469,u5907,1,8,128,Other,COMPLETED,2023-03-01 00:23:58+08:00,2023-03-01 00:24:11+08:00,"
    "2023-03-01 01:09:04+08:00,2693,13,21544.0\n"
    "hand-cpu,u0001,1,0,4,Other,COMPLETED,2023-03-01 00:10:00+08:00,2023-03-01 00:10:01+08:00,"
    "2023-03-01 00:11:01+08:00,60,1,0.0\n"
    "hand-gang,u0002,128,1024,4096,Pretrain,NODE_FAIL,2023-03-01 01:00:00+08:00,2023-03-01 02:00:00+08:00,"
    "2023-03-01 12:00:00+08:00,36000,3600,36864000.0\n"
    "hand-never,u0003,1,1,16,Evaluation,CANCELLED,2023-03-01 00:30:00+08:00,,,,,\n"
    "hand-limit,u0003,1,8,16,Evaluation,TIMEOUT,2023-03-01 00:40:00+08:00,2023-03-01 00:40:00+08:00,"
    "2023-03-01 04:40:00+08:00,14400,0,115200.0\n"
)
ACME_KALOS = (
    "job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,"
    "start_time,end_time,fail_time,stop_time,duration,queue,gpu_time\n"
    "dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,Other,FAILED,2023-05-17 11:00:58+00:00,"
    "2023-05-17 11:01:08+00:00,2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,1152.0\n"
    "dlc1t2ypl09b8qtp,uf794,8,64,960,1000,100.0,Other,CANCELLED,2023-05-17 11:28:42+00:00,"
    "2023-05-17 11:28:54+00:00,2023-05-17 11:30:04+00:00,,2023-05-17 11:30:04+00:00,82,12.0,5248.0\n"
)


def test_acme_seren_job_table(tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path / "trace_seren.csv", ACME_SEREN))
    assert trace.format == "acme"
    # Times count from the earliest submit, the CPU job's 00:10:00 (+08:00).
    assert trace.jobs == (
        TraceJob("5778432", 502.0, 117.0, 8, user="u5907", num_nodes=1, status="FAILED", name="Other"),
        TraceJob("5778469", 838.0, 2693.0, 8, user="u5907", num_nodes=1, status="COMPLETED", name="Other"),
        TraceJob(
            "hand-limit", 1800.0, 14400.0, 8, user="u0003", num_nodes=1, status="KILLED", name="Evaluation"
        ),
        TraceJob(
            "hand-gang", 3000.0, 36000.0, 1024, user="u0002", num_nodes=128, status="FAILED", name="Pretrain"
        ),
    )
    assert trace.dropped == {"no GPUs": 1, "never ran (empty duration)": 1}


def test_acme_kalos_run_time_is_end_minus_start(tmp_path: Path) -> None:
    """Kalos' duration column includes the queue in the README's rows; the run time comes from the stamps."""
    trace = load_trace(write(tmp_path / "trace_kalos.csv", ACME_KALOS))
    assert trace.format == "acme"
    assert [(j.job_id, j.submit_time, j.duration, j.num_nodes, j.status) for j in trace.jobs] == [
        ("dlctk696s0jbvitv", 0.0, 8.0, 8, "FAILED"),
        ("dlc1t2ypl09b8qtp", 1664.0, 70.0, 8, "CANCELLED"),
    ]


def test_acme_end_before_start_names_the_row(tmp_path: Path) -> None:
    from slurmrl.errors import TraceError

    bad = ACME_SEREN.splitlines()[0] + "\nx,u,1,8,8,Other,FAILED,2023-03-01 00:00:00+08:00,"
    bad += "2023-03-01 00:10:00+08:00,2023-03-01 00:05:00+08:00,1,1,1\n"
    with pytest.raises(TraceError, match="line 2, column 'end_time': end_time is 300 s before start_time"):
        load_trace(write(tmp_path / "trace_seren.csv", bad))
