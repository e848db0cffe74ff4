"""Latency under load (issue #29: the paper grid's mid tiles): a DRAM round trip grows with the
DRAM's utilisation u as an M/M/1 station's residence, R0 + S u / (1 - u), S the DRAM's part of
the idle round trip (lat_dram - lat_l2); the closed loop of a configuration's bytes in flight sets
u (sim.loaded_delay), and the model's FIFO share, which already queues a full pipe's bytes, gets
only what the smooth curve adds over its sharp knee. Closed forms computed here, the presets'
switch, and the H100 rows it moves."""
from __future__ import annotations

import dataclasses
import math

import pytest

from quco.gst import tables
from quco.perfmodel import hardware
from quco.perfmodel.params import description, machine
from quco.perfmodel.sim import loaded_delay, simulate
from quco.perfmodel.work import STREAMING, Config, Queue, Work

R9 = machine(tables.unpack(tables.load("r9-nano")))
H100 = machine(tables.unpack(tables.load("h100-sxm")))


@pytest.mark.parametrize("w", [0.1, 0.5, 1.0, 2.0, 10.0])
def test_delay_at_s_equal_r0_is_min_r0_w(w):
    """S = R0: u (R0 + R0 u / (1 - u)) = w gives u = w / (R0 + w), the round trip R0 + w, and over
    the knee max(R0, w) the delay min(R0, w)."""
    r0 = 1000.0
    assert loaded_delay(r0, r0, w * r0) == pytest.approx(min(r0, w * r0), rel=1e-9)


@pytest.mark.parametrize("s,w", [(100.0, 300.0), (400.0, 1000.0), (400.0, 5000.0), (2000.0, 800.0)])
def test_utilisation_solves_the_closed_loop(s, w):
    """The delay is R0 + S u / (1 - u) - max(R0, w), u the root in (0, 1) of the loop's equation,
    found here by bisection."""
    r0 = 1000.0
    lo, hi = 0.0, 1.0 - 1e-15
    for _ in range(200):
        u = (lo + hi) / 2
        lo, hi = (u, hi) if u * (r0 + s * u / (1 - u)) < w else (lo, u)
    assert loaded_delay(s, r0, w) == pytest.approx(max(0.0, r0 + s * u / (1 - u) - max(r0, w)), rel=1e-9, abs=1e-9)


def test_delay_vanishes_at_no_load_peaks_near_the_knee_and_tends_to_s():
    """Little load: no queue; near the knee (w = R0) the most; a pipe far past full: the FIFO's own
    queue plus one service S (u -> 1 with 1 - u ~ S / w)."""
    r0, s = 1020.0, 408.0
    d = {f: loaded_delay(s, r0, f * r0) for f in (0.01, 0.5, 1.0, 2.0, 100.0)}
    assert d[0.01] < 0.02 * s and d[100.0] == pytest.approx(s, rel=0.01)
    assert d[1.0] == max(d.values()) and d[0.5] > 0 and d[2.0] > 0
    assert loaded_delay(0.0, r0, r0) == 0.0 and loaded_delay(s, r0, 0.0) == 0.0


def test_one_slot_round_trip_grows_by_the_delay():
    """One streaming queue, one slot, one work-group a CU, no compute: each tile's issue-to-arrival
    is the idle round trip plus its DRAM time, and with S set, plus loaded_delay of its one tile in
    flight (w = tile bytes over the CU's share of DRAM at the descriptor's efficiency)."""
    tile = 1024
    work = Work("s", (Queue(64 * tile, STREAMING, 2),), 0.0, 7, work_groups=R9.cus)
    base = simulate(R9, work, Config(tile, (1,)))
    s = 600.0
    loaded = simulate(dataclasses.replace(R9, dram_queue=s), work, Config(tile, (1,)))
    rate = R9.dram_bytes_per_cycle / R9.cus * (2 * tile) / (2 * tile + 16)
    want = loaded_delay(s, R9.lat_att + R9.lat_dram, 2 * tile / rate)
    assert want > 10
    assert loaded.mean_latency - base.mean_latency == pytest.approx(want, rel=1e-6)
    assert loaded.cycles > base.cycles


def test_presets_switch_and_s_from_the_latencies():
    """The H100 (and the other real GPUs) take S = lat_dram - lat_l2 (350 - 144 ns measured:
    206 ns); MGPUSim's GPUs (ideal memory controllers) none."""
    assert H100.dram_queue == pytest.approx(H100.lat_dram - H100.lat_l2)
    assert H100.dram_queue * 1000.0 / H100.clock_mhz == pytest.approx(206, abs=1)
    for name in ("r9-nano", "mi100", "radeon-530"):
        assert machine(tables.unpack(tables.load(name))).dram_queue == 0.0
    for name in ("h100-sxm", "h200", "mi300x"):
        g = tables.unpack(tables.load(name))
        assert machine(g).dram_queue > 0


def test_h100_paper_grid_streaming_picks_and_rows():
    """The rows it fixes (tolerances stated): on the paper grid Elementwise and Sumvectors keep
    gaining measured time up to 8192/7; the model's best is now that row (it was 8192/5, +1.8%);
    the mid-tile rows it moved are within 25% (were 26-40% optimistic): Elementwise 512/4
    (55.3 us), 1024/3 (51.4), ElementwiseK 1024/2 (58.3 us, the worst: within 30%)."""
    rows = [r for r in hardware.read(hardware.DEFAULT_DATA) if r.size == "paper"]
    res = {r["kernel"]: r for r in hardware.compare(rows, tables.load("h100-sxm"),
                                                      kernels=("Elementwise", "Sumvectors", "ElementwiseK"))}
    for k in ("Elementwise", "Sumvectors"):
        assert res[k]["model_best"] == res[k]["measured_best"] == "8192/7"
    def at(k, t, s):
        return next(p for p in res[k]["points"] if p.tile == t and p.slots == s)
    for k, t, s, tol in (("Elementwise", 512, 4, 0.25), ("Elementwise", 1024, 3, 0.25), ("ElementwiseK", 1024, 2, 0.30)):
        p = at(k, t, s)
        assert abs(p.model_us / p.measured_us - 1) < tol
    for k in res:  # still optimistic on the whole at this grid, less so than without (-11.2..-9.0%)
        assert -0.085 < res[k]["mean_signed_error_pct"] / 100 < 0
