"""Instructions one replay's event loop executes, counted by valgrind's callgrind.

On a shared virtual machine the wall and CPU time of one command move by
30-50% from run to run; callgrind counts instructions, which repeat for the
same code and inputs whatever else the machine does. This runs, under
callgrind, a child that loads the 46,070 shared Philly jobs as ``simulate``
does (8x8x8, ``--speed-model none``), builds the simulator and, in a second
child, also replays them under the policy; the difference is the event
loop's count. A third child, without valgrind, counts the passes the
policy was asked against the replay's decisions (the simulator skips the
passes a policy promised would start nothing: ``Decisions.promise``).
Needs valgrind (Debian package ``valgrind``); about 50 times slower than
the replay itself.

    python benchmarks/replay_instructions.py [--policy fifo] [--placement first-fit] [--limit N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys
from slurmrl.sim.experiment import prepare
from slurmrl.sim.simulator import SimConfig, Simulator
from slurmrl.policy import make_policy
from slurmrl.traces.store import locate
limit = int(sys.argv[3]) or None
workload = prepare(trace=str(locate("philly/philly_jobs_2017-10-02_to_2017-10-30.csv.gz")), cluster="8x8x8", limit=limit)
sim = Simulator(workload.trace, workload.cluster, config=SimConfig(speed_model="none"))
if sys.argv[4] == "run":
    sim.run(make_policy(sys.argv[1], sys.argv[2] or None))
elif sys.argv[4] == "count":
    policy = make_policy(sys.argv[1], sys.argv[2] or None)
    asked = []
    decide = policy.decide
    policy.decide = lambda view: asked.append(view.now) or decide(view)
    print(sim.run(policy).decisions, len(asked))
"""


def instructions(args: list[str]) -> int:
    """Instructions callgrind counts for the child run with ``args``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={Path(tmp) / 'cg'}"]
            + [sys.executable, "-c", CHILD, *args],
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count: {out.stderr.strip().splitlines()[-1:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="fifo")
    parser.add_argument("--placement", default="")
    parser.add_argument("--limit", type=int, default=0, help="the first N jobs only (0: all)")
    a = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian package valgrind)")
    common = [a.policy, a.placement, str(a.limit)]
    counted = subprocess.run(
        [sys.executable, "-c", CHILD, *common, "count"], capture_output=True, text=True, check=True
    )
    decisions, asked = counted.stdout.split()
    setup = instructions([*common, "setup"])
    whole = instructions([*common, "run"])
    print(f"policy {a.policy}, placement {a.placement or 'default'}, jobs {a.limit or 'all'}")
    print(f"imports, load, limits and admission: {setup / 1e9:.2f} G instructions")
    print(f"the replay's event loop:             {(whole - setup) / 1e9:.2f} G instructions")
    print(f"passes the policy was asked:         {int(asked):,} of {int(decisions):,} decisions")


if __name__ == "__main__":
    main()
