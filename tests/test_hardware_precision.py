"""The measurement file's own precision (quco.perfmodel.precision): hand-worked twin pairs,
the ceiling's closed-form limits, and the shipped H100 file against its README's repeatability."""
import math

import pytest

from quco.perfmodel import hardware, precision
from quco.perfmodel.hardware import Measurement


def _row(kernel, tile, slots, us, size="paper"):
    return Measurement(kernel, "att", size, 256, tile, slots, True, us)


def test_twin_noise_hand_worked():
    # log ratios +a, -a, +a, -a, 0 (and one glitch): median 0, median |deviation| a, so the
    # pair's standard deviation is 1.4826 a and one measurement's 1.4826 a / sqrt 2
    a = 0.004
    ratios = [math.exp(a), math.exp(-a), math.exp(a), math.exp(-a), 1.0, 1.5]
    rows = []
    for i, q in enumerate(ratios):
        rows += [_row("Elementwise", 64 << i, 2, 100.0 * q), _row("Sumvectors", 64 << i, 2, 100.0)]
    rows.append(_row("Sumvectors", 64, 3, 90.0))  # no twin: not a pair
    (n,) = precision.twin_noise(rows)
    assert (n.size, n.pairs) == ("paper", 6)
    assert n.median_ratio_pct == pytest.approx(0.0, abs=1e-9)
    assert n.sigma_pct == pytest.approx(100 * 1.4826 * a / math.sqrt(2), rel=1e-6)
    assert n.glitches == ((2048, 2, 150.0, 100.0),)


def test_twin_noise_sees_a_systematic_difference_in_the_median_not_the_noise():
    rows = []
    for i in range(5):
        rows += [_row("Elementwise", 64 << i, 1, 103.0), _row("Sumvectors", 64 << i, 1, 100.0)]
    (n,) = precision.twin_noise(rows)
    assert n.median_ratio_pct == pytest.approx(3.0)
    assert n.sigma_pct == pytest.approx(0.0, abs=1e-9)


def test_ceiling_limits():
    times = [10.0, 11.0, 12.5, 20.0, 40.0, 10.05]
    exact = precision.ceiling(times, 0.0, draws=20)
    assert exact == {"rank": 1.0, "cost_pct": 0.0, "cost_p90_pct": 0.0}
    # noise far above the spread: the ranking is chance, the best often measures above another
    wild = precision.ceiling(times, 5.0, draws=400)
    assert abs(wild["rank"]) < 0.5 and wild["cost_p90_pct"] > 100
    # more noise, a worse ceiling; the same seed, the same figures
    mild, more = precision.ceiling(times, 0.002, draws=400), precision.ceiling(times, 0.02, draws=400)
    assert mild["rank"] >= more["rank"] and mild["cost_p90_pct"] <= more["cost_p90_pct"]
    assert precision.ceiling(times, 0.02, draws=50) == precision.ceiling(times, 0.02, draws=50)


def test_the_h100_sweep_is_as_repeatable_as_its_readme_says():
    """The README: 7 configurations measured twice differ by at most 0.47% (mean 0.14%), at the
    big size. The twin kernels say the same at both sizes, and name three disturbed rows."""
    noise = {n.size: n for n in precision.twin_noise(hardware.read(hardware.DEFAULT_DATA))}
    assert set(noise) == {"big", "paper"}
    for n in noise.values():
        assert n.pairs == 63 and abs(n.median_ratio_pct) < 0.1 and n.sigma_pct < 0.47
    assert not noise["big"].glitches
    assert [(t, s) for t, s, _, _ in noise["paper"].glitches] == [(128, 7), (1024, 5), (8192, 1)]
