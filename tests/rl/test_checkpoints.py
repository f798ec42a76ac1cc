"""Checkpoint folders load by the format their config.json names, and the package carries every shipped one."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from slurmrl.errors import PolicyError
from slurmrl.policy.registry import make_policy, policy_entry, policy_names
from slurmrl.rl.checkpoints import policy_from_dir, shipped_policy_dir

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {
    "topdrl": "topdrl-philly",
    "harmony": "harmony-philly",
    "meta-rl": "meta-rl-philly",
    "maifs": "maifs-philly",
}


def test_every_learned_policy_has_a_shipped_checkpoint() -> None:
    learned = {name for name in policy_names() if policy_entry(name).learned}
    assert learned == set(SHIPPED)


@pytest.mark.parametrize(("policy", "folder"), sorted(SHIPPED.items()))
def test_a_shipped_folder_loads_as_its_own_kind(policy: str, folder: str) -> None:
    loaded = policy_from_dir(ROOT / "policies" / folder, None)
    assert type(loaded) is type(make_policy(policy))


@pytest.mark.parametrize("folder", sorted(SHIPPED.values()))
def test_the_package_copy_matches_the_policies_folder(folder: str) -> None:
    """A pip install without ``policies/`` runs the same weights as a checkout."""
    packaged = ROOT / "slurmrl" / "rl" / "shipped" / folder
    for name in ("config.json", "model.safetensors"):
        assert filecmp.cmp(packaged / name, ROOT / "policies" / folder / name, shallow=False), (
            f"{folder}/{name}"
        )
    assert shipped_policy_dir(folder) == ROOT / "policies" / folder


def test_an_unknown_format_or_a_missing_config_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="has no config.json"):
        policy_from_dir(tmp_path, None)
    (tmp_path / "config.json").write_text('{"format": "slurmrl-nope"}')
    with pytest.raises(PolicyError, match="unknown checkpoint format 'slurmrl-nope'"):
        policy_from_dir(tmp_path, None)
    (tmp_path / "config.json").write_text("{nope")
    with pytest.raises(PolicyError, match="not valid JSON"):
        policy_from_dir(tmp_path, None)
