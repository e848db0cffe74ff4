"""memory.mva_utilisation (issue #29, dram_queueing 4; evaluated, not shipped): the DRAM share's
utilisation under a closed loop of bytes in flight by exact Mean Value Analysis (one FCFS station
of service S a chunk, one delay station Z = R0 - S, N = w / S chunks). Checked against the MVA
recursion worked in exact fractions, against Erlang B (the machine-repairman closed form: 1 - U is
Erlang B at N servers and load Z / S, scipy's incomplete gamma), its limits (N = 1, N -> infinity,
S -> 0 and S = R0: the FIFO's knee), its tail against mode 3's open-queue form, and its hooks (the
model of one CU, sharefit)."""
from __future__ import annotations

import dataclasses
import math
import types
from fractions import Fraction

import pytest
from scipy import special

from quco.gst import tables
from quco.perfmodel import fit, hardware, sharefit
from quco.perfmodel.cu_model import Model
from quco.perfmodel.dram_load import closed_loop, closed_loop_utilisation, utilisation_at
from quco.perfmodel.memory import loaded_utilisation, mva_utilisation
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work

H100 = machine(tables.unpack(tables.load("h100-sxm")))
R0, S = 1020.0, 408.0  # the H100's idle TMA round trip and lat_dram - lat_l2, in cycles


def hand_mva(n: int, s: Fraction, z: Fraction) -> Fraction:
    """The MVA recursion in exact fractions: R = S (1 + Q), X = n / (Z + R), Q = X R; U = X S."""
    q = Fraction(0)
    for i in range(1, n + 1):
        r = s * (1 + q)
        x = Fraction(i) / (z + r)
        q = x * r
    return x * s


def erlang_b(n: float, a: float) -> float:
    """Erlang B at n servers and offered load a, closed form: a^n e^-a / Gamma(n + 1, a)."""
    return math.exp(n * math.log(a) - a - special.gammaln(n + 1)) / special.gammaincc(n + 1, a)


def test_one_customer_is_the_no_queue_result():
    """N = 1: one chunk, nothing to queue behind: U = S / R0 = w / R0; below one chunk, w / R0."""
    assert mva_utilisation(S, R0, S) == pytest.approx(S / R0, rel=1e-12)
    for w in (10.0, 100.0, 0.7 * S):
        assert mva_utilisation(S, R0, w) == pytest.approx(w / R0, rel=1e-12)
    assert mva_utilisation(S, R0, 0.0) == 0.0


def test_small_n_against_the_hand_worked_recursion():
    """N = 2 and 3 at the H100's S = 408, Z = 612: U = 20/29 and 58/67 (worked by hand: R(1) = 408,
    Q(1) = 0.4, R(2) = 571.2, X(2) = 2 / 1183.2), and every N up to 12 in exact fractions."""
    assert mva_utilisation(S, R0, 2 * S) == pytest.approx(20 / 29, rel=1e-12)
    assert mva_utilisation(S, R0, 3 * S) == pytest.approx(58 / 67, rel=1e-12)
    for s, z in ((Fraction(408), Fraction(612)), (Fraction(100), Fraction(900)), (Fraction(700), Fraction(320))):
        for n in range(1, 13):
            want = float(hand_mva(n, s, z))
            assert mva_utilisation(float(s), float(s + z), n * float(s)) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("s", [50.0, 204.0, 408.0, 800.0])
def test_it_is_one_minus_erlang_b(s):
    """A closed loop with one FCFS exponential station and a delay station is the machine
    repairman: 1 - U(N) = Erlang B(N, Z / S) (an independent closed form, through scipy)."""
    a = (R0 - s) / s
    for n in range(1, 40):
        want = 1.0 - erlang_b(n, a)
        assert mva_utilisation(s, R0, n * s) == pytest.approx(want, rel=1e-10, abs=1e-15)


def test_real_n_interpolates_and_grows_to_one():
    """A real N between integers lies on the line between them; U grows with w, to 1 as N grows."""
    u2, u3 = mva_utilisation(S, R0, 2 * S), mva_utilisation(S, R0, 3 * S)
    assert mva_utilisation(S, R0, 2.25 * S) == pytest.approx(u2 + 0.25 * (u3 - u2), rel=1e-12)
    ws = [R0 * k / 16 for k in range(1, 200)]
    us = [mva_utilisation(S, R0, w) for w in ws]
    assert all(b >= a for a, b in zip(us, us[1:]))
    assert us[-1] == pytest.approx(1.0, abs=1e-12)
    assert mva_utilisation(S, R0, 1e6 * S) == pytest.approx(1.0, abs=1e-15)


def test_the_knee_is_the_limit_at_both_ends_of_s():
    """S -> 0 (infinitely many tiny chunks) and S = R0 (no delay station: one chunk fills the
    round trip) are both the FIFO's sharp knee min(1, w / R0); in between the MVA smooths it,
    and never exceeds it."""
    for w in (0.3 * R0, R0, 1.7 * R0, 5 * R0):
        knee = min(1.0, w / R0)
        assert mva_utilisation(0.0, R0, w) == knee
        assert mva_utilisation(R0, R0, w) == pytest.approx(knee, rel=1e-12)
        assert mva_utilisation(1e-4 * R0, R0, w) == knee  # N* past MVA_KNEE_MAX: the S -> 0 limit
        for s in (0.01 * R0, 0.2 * R0, 0.4 * R0, 0.8 * R0):
            assert mva_utilisation(s, R0, w) <= knee + 1e-12
    assert mva_utilisation(S, R0, R0) < 0.8  # the knee itself: the most a queue costs


