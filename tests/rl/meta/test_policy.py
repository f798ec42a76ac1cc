from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from slurmrl.policy.registry import make_policy, policy_entry

ROOT = Path(__file__).resolve().parents[3]


def test_meta_rl_is_registered_as_learned_and_deployable() -> None:
    entry = policy_entry("meta-rl")
    assert entry.learned and entry.deployable
    assert make_policy("meta-rl").name == "meta-rl"


def test_shipped_checkpoint_loads_and_decides_without_torch() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # importing torch now fails
        from slurmrl.sim.experiment import prepare, run_policy, SimSettings
        from slurmrl.policy.registry import make_policy
        wl = prepare(trace="embedded:philly-sample", cluster="1x4x8:v100", limit=40)
        out = run_policy(wl, make_policy("meta-rl"), settings=SimSettings(speed_model="full"))
        assert "torch" not in sys.modules or sys.modules["torch"] is None
        print(out.summary["finished"])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "40"
