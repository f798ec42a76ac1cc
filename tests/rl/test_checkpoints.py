"""Checkpoint folders load by the format their config.json names, and the package carries every shipped one."""

from __future__ import annotations

import filecmp
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _edited(tmp_path: Path, folder: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of a shipped folder with its config.json edited."""
    out = tmp_path / folder
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(ROOT / "policies" / folder / name, out / name)
    config = json.loads((out / "config.json").read_text())
    edit(config)
    (out / "config.json").write_text(json.dumps(config))
    return out


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("window", -3, "'obs.window' must be a whole number from 1 to 4096, not -3"),
        ("window", 10**9, "'obs.window' must be a whole number from 1 to 4096, not 1000000000"),
        ("window", "8", "'obs.window' must be a whole number from 1 to 4096, not '8'"),
        ("window", None, "'obs.window' is missing"),
        ("shade", 1, "'obs' has unknown field shade"),
    ],
)
@pytest.mark.parametrize("folder", sorted(set(SHIPPED.values())))
def test_a_bad_config_field_is_named_once_with_its_file(
    tmp_path: Path, folder: str, key: str, value: object, message: str
) -> None:
    """A window of -3 crashed inside islice, one of 10**9 asked for a billion-row array."""

    def edit(config: dict[str, Any]) -> None:
        if value is None:
            del config["obs"][key]
        else:
            config["obs"][key] = value

    path = _edited(tmp_path, folder, edit)
    with pytest.raises(PolicyError) as info:
        policy_from_dir(path, None)
    text = info.value.format()
    assert text == f"{path / 'config.json'}: {message}"


@settings(max_examples=40, deadline=None)
@given(
    folder=st.sampled_from(sorted(set(SHIPPED.values()))),
    section=st.sampled_from(["net", "obs"]),
    value=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
        st.lists(st.integers(-2, 2), max_size=3),
    ),
    data=st.data(),
)
def test_any_value_in_any_field_loads_or_is_a_policy_error(
    tmp_path_factory: pytest.TempPathFactory, folder: str, section: str, value: object, data: st.DataObject
) -> None:
    config = json.loads((ROOT / "policies" / folder / "config.json").read_text())
    key = data.draw(st.sampled_from(sorted(config[section])))

    def edit(config: dict[str, Any]) -> None:
        config[section][key] = value

    path = _edited(tmp_path_factory.mktemp("ck"), folder, edit)
    try:
        policy_from_dir(path, None)
    except PolicyError as exc:
        assert "\n" not in exc.format()
