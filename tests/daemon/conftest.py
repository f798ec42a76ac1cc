"""Makes the fake controller importable as ``fake_slurm`` for the daemon tests.

The suite imports test files by path (``--import-mode=importlib``), so a
helper module beside them is not on ``sys.path``; it is loaded once here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if "fake_slurm" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("fake_slurm", Path(__file__).with_name("fake_slurm.py"))
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["fake_slurm"] = _module
    _spec.loader.exec_module(_module)  # type: ignore[union-attr]
