"""The numpy SipHash gives pandas' string hashes, so seeded draws are what they were."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from slurmrl.sim.siphash import hash_strings, siphash24

# The reference vector of the SipHash paper (appendix A): key 00..0f, message 00..0e.
PAPER_KEY = bytes(range(16))
PAPER_MESSAGE = bytes(range(15))
PAPER_HASH = 0xA129CA6149BE45E5


def test_the_paper_s_test_vector() -> None:
    assert int(siphash24([PAPER_MESSAGE], PAPER_KEY)[0]) == PAPER_HASH


@given(st.lists(st.text(max_size=40), max_size=60))
def test_strings_hash_as_pandas_hashes_them(values: list[str]) -> None:
    expected = pd.util.hash_array(np.asarray(values, dtype=object))
    assert hash_strings(values).tolist() == expected.tolist()


def test_other_values_hash_as_their_text() -> None:
    values = [17, "17", 3.5]
    assert hash_strings(values).tolist() == pd.util.hash_array(np.asarray(values, dtype=object)).tolist()


def test_a_replay_imports_no_pandas() -> None:
    """Seeding time limits was the one reason a simulate command paid for importing pandas."""
    code = (
        "import sys\n"
        "from slurmrl.cli import main\n"
        "main(['simulate', '--limit', '50', '--json', '--no-progress'], prog_name='slurmrl',"
        " standalone_mode=False)\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
