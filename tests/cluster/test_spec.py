from __future__ import annotations

from pathlib import Path

import pytest

from slurmrl.cluster.spec import ACCEPTED_FORMS, load_cluster
from slurmrl.errors import SpecError

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("spec", ["", "   ", "mycluster", "no/such/file.toml"])
def test_unknown_spec_lists_accepted_forms(spec: str) -> None:
    with pytest.raises(SpecError) as info:
        load_cluster(spec)
    message = info.value.format()
    assert all(form in message for form in ACCEPTED_FORMS)


def test_folder_without_slurm_conf(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="holds no slurm.conf"):
        load_cluster(str(tmp_path))


def test_files_without_telling_suffix_are_sniffed(tmp_path: Path) -> None:
    toml = tmp_path / "spec"
    toml.write_text((FIXTURES / "site.toml").read_text())
    conf = tmp_path / "site-config"
    conf.write_text("ClusterName=s\nNodeName=a Gres=gpu:t4:1\n")
    assert load_cluster(str(toml)) == load_cluster(str(FIXTURES / "site.toml"))
    assert load_cluster(str(conf)).describe() == "s: 1 racks, 1 nodes, 1 GPUs (t4)"
    odd = tmp_path / "notes.txt"
    odd.write_text("just words\n")
    with pytest.raises(SpecError, match="cannot tell"):
        load_cluster(str(odd))
