"""One entry point for ``--cluster SPEC``, whatever form the spec takes.

Users arrive with very different descriptions of their hardware (a size to
sweep, a hand-written TOML file, the machine list that came with a trace, or
their site's Slurm configuration), and every command should accept all of
them the same way. The form is recognized from the text and the file, never
from a separate flag.
"""

from __future__ import annotations

from pathlib import Path

from slurmrl.cluster.model import Cluster
from slurmrl.cluster.shorthand import looks_like_shorthand, parse_shorthand
from slurmrl.errors import SpecError

ACCEPTED_FORMS = (
    "RACKSxNODESxGPUS[:type[:intra]] shorthand, e.g. 8x8x8:v100 or 2x16x4:a100",
    "a TOML cluster spec (*.toml)",
    "a machine list CSV (.csv or .csv.gz): Tiresias cluster spec, Philly machine list, "
    "Alibaba openb node list, PAI machine spec or spot GPU node list",
    "a slurm.conf path or a folder holding one (gres.conf and topology.conf read beside it)",
    "slurm or slurm:PATH ($SLURM_CONF, else /etc/slurm/slurm.conf, when PATH is empty)",
)


def _forms() -> str:
    return "accepted forms:\n" + "\n".join(f"  - {f}" for f in ACCEPTED_FORMS)


def load_cluster(spec: str) -> Cluster:
    """Build the cluster named by ``spec``; raises :class:`SpecError` on anything unusable."""
    text = spec.strip()
    if not text:
        raise SpecError("empty cluster spec; " + _forms())
    if text == "slurm" or text.startswith("slurm:"):
        return load_slurm_cluster(text[len("slurm:") :] if text.startswith("slurm:") else None)
    path = Path(text).expanduser()
    if path.is_dir():
        if (path / "slurm.conf").is_file():
            return load_slurm_cluster(path)
        raise SpecError(f"folder {path} holds no slurm.conf; " + _forms())
    if path.is_file():
        return _load_file(path)
    if looks_like_shorthand(text):
        return parse_shorthand(text)
    raise SpecError(f"cluster spec '{spec}' is neither an existing file nor a shorthand; " + _forms())


# The parsers of each spec form load only when a spec of that form is read:
# a shorthand (most runs) needs none of them.


def load_slurm_cluster(path: str | Path | None) -> Cluster:
    from slurmrl.cluster.from_slurm import load_slurm_cluster as load

    return load(path)


def load_toml_spec(path: Path) -> Cluster:
    from slurmrl.cluster.toml_spec import load_toml_spec as load

    return load(path)


def cluster_to_toml(cluster: Cluster) -> str:
    """``cluster`` as a TOML spec (see :mod:`slurmrl.cluster.toml_spec`)."""
    from slurmrl.cluster.toml_spec import cluster_to_toml as write

    return write(cluster)


def load_machine_list(path: Path) -> Cluster:
    from slurmrl.cluster.trace_specs import load_machine_list as load

    return load(path)


def _load_file(path: Path) -> Cluster:
    name = path.name.lower()
    if name.endswith(".toml"):
        return load_toml_spec(path)
    if name.endswith((".csv", ".csv.gz", ".gz")):
        return load_machine_list(path)
    if name.endswith(".conf"):
        return load_slurm_cluster(path)
    # No telling suffix: sniff the start of the file.
    try:
        head = path.read_bytes()[:4096]
    except OSError as exc:
        raise SpecError(f"cannot read cluster spec: {exc.strerror}", file=str(path)) from None
    if head[:2] == b"\x1f\x8b":
        return load_machine_list(path)
    first = head.decode("utf-8", "replace").lower()
    if "nodename=" in first or "clustername=" in first:
        return load_slurm_cluster(path)
    if "[[racks]]" in first or "[defaults]" in first:
        return load_toml_spec(path)
    first_line = first.splitlines()[0] if first.strip() else ""
    if "," in first_line:
        return load_machine_list(path)
    raise SpecError("cannot tell what kind of cluster spec this file is; " + _forms(), file=str(path))


__all__ = ["ACCEPTED_FORMS", "cluster_to_toml", "load_cluster"]
