"""The trace registry: well formed, honest about checksums, and what scenarios point users to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmrl.cli import main
from slurmrl.scenarios import SCENARIOS
from slurmrl.traces import store
from slurmrl.traces.fetch import matches
from slurmrl.traces.registry import FORMS, entry_for, registry

HEX = re.compile(r"^[0-9a-f]{64}$")
NAMED_IN_THE_ISSUE = (
    "philly",
    "helios",
    "pai-2020",
    "openb-2023",
    "gavel",
    "pollux",
    "chronus",
    "tiresias",
    "acme",
)


def test_every_public_trace_is_registered_with_license_and_homepage() -> None:
    entries = registry()
    for name in NAMED_IN_THE_ISSUE:
        assert name in entries
    for entry in entries.values():
        assert entry.title and entry.license and entry.homepage.startswith("https://"), entry.name


def test_files_are_well_formed_and_unique() -> None:
    seen: set[str] = set()
    for entry in registry().values():
        for f in entry.files:
            assert f.path not in seen and not f.path.startswith("/") and ".." not in f.path
            seen.add(f.path)
            assert f.form in FORMS, f.path
            if f.form == "unpack":  # unpacked from an archive of the same trace, fetched before it
                assert f.source in seen and entry_for(f.source) is entry, f.path
            else:
                assert f.source.startswith("https://"), f.path
            assert f.sha256 == "" or HEX.match(f.sha256), f.path
            assert f.content_sha256 == "" or HEX.match(f.content_sha256), f.path
            assert f.git_sha1 == "" or re.match(r"^[0-9a-f]{40}$", f.git_sha1), f.path
            if f.form == "gzip":
                assert f.path.endswith(".gz") and f.content_sha256, f.path


def test_every_scenario_trace_is_provided_by_a_registered_trace() -> None:
    for sc in SCENARIOS.values():
        if not sc.trace.startswith("embedded:"):
            assert entry_for(sc.trace) is not None, sc.name


def test_registered_checksums_match_the_files_here() -> None:
    """Every registered file found in a traces folder on this machine has the recorded checksum."""
    checked = 0
    for entry in registry().values():
        for f in entry.files:
            for root in store.trace_roots():
                if (root / f.path).is_file() and f.verifiable:
                    assert matches(root / f.path, f), f"{root / f.path} differs from the registry"
                    checked += 1
                    break
    if checked == 0:
        pytest.skip("no registered trace file on this machine")


@pytest.fixture
def no_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with no traces folder at all: only an empty user cache."""
    monkeypatch.delenv("SLURMRL_TRACES", raising=False)
    monkeypatch.setattr(store, "sibling_dirs", lambda: [])
    monkeypatch.setattr(store, "cache_dir", lambda: tmp_path / "cache")
    return tmp_path / "cache"


def test_a_scenario_without_its_trace_names_the_fetch_command(no_traces: Path) -> None:
    result = CliRunner().invoke(main, ["simulate", "--scenario", "philly-4w", "--no-progress"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert "`slurmrl traces fetch philly` provides it" in errors[0] and "--from" in errors[0]


def test_scenarios_listing_says_which_fetch_provides_a_missing_trace(no_traces: Path) -> None:
    result = CliRunner().invoke(main, ["scenarios"])
    assert result.exception is None, result.output
    assert "unavailable: trace file benchmarks/gavel/msr_seed0/6c71a0.trace.gz is not here: " in result.output
    assert "`slurmrl traces fetch gavel` provides it" in result.output
    assert "`slurmrl traces fetch openb-2023` provides it" in result.output


def test_fetched_traces_are_found_in_the_user_cache(no_traces: Path) -> None:
    here = [r for r in store.trace_roots() if (r / "benchmarks/tiresias/60_job.csv").is_file()]
    assert here == []
    (no_traces / "benchmarks" / "tiresias").mkdir(parents=True)
    (no_traces / "benchmarks" / "tiresias" / "60_job.csv").write_text("x\n")
    assert store.locate("benchmarks/tiresias/60_job.csv") == no_traces / "benchmarks/tiresias/60_job.csv"


def test_traces_list_shows_license_and_checksums() -> None:
    result = CliRunner().invoke(main, ["traces", "list"])
    assert result.exception is None, result.output
    assert "philly: Microsoft Philly" in result.output
    assert "license CC-BY-4.0; checksums: sha256 of all 5 files" in result.output
    assert re.search(r"pai-2020: .*\n  license CC-BY-4\.0; checksums: sha256 of all 5 files", result.output)
    assert re.search(
        r"acme: .*\n  license CC-BY-4\.0; checksums: sha256 of 1 of 3 files, git blob id of 2;", result.output
    )
    assert "philly-raw: " in result.output and "checksums: sha256 of its file;" in result.output
