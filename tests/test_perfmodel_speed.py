"""The performance model's speed work (issue #29 item 3): the Ideal case's extrapolation against
full runs, and the model's cost against a bound on the events it schedules at any grid size (a
count, not seconds)."""
from pathlib import Path

import pytest
from quco.gst import tables
from quco.kernel.format import load_kernel
from quco.perfmodel import cu_model, hardware, residency, sim
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work

KERNELS = Path(__file__).resolve().parent.parent / "quco" / "examples" / "kernels"


def _ideal(name: str, wgs: int, tile: int):
    g = tables.unpack(tables.load("h100-sxm"))
    m, work = machine(g, unlimited_lds=True), Work.of(hardware.scaled_kernel(name, wgs))
    cfg = Config(tile, tuple(work.tiles(i, tile) * q.passes for i, q in enumerate(work.queues)))
    return m, work, cfg, residency.occupancy(m, work, cfg)


@pytest.mark.parametrize("name", ["Elementwise", "Dot-Product"])
def test_a_large_grid_ideal_evaluation_stays_within_an_event_bound(name):
    # Ideal (every tile of the pass has its slot) at the smallest tile on a million work-groups:
    # the rounds of work-groups past ROUNDS + 1 and the steps past the step window are
    # extrapolated as in every other mode, so the events scheduled are bounded by the work-groups
    # simulated (ROUNDS + 2 rounds of the resident ones) x the steps each walks (the two windows,
    # or the whole pass if shorter) x 8 events a step, whatever the grid
    from quco.perfmodel.window import STEP_RUNS
    m, work, cfg, occ = _ideal(name, 1 << 20, 64)
    steps = max(work.tiles(i, 64) for i in range(len(work.queues)))
    walked = sum(STEP_RUNS) if steps > 2 * STEP_RUNS[1] else steps
    bound = 8 * (cu_model.ROUNDS + 2) * occ * walked
    big = sim.simulate(m, work, cfg, "ideal", max_occupancy=occ)
    assert big.extrapolated and big.events <= bound, (big.events, bound)
    # (before the ideal run took the step window, Elementwise's walked the 1,024 steps of its pass)


@pytest.mark.parametrize("name,tile", [("Elementwise", 64), ("Elementwise", 1024), ("Dot-Product", 64)])
def test_the_extrapolated_ideal_run_matches_the_full_one(name, tile):
    m, work, cfg, occ = _ideal(name, 4096, tile)
    for cap in (1, occ):
        fast = sim.simulate(m, work, cfg, "ideal", max_occupancy=cap)
        full = sim.simulate(m, work, cfg, "ideal", exact=True, max_occupancy=cap)
        assert fast.cycles == pytest.approx(full.cycles, rel=1e-3), (cap, fast.events, full.events)


def test_the_ideal_run_of_several_resident_work_groups_on_many_passes_is_not_extrapolated():
    # each resident work-group's producer queues every tile of every pass in the CU's ATT unit
    # and pipes at once, so the time is not linear in the passes (sim.simulate): such a run is
    # simulated whole, and agrees with the exact run to the rounding of the rounds extrapolation
    g = tables.unpack(tables.load("r9-nano"))
    m = machine(g, unlimited_lds=True)
    work = Work.of(load_kernel(KERNELS / "matrix-matrix.json"))
    cfg = Config(512, tuple(work.tiles(i, 512) * q.passes for i, q in enumerate(work.queues)))
    one, two = (sim.simulate(m, work, cfg, "ideal", max_occupancy=c) for c in (1, 2))
    assert two.occupancy == 2 and not two.extrapolated
    assert two.cycles == pytest.approx(sim.simulate(m, work, cfg, "ideal", exact=True, max_occupancy=2).cycles, rel=1e-5)
    assert one.extrapolated and one.cycles == pytest.approx(
        sim.simulate(m, work, cfg, "ideal", exact=True, max_occupancy=1).cycles, rel=1e-5)


# ---------------------------------------------------------------- extrapolation against full runs
@pytest.mark.parametrize("label", ["256/4+8", "128/7+1", "256/2+8"])
def test_rounds_are_extrapolated_once_steady(label):
    # H100 Matrix-Vector at 32,768 work-groups, 8 resident, 31 rounds a slot: the slots start in
    # step and settle over 3 (256/4+8: then 23,923 / 24,329 cycles a round, alternately) to 12
    # rounds (128/7+1). Extrapolating from rounds 2..3 was -2.6%, +5.3% and +7.9% off the full run
    g = tables.unpack(tables.load("h100-sxm"))
    m, work = machine(g), Work.of(hardware.scaled_kernel("Matrix-Vector", 32768))
    cfg = Config.parse(work, label)
    fast, full = sim.simulate(m, work, cfg), sim.simulate(m, work, cfg, exact=True)
    assert fast.extrapolated and fast.events < full.events
    assert fast.cycles == pytest.approx(full.cycles, rel=5e-3), (fast.cycles, full.cycles)


def test_steady_rounds_cost_is_bounded_whatever_the_grid():
    # at most MAX_ROUNDS rounds, the next and the uneven last one are simulated: a million
    # work-groups schedule no more events than MAX_ROUNDS + 2 rounds of the resident ones
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    for label in ("256/2+8", "128/7+1"):
        small = Work.of(hardware.scaled_kernel("Matrix-Vector", 32768))
        big = Work.of(hardware.scaled_kernel("Matrix-Vector", 1 << 20))
        cfg = Config.parse(small, label)
        a, b = sim.simulate(m, small, cfg), sim.simulate(m, big, cfg)
        per_round = sim.simulate(m, small, cfg, exact=True).events / a.work_groups_per_cu * a.occupancy
        assert b.extrapolated and b.events <= (cu_model.MAX_ROUNDS + 3) * per_round, (b.events, per_round)


def test_the_pass_window_starts_after_the_resident_work_groups_settle():
    # H100 Matrix-Matrix at 2,048 work-groups, 4 resident, 128 passes: they settle over 6 passes;
    # the window over passes 3..15 was 3.4% (512/6+5) and 5.7% (512/6+7) fast
    g = tables.unpack(tables.load("h100-sxm"))
    k = hardware.scaled_kernel("Matrix-Matrix", 2048)
    m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
    for label in ("512/6+5", "512/6+7"):
        cfg = Config.parse(work, label)
        fast, full = sim.simulate(m, work, cfg), sim.simulate(m, work, cfg, exact=True)
        assert fast.extrapolated and fast.events * 2 < full.events
        assert fast.cycles == pytest.approx(full.cycles, rel=5e-3), (label, fast.cycles, full.cycles)
