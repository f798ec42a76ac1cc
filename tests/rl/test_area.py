import pytest

from slurmrl.rl.area import AreaCurve
from slurmrl.sim.records import Sample


def test_area_curve_integrates_jobs_in_system_from_the_start() -> None:
    samples = [Sample(0.0, 0, 2, 0, 0.0), Sample(10.0, 1, 1, 2, 0.0), Sample(20.0, 0, 0, 0, 0.0)]
    curve = AreaCurve(samples, 5.0)
    assert curve.at(5.0) == 0.0
    assert curve.at(10.0) == pytest.approx(5 * 2)
    assert curve.at(15.0) == pytest.approx(10 + 5 * 3)
    assert curve.total == pytest.approx(10 + 10 * 3)
    assert curve.elapsed(100.0) == 15.0
