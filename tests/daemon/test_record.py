"""The record on disk: the same JSON whichever entries were encoded before."""

from __future__ import annotations

import json
from pathlib import Path

from slurmrl.daemon.record import Preempted, Record


def test_saved_text_is_the_record_and_follows_every_change(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    r = Record()
    r.save(path)
    assert json.loads(path.read_text()) == r.to_json()
    r.update("7", 1.0, site_factor=300, orig_site_factor=5, nodes=("node01",))
    r.update("8", 1.0, admin_comment='admin "text" | slurmrl: sf=1', unsure=("admin_comment",))
    r.save(path)
    r.update("7", 2.0, site_factor=400)  # a new entry object: encoded again
    r.drop("8")
    r.cycle = 3
    r.save(path)
    assert json.loads(path.read_text()) == r.to_json()
    assert Record.load(path).to_json() == r.to_json()
    assert len(path.read_text().splitlines()) == 3  # one line per job between the head and the end


def test_saved_text_follows_the_requeued_jobs_entries(tmp_path: Path) -> None:
    """Requeued jobs' entries, kept for days after they end, are encoded once each too."""
    path = tmp_path / "state.json"
    r = Record(preempted={"5": Preempted("5", 1.0, 80.0, 1), "6": Preempted("6", 2.0, 40.0, 1)})
    r.save(path)
    assert json.loads(path.read_text()) == r.to_json()
    r.preempted["5"] = Preempted("5", 1.0, 80.0, 1, ended=9.0)  # a new entry object: encoded again
    del r.preempted["6"]
    r.save(path)
    assert json.loads(path.read_text()) == r.to_json()
    assert Record.load(path).preempted == r.preempted
    r.preempted.clear()
    r.save(path)
    assert "preempted" not in json.loads(path.read_text())
