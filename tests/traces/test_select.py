from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.cluster.model import Cluster, Node, Rack
from slurmrl.errors import TraceError
from slurmrl.traces import Trace, TraceJob, check_fits, load_trace, select
from slurmrl.traces.select import Filters


def make(*jobs: TraceJob) -> Trace:
    return Trace(
        jobs=tuple(jobs),
        source="t.csv",
        format="normalized",
        lines={j.job_id: i + 2 for i, j in enumerate(jobs)},
    )


TRACE = make(
    TraceJob("a", 0.0, 10.0, 1, vc="x"),
    TraceJob("b", 100.0, 10.0, 4, vc="y"),
    TraceJob("c", 200.0, 10.0, 8, vc="x"),
    TraceJob("d", 300.0, 10.0, 2, vc="x"),
)


def test_window_is_rebased_and_half_open() -> None:
    out = select(TRACE, start=100, end=300)
    assert [(j.job_id, j.submit_time) for j in out.jobs] == [("b", 0.0), ("c", 100.0)]
    assert out.lines == {"b": 3, "c": 4}
    assert out.source == TRACE.source


def test_filters_and_limit() -> None:
    assert [j.job_id for j in select(TRACE, vcs=["x"]).jobs] == ["a", "c", "d"]
    assert [j.job_id for j in select(TRACE, min_gpus=2, max_gpus=4).jobs] == ["b", "d"]
    assert [j.job_id for j in select(TRACE, vcs={"x"}, limit=2).jobs] == ["a", "c"]
    assert select(TRACE, limit=0).jobs == ()


def test_load_scaling_relative_to_window() -> None:
    out = select(TRACE, start=100, load=2.0)
    assert [j.submit_time for j in out.jobs] == [0.0, 50.0, 100.0]
    assert [j.duration for j in out.jobs] == [10.0, 10.0, 10.0]


@pytest.mark.parametrize(
    "kwargs",
    [{"load": 0}, {"load": -1}, {"start": 5, "end": 5}, {"limit": -1}, {"min_gpus": 4, "max_gpus": 2}],
)
def test_bad_selection_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(TraceError):
        select(TRACE, **kwargs)  # type: ignore[arg-type]


@given(
    st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=40),
    st.floats(min_value=0.1, max_value=20.0),
)
def test_load_scaling_preserves_count_order_and_divides_gaps(times: list[int], load: float) -> None:
    times = sorted(times)
    trace = make(*(TraceJob(f"j{i:03d}", float(t), 1.0, 1) for i, t in enumerate(times)))
    out = select(trace, load=load)
    assert [j.job_id for j in out.jobs] == [j.job_id for j in trace.jobs]
    for before, after, orig_a, orig_b in zip(
        out.jobs, out.jobs[1:], trace.jobs, trace.jobs[1:], strict=False
    ):
        gap = orig_b.submit_time - orig_a.submit_time
        assert after.submit_time - before.submit_time == pytest.approx(gap / load, rel=1e-9, abs=1e-6)


def cluster(*specs: tuple[int, str]) -> Cluster:
    nodes = tuple(Node(f"n{i}", i, 0, g, t, tuple(range(g))) for i, (g, t) in enumerate(specs))
    return Cluster("c", (Rack("r0", 0, tuple(range(len(nodes)))),), nodes)


def test_check_fits_accepts_and_rejects() -> None:
    small = cluster((4, "V100"), (4, "V100"))
    ok = make(
        TraceJob("a", 0, 1, 8), TraceJob("b", 1, 1, 4, num_nodes=1), TraceJob("c", 2, 1, 2, gpu_type="V100")
    )
    assert check_fits(ok, small) is ok
    too_big = make(TraceJob("a", 0, 1, 1), TraceJob("big", 1, 1, 9))
    with pytest.raises(TraceError) as info:
        check_fits(too_big, small)
    assert info.value.line == 3 and info.value.column == "num_gpus" and "'big'" in info.value.message
    one_node = make(TraceJob("wide", 0, 1, 6, num_nodes=1))
    with pytest.raises(TraceError, match="one node"):
        check_fits(one_node, small)
    typed = make(TraceJob("t", 0, 1, 1, gpu_type="A100"))
    with pytest.raises(TraceError) as info:
        check_fits(typed, small)
    assert info.value.column == "gpu_type"


def test_a_job_of_no_nodes_is_refused_by_line() -> None:
    """It could never start, and under fifo every job behind it waited with it: all unfinished."""
    trace = make(TraceJob("a", 0, 1, 1), TraceJob("none", 1, 1, 1, num_nodes=0))
    with pytest.raises(TraceError) as info:
        check_fits(trace, cluster((4, "V100")))
    assert (info.value.line, info.value.column) == (3, "num_nodes") and "at least one" in info.value.message
    assert "larger cluster" not in info.value.format()


def test_check_fits_skip_bad_counts() -> None:
    small = cluster((8, "T4"))
    trace = make(TraceJob("a", 0, 1, 4), TraceJob("b", 1, 1, 16), TraceJob("c", 2, 1, 2, gpu_type="V100"))
    out = check_fits(trace, small, skip_bad=True)
    assert [j.job_id for j in out.jobs] == ["a"]
    assert out.skipped == 2 and len(out.skip_reasons) == 2
    assert out.lines == {"a": 2}


def test_select_on_loaded_file_keeps_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,duration_s,num_gpus\na,5,1,1\nb,50,1,64\n")
    trace = select(load_trace(path), start=10)
    with pytest.raises(TraceError) as info:
        check_fits(trace, cluster((8, "V100")))
    assert info.value.file == str(path) and info.value.line == 3


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"vcs": ["yy"]}, "no job of VC yy (the trace's VCs: x, y); did you mean y?"),
        ({"start": 1e9}, "the trace's submits run from 0 to 300 s"),
        ({"end": 0}, "the trace's submits run from 0 to 300 s"),
        ({"max_gpus": 0}, "the trace's jobs ask 1 to 8 GPUs"),
        ({"min_gpus": 9}, "the trace's jobs ask 1 to 8 GPUs"),
        ({"limit": 0}, "a limit of 0 keeps no job"),
        ({"vcs": ["y"], "min_gpus": 8}, "no job passes the window, VC and GPU filters together"),
    ],
)
def test_an_empty_selection_says_which_filter_emptied_it(kwargs: dict, words: str) -> None:
    assert not select(TRACE, **kwargs).jobs
    assert words in Filters(**kwargs).why_empty(TRACE)
