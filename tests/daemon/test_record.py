"""The record on disk: the same JSON whichever entries were encoded before."""

from __future__ import annotations

import json
from pathlib import Path

from slurmrl.daemon.record import Record


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
