"""Optional extras: a missing one is named, and the base install needs none of them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from slurmrl.errors import SlurmrlError
from slurmrl.extras import EXTRAS, MissingExtraError, require_extra


@pytest.mark.parametrize("extra, module", [(e, m) for e, mods in EXTRAS.items() for m in mods])
def test_a_missing_module_names_its_extra(monkeypatch, extra: str, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    with pytest.raises(MissingExtraError) as info:
        require_extra(extra)
    text = info.value.format()
    assert isinstance(info.value, SlurmrlError) and "\n" not in text
    assert module in text and f"pip install 'slurmrl[{extra}]'" in text


def test_installed_extras_pass() -> None:
    for extra in EXTRAS:
        require_extra(extra)


def test_the_base_install_simulates_and_runs_the_shipped_rl_policy_without_extras() -> None:
    """What `pip install slurmrl` gives a controller: heuristics, topdrl in numpy, the daemon, the API."""
    blocked = sorted({m for mods in EXTRAS.values() for m in mods})
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "import slurmrl\n"
        "import slurmrl.daemon.loop, slurmrl.cli.daemon\n"
        "run = slurmrl.simulate(cluster='1x2x8', policy='topdrl', limit=40)\n"
        "assert run.summary['jobs'] == 40 and len(run.jobs) == 40\n"
        "print(slurmrl.traces.load('embedded:philly-sample').shape[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["11386"]
