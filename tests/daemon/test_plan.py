"""Ordering bands: a long queue shares few SiteFactor values, in the policy's order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurmrl.daemon.plan import site_factor_for


@given(st.integers(1, 20_000), st.integers(0, 300), st.integers(1, 10_000))
def test_bands_keep_the_order_and_share_values(count: int, bands: int, top: int) -> None:
    values = [site_factor_for(r, count, top, bands) for r in range(count)]
    used = min(bands, top + 1)  # bands beyond top + 1 could not have distinct values
    assert values[0] == top and (count == 1 or used == 1 or values[-1] == 0)
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))  # never out of the policy's order
    if 0 < used < count:
        assert len(set(values)) == used
        # the same band for consecutive ranks: each value is one contiguous run
        runs = sum(1 for a, b in zip(values, values[1:], strict=False) if a != b) + 1
        assert runs == len(set(values))
    else:
        assert values == [site_factor_for(r, count, top) for r in range(count)]


def test_a_short_queue_keeps_one_value_per_rank() -> None:
    assert [site_factor_for(r, 5, 1000, 100) for r in range(5)] == [1000, 750, 500, 250, 0]
    assert site_factor_for(0, 10_000, 1000, 100) == 1000
    assert site_factor_for(99, 10_000, 1000, 100) == 1000  # ranks 0-99 share the top band
    assert site_factor_for(100, 10_000, 1000, 100) == 990


def test_a_shift_by_less_than_a_band_sends_nothing() -> None:
    from slurmrl.daemon.plan import band_step

    step = band_step(10_000, 1000, 100)
    assert step == 11 and band_step(50, 1000, 100) == 0  # a short queue: one value per rank
    # every rank moved down 50 places: each job moves at most one band
    moved = [
        abs(site_factor_for(r, 10_000, 1000, 100) - site_factor_for(r + 50, 10_000, 1000, 100))
        for r in range(9950)
    ]
    assert max(moved) <= step


# -- the planning stages, each on its own -------------------------------------------------

NOW = 1_700_000_000.0


def _jobs(n: int):
    import fake_slurm  # loaded by conftest.py

    return {str(i): fake_slurm.pending(str(i), 8, NOW - 1000 + i) for i in range(1, n + 1)}


def _config(**kw):
    from slurmrl.daemon.config import DaemonConfig

    return DaemonConfig(policy="fifo", placement="first-fit", state_file="/nonexistent/s.json", **kw)


def test_rank_order_puts_the_policys_order_first_then_the_rest_in_queue_order() -> None:
    from dataclasses import replace

    from slurmrl.daemon.plan import rank_order
    from slurmrl.policy.view import Decisions

    jobs = _jobs(4)
    jobs["2"] = replace(jobs["2"], reason="Dependency")  # not eligible: never ranked
    ranked = rank_order(Decisions(order=["3", "2", "3", "9"]), jobs)
    assert ranked == ["3", "1", "4"]


def test_an_ordering_change_respects_tolerance_rank_zero_and_starvation() -> None:
    from dataclasses import replace

    from slurmrl.daemon.plan import _order_change

    job = _jobs(1)["1"]
    cfg = _config(starvation_wait=3600.0)
    assert _order_change(replace(job, site_factor=495), None, 3, 10, 500, 10, cfg, NOW) is None
    ch = _order_change(replace(job, site_factor=995), None, 0, 10, 1000, 10, cfg, NOW)
    assert ch is not None and (ch.old, ch.new) == (995, 1000)  # the top rank is always exact
    old = replace(job, site_factor=800, submit_time=NOW - 7200)  # starving: not demoted
    assert _order_change(old, None, 5, 10, 100, 10, cfg, NOW) is None
    prio = _order_change(replace(job, priority=None), None, 5, 10, 100, 10, _config(mode="priority"), NOW)
    assert prio is not None and (prio.field, prio.new) == ("priority", 100_100)


def test_groups_and_flatten_keep_urgency_and_the_budget() -> None:
    from slurmrl.daemon.plan import Change, Groups, flatten
    from slurmrl.daemon.record import Record

    jobs = _jobs(3)
    groups = Groups()
    groups.add((2, 1), Change("1", "site_factor", 0, 500, "rank 2/3"))
    groups.add((2, 0), Change("2", "site_factor", 0, 1000, "rank 1/3"))
    groups.add((0, 0), Change("3", "site_factor", 300, 0, "left scope", restore=True))
    notes: list[str] = []
    flat, deferred = flatten(groups, jobs, Record(), _config(max_changes_per_cycle=3), False, notes)
    assert [c.job_id for c in flat] == ["3", "2", "1"] and deferred == 0
    flat, deferred = flatten(groups, jobs, Record(), _config(max_changes_per_cycle=3), True, notes)
    assert [(c.job_id, c.field) for c in flat] == [
        ("3", "site_factor"),
        ("2", "site_factor"),
        ("2", "admin_comment"),
    ]
    assert deferred == 1  # job 1 did not fit: its note was never composed


def test_left_scope_forgets_ended_jobs_and_gives_back_the_opted_out() -> None:
    from slurmrl.daemon.plan import Groups, left_scope
    from slurmrl.daemon.record import Record

    jobs = _jobs(2)
    record = Record()
    record.update("1", NOW, site_factor=400, orig_site_factor=0)
    record.update("2", NOW, site_factor=300, orig_site_factor=7)
    record.update("9", NOW, site_factor=100, orig_site_factor=0)  # gone from the queue
    groups = Groups()
    assert left_scope(record, jobs, {"1": jobs["1"]}, groups) == ["9"]
    [(jid, changes)] = groups.in_order()
    assert jid == "2" and [(c.field, c.new, c.restore) for c in changes] == [("site_factor", 7, True)]


def test_stale_notes_touch_only_jobs_without_a_change() -> None:
    from slurmrl.daemon.plan import Change, Groups, stale_notes
    from slurmrl.daemon.record import Record

    jobs = _jobs(3)
    record = Record()
    for jid in ("1", "2", "3"):
        record.update(jid, NOW, site_factor=100, note_stale=jid != "3")
    record.update("3", NOW, admin_comment=jobs["3"].admin_comment or "")
    groups = Groups()
    groups.add((2, 0), Change("1", "site_factor", 100, 200, "rank"))
    stale_notes(record, jobs, ["1", "2", "3"], groups)
    assert [jid for jid, _ in groups.in_order()] == ["1", "2"]  # 3's note is as Slurm shows it
