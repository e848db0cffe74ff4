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


def test_same_code_noise_hand_worked():
    # log times c +- a, c, c +- a and one slow glitch: the glitch left out, the rest's sample sd
    a, c = 0.01, math.log(10.0)
    times = {1: c + a, 2: c - a, 3: c, 4: c + a, 5: c - a, 6: c + 0.7}
    rows = [_row("Matrix-Vector", 2048, s, math.exp(v)) for s, v in times.items()]
    rows.append(_row("Matrix-Vector", 1024, 1, 99.0))  # another tile: not this code
    n = precision.same_code_noise(rows, 2048)
    assert (n.tile, n.rows) == (2048, 6) and n.glitches == ((6, pytest.approx(10 * math.exp(0.7))),)
    assert n.sigma_pct == pytest.approx(100 * math.sqrt(4 * a * a / 4), rel=1e-9)
    # a fast row is not a glitch (disturbed runs are slow); two rows are too few
    fast = rows[:3] + [_row("Matrix-Vector", 2048, 7, 5.0)]
    assert not precision.same_code_noise(fast, 2048).glitches
    assert precision.same_code_noise(rows[:2], 2048) is None


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


def test_the_short_kernels_are_noisier_than_the_twins():
    """Matrix-Vector's 2048 tile is one compiled step at every slot count (unpipelined): 0.03%
    apart on the big grid, about 3% at the paper's 9-10 us, with one 2x glitch at 8 slots."""
    rows = hardware.read(hardware.DEFAULT_DATA)
    mv = {size: [r for r in rows if r.kernel == "Matrix-Vector" and r.variant == "att" and r.size == size]
          for size in ("big", "paper")}
    big, paper = precision.same_code_noise(mv["big"], 2048), precision.same_code_noise(mv["paper"], 2048)
    assert big.sigma_pct < 0.1 and not big.glitches
    assert 2.0 < paper.sigma_pct < 4.0 and [s for s, _ in paper.glitches] == [8]


def test_too_little_to_estimate_gives_no_figure():
    """Twin pairs that are mostly glitches leave fewer than three to estimate the noise from: no
    TwinNoise for that size (not a NaN); one configuration has no rank to take."""
    rows = []
    for i, q in enumerate([1.0, 1.001, 1.5, 1.6, 0.5]):
        rows += [_row("Elementwise", 64 << i, 2, 100.0 * q), _row("Sumvectors", 64 << i, 2, 100.0)]
    assert precision.twin_noise(rows) == []
    assert precision.twin_noise(rows + [_row("Elementwise", 4096, 2, 100.0), _row("Sumvectors", 4096, 2, 100.0)])
    assert precision.ceiling([10.0], 0.02) == {"rank": None, "cost_pct": 0.0, "cost_p90_pct": 0.0}
