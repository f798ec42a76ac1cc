"""contrib/testcluster's releases: folders, ports, configs and client wrappers of 22.05 and 24.11.

No daemon is started here; the live tests run against both releases (contrib/run-tests).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tc():
    script = REPO / "contrib" / "testcluster" / "testcluster"
    loader = importlib.machinery.SourceFileLoader("testcluster_releases", str(script))
    spec = importlib.util.spec_from_loader("testcluster_releases", loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["testcluster_releases"] = module  # dataclasses look their module up
    try:
        loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("testcluster_releases", None)


def fake_chroot(root: Path) -> Path:
    """The parts of a debootstrapped trixie the script looks at: plugins, loader, a client."""
    libs = root / "chroot" / "usr" / "lib" / "x86_64-linux-gnu"
    (libs / "slurm-wlm").mkdir(parents=True)
    (libs / "ld-linux-x86-64.so.2").write_text("")
    (root / "chroot" / "usr" / "bin").mkdir(parents=True)
    (root / "chroot" / "usr" / "bin" / "squeue").write_text("")
    return libs


def args(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(**{"dir": None, "version": None, **kw})


def test_version_picks_its_folder_and_a_folder_keeps_its_version(tc, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SLURMRL_TESTCLUSTER_DIR", raising=False)
    p = tc.paths_for(args(version="24.11"))
    assert p.root == Path("/tmp/slurmrl-testcluster-24.11") and p.release.suite == "trixie"
    assert tc.paths_for(args()).release.version == "22.05"
    (tmp_path / "version").write_text("24.11\n")
    assert tc.paths_for(args(dir=str(tmp_path))).release.version == "24.11"  # stop/status find it
    with pytest.raises(tc.TestClusterError, match="holds a Slurm 24.11 cluster, not 22.05"):
        tc.paths_for(args(dir=str(tmp_path), version="22.05"))
    (tmp_path / "version").write_text("9.99\n")
    with pytest.raises(tc.TestClusterError, match="names Slurm '9.99'"):
        tc.paths_for(args(dir=str(tmp_path)))


def test_each_release_has_its_own_ports_unless_the_spec_names_one(tc, tmp_path) -> None:
    default = REPO / "contrib" / "testcluster" / "cluster.toml"
    assert tc.load_spec(default).port == 16817
    assert tc.load_spec(default, tc.RELEASES["24.11"].port).port == 16917
    pinned = tmp_path / "pinned.toml"
    pinned.write_text(default.read_text() + "port = 17000\n")  # [slurm] is the last table
    assert tc.load_spec(pinned, tc.RELEASES["24.11"].port).port == 17000


def test_configs_of_a_chroot_release(tc, tmp_path) -> None:
    spec = tc.load_spec(REPO / "contrib" / "testcluster" / "cluster.toml", 16917)
    libs = fake_chroot(tmp_path)
    files = tc.render(spec, tc.Paths(tmp_path, tc.RELEASES["24.11"]))
    assert f"PluginDir={libs / 'slurm-wlm'}" in files["slurm.conf"].splitlines()
    assert "SlurmctldPort=16917" in files["slurm.conf"]
    assert "CgroupPlugin=disabled" in files["cgroup.conf"]
    host = tc.render(spec, tc.Paths(tmp_path, tc.RELEASES["22.05"]))
    assert "PluginDir" not in host["slurm.conf"] and "CgroupPlugin=autodetect" in host["cgroup.conf"]


def test_wrappers_run_the_chroot_client_and_come_first_on_path(tc, tmp_path, monkeypatch) -> None:
    libs = fake_chroot(tmp_path)
    p = tc.Paths(tmp_path, tc.RELEASES["24.11"])
    tc.write_wrappers(p)
    assert sorted(x.name for x in p.bin.iterdir()) == ["squeue"]  # only clients the chroot has
    text = (p.bin / "squeue").read_text()
    assert f"exec '{libs / 'ld-linux-x86-64.so.2'}' --argv0 squeue" in text
    assert f"--library-path '{libs / 'slurm-wlm'}:{libs}'" in text and text.endswith('"$@"\n')
    assert (p.bin / "squeue").stat().st_mode & 0o111
    p.version_file.write_text("24.11\n")
    (tmp_path / "etc").mkdir()
    monkeypatch.setenv("PATH", f"/usr/bin:{p.bin}:/bin")
    assert tc.search_path(p) == f"{p.bin}:/usr/bin:/bin"
    assert tc.search_path(tc.Paths(tmp_path / "other")) == "/usr/bin:/bin"  # 22.05: no wrappers


def test_env_prints_path_for_the_release(tc, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")
    assert tc.main(["env", "--version", "24.11", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"export SLURM_CONF={tmp_path}/etc/slurm.conf",
        f"export SLURMRL_TESTCLUSTER_DIR={tmp_path}",
        f"export PATH={tmp_path}/bin:/usr/bin",
    ]


def test_mount_points_of_this_process(tc) -> None:
    assert "/" in tc.mount_points() and "/proc" in tc.mount_points()


def test_a_chroot_release_runs_its_daemons_with_its_usr_in_a_namespace(tc, tmp_path) -> None:
    host = tc.Paths(tmp_path / "a", tc.RELEASES["22.05"])
    suite = tc.Paths(tmp_path / "b", tc.RELEASES["24.11"])
    assert tc.in_release(host, ["slurmd", "-N", "node01"]) == ["slurmd", "-N", "node01"]
    cmd = tc.in_release(suite, ["slurmd", "-N", "node01"])
    assert cmd[:5] == ["unshare", "--mount", "--propagation", "private", "--"]
    assert cmd[5:7] == ["sh", "-c"] and cmd[-4:] == [str(suite.chroot), "slurmd", "-N", "node01"]
    script = cmd[7]
    # The host's /usr/local is kept, then the suite's /usr covers the host's; nothing else.
    assert script.index('"$suite/usr/local"') < script.index('mount --rbind "$suite/usr" /usr')
    assert script.count("mount ") == 3 and 'exec "$@"' in script


def test_a_host_without_merged_usr_is_refused(tc, monkeypatch) -> None:
    monkeypatch.setattr(tc, "MERGED_USR", ("tmp", "no-such-folder-here"))  # /tmp is a real folder
    with pytest.raises(tc.TestClusterError, match=r"^/tmp is not a link into /usr"):
        tc.check_merged_usr()


def test_packages_installed_in_a_chroot(tc, tmp_path) -> None:
    info = tmp_path / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (info / "munge.list").write_text("")
    (info / "libffi8:amd64.list").write_text("")
    assert tc.installed_in(tmp_path, "munge") and tc.installed_in(tmp_path, "libffi8")
    assert not tc.installed_in(tmp_path, "slurmd")


def test_unmount_under_takes_the_newest_mount_first_and_only_its_own(tc, tmp_path, monkeypatch) -> None:
    chroot = tmp_path / "chroot"
    points = ["/", f"{chroot}/proc", f"{chroot}-other", f"{chroot}/tmp/x", "/proc"]
    calls: list[list[str]] = []

    def fake_run(args: list[str], *rest: object, **kw: object) -> argparse.Namespace:
        calls.append(args)
        points.remove(args[-1])
        return argparse.Namespace(returncode=0)

    monkeypatch.setattr(tc, "mount_points", lambda: list(points))
    monkeypatch.setattr(tc, "run_cmd", fake_run)
    assert tc.unmount_under(chroot) == []
    assert calls == [["umount", f"{chroot}/tmp/x"], ["umount", f"{chroot}/proc"]]
    assert points == ["/", f"{chroot}-other", "/proc"]