def test_the_tail_is_faster_than_geometric_where_the_open_queue_form_is_hyperbolic():
    """Past N* = R0 / S the MVA's loss 1 - U shrinks by ever smaller factors (Erlang B's ratio
    B(n + 1) / B(n) < a / (n + 1)); mode 3's open-queue form loses about S / w, halving when w
    doubles."""
    losses = [1.0 - mva_utilisation(S, R0, n * S) for n in range(3, 14)]
    ratios = [b / a for a, b in zip(losses, losses[1:])]
    a = (R0 - S) / S
    assert all(r < a / n for r, n in zip(ratios, range(4, 15)))
    assert all(r2 < r1 for r1, r2 in zip(ratios, ratios[1:]))
    for w in (8 * R0, 16 * R0, 32 * R0):
        open_loss, open_loss2 = 1.0 - loaded_utilisation(S, R0, w), 1.0 - loaded_utilisation(S, R0, 2 * w)
        assert open_loss == pytest.approx(S / w, rel=0.15)
        assert open_loss2 / open_loss == pytest.approx(0.5, abs=0.05)
        assert 1.0 - mva_utilisation(S, R0, w) < 1e-6 * open_loss


def test_mode_4_slows_a_stream_by_its_utilisation_and_no_preset_runs_it():
    """The model of one CU in mode 4 runs its DRAM share at the MVA's U: a shallow Elementwise (256/2,
    near the knee) slows by about 1 / U; a deep one (8192/2, far past the knee) does not move
    where mode 3 still charges its tail."""
    for tile, slots, deep in ((256, 2, False), (8192, 2, True)):
        work = Work.of(hardware.scaled_kernel("Elementwise", 4096))
        cfg = Config(tile, (slots, slots))
        m4 = dataclasses.replace(H100, dram_queue_mode=4)
        model = Model(m4, work, cfg)
        r0, w = closed_loop(model)
        u = closed_loop_utilisation(model)
        assert u == mva_utilisation(H100.dram_queue_service, r0, w)
        base, t4 = simulate(H100, work, cfg), simulate(m4, work, cfg)
        if deep:
            assert u > 1 - 1e-9 and t4.cycles == pytest.approx(base.cycles, rel=1e-6)
            assert simulate(dataclasses.replace(H100, dram_queue_mode=3), work, cfg).cycles > 1.01 * base.cycles
        else:
            assert 0.5 < u < 0.99 and t4.cycles > base.cycles
    for name in tables.preset_names():
        assert machine(tables.unpack(tables.load(name))).dram_queue_mode != 4


def synthetic(s: float, cost: float) -> list[tuple]:
    """Rows of fit_share_terms' shape whose measured time is the closed form at (s, cost) under MVA."""
    out = []
    for i, (w_r0, streams, dram) in enumerate((a, n, d) for a in (0.6, 1.0, 1.3, 1.6, 2.5, 4.0)
                                               for n in (2_000, 9_000, 30_000) for d in (150.0, 900.0)):
        t = (dram / utilisation_at(4, s, R0, w_r0 * R0) + 5.0) * (1.0 + cost * streams)
        out.append((types.SimpleNamespace(time_us=t, index=i), streams, dram, 5.0, R0, w_r0 * R0))
    return out


@pytest.mark.parametrize("s,cost", [(400.0, 1.2e-5), (150.0, 3e-6), (700.0, 0.0)])
def test_mva_fit_recovers_planted_constants(s, cost):
    got_s, got_c, rms = sharefit.fit_share_terms(synthetic(s, cost), mode=4)
    assert rms < 1e-6
    assert got_s == pytest.approx(s, abs=1.0)
    assert got_c == pytest.approx(cost, rel=1e-3, abs=1e-9)


def test_the_h100_terms_give_the_models_mva_share_at_another_s():
    """share_terms' w, read once, gives at any S what the model's own closed_loop_utilisation gives
    in mode 4; fit_mva carries mode 4 into fit.fit (share_mode)."""
    rows = hardware.read(str(hardware.DEFAULT_DATA))
    terms, residency = sharefit.share_terms(H100, rows), fit._residencies(H100, rows)
    m4 = dataclasses.replace(H100, dram_queue_mode=4)
    for other in (fit.with_service(m4, 0.5 * fit.service(H100)), fit.with_service(m4, 2 * fit.service(H100))):
        for r, _, _, _, r0, w in terms[::9]:
            work = Work.of(hardware.scaled_kernel(r.kernel, r.work_groups))
            occ = min(residency(work, r), fit.per_cu(H100, r.work_groups))
            assert utilisation_at(4, fit.service(other), r0, w) == pytest.approx(
                fit.loaded_share(other, work, r.tile, r.slots, occ), rel=1e-12)
    assert fit.share_mode(H100, sharefit.fit_mva).dram_queue_mode == 4
    assert fit.share_mode(H100, sharefit.fit_share).dram_queue_mode == 3
