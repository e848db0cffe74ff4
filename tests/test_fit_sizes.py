"""quco.perfmodel.fit: leave one grid size out (issue #29) on hand-made rows with a planted
constant, and the fit's residency judged as hardware.points judges it."""
from __future__ import annotations

import pytest

from quco.gst import tables
from quco.perfmodel import fit, hardware
from quco.perfmodel.hardware import Measurement
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work

GST = tables.load("h100-sxm")
H = machine(tables.unpack(GST))
STAGE = 50.0  # the planted per-stage cost, instructions a warp per work-group and stage


def slope_us(stage: float, work_groups: int) -> float:
    """Closed form of the time one slot more adds on the H100 when the SM's sub-partitions are
    the bottleneck: stage instructions x the busiest SM's work-groups (ceil(wgs / 132)) x
    7 consumer warps x 1 cycle an instruction / 4 sub-partitions, at 1,980 MHz."""
    return stage * -(-work_groups // 132) * 7 * 1.0 / 4 / 1980.0


def rows(size: str, work_groups: int, base_us: float, per_slot_us: float) -> list[Measurement]:
    """Dot-Product TMA rows at tiles 128 and 256, slots 3..8: base x 256 / tile + per_slot x slots."""
    return [Measurement("Dot-Product", "att", size, work_groups, tile, s, True,
                        base_us * (256 / tile) + per_slot_us * s)
            for tile in (128, 256) for s in range(3, 9)]


def test_the_hand_computed_slope_is_the_h100s():
    assert (H.cus, H.clock_mhz, H.pools, H.wave_instr) == (132, 1980.0, 4, 1.0)
    assert Work.of(hardware.scaled_kernel("Dot-Product", 256)).consumer_wavefronts == 7


def test_a_stage_cost_planted_in_one_size_is_recovered_from_that_size_alone():
    """Big rows carry STAGE's slope (11.0 us a slot at 32,768 work-groups, issue-bound: 4 ms
    against a DRAM bound of 0.36 ms); paper rows a slope of a fifth of it. Fitted on the big
    rows alone the stage cost is STAGE, whatever the paper rows say; the chain latency, which
    only a grid with every work-group resident sets, keeps its unfitted value (4 cycles)."""
    big = rows("big", 32768, 4000.0, slope_us(STAGE, 32768))
    paper = rows("paper", 256, 40.0, slope_us(STAGE, 256) / 5)
    assert slope_us(STAGE, 32768) == pytest.approx(11.0038, rel=1e-4)
    by = {r["fitted_on"]: r for r in fit.leave_size_out(H, GST, big + paper)}
    assert by["big"]["size"] == "paper" and by["paper"]["size"] == "big"  # fitted on one, compared on the other
    c, used = by["big"]["constants"], by["big"]["used"]
    assert c["stage_instr"] == pytest.approx(STAGE, rel=1e-6)
    assert {r.size for r in used["stage_instr"]} == {"big"} and len(used["stage_instr"]) == 10  # slots 4..8 of two tiles
    assert c["dep_instr_cycles"] == 4 and used["dep_instr_cycles"] is None
    assert by["paper"]["constants"]["stage_instr"] != pytest.approx(STAGE, rel=0.1)


def test_a_one_step_tile_that_ran_past_its_buffers_counts_one_buffer_in_the_fit_as_in_points():
    """Matrix-Vector 2048/8 (one step of K = 2,048) ran on the H100 although 7 stage buffers
    of 8 rows x 2,048 x 2 B cannot be allocated: the fit's residency is the unpipelined one,
    as hardware.points evaluates it, not 0."""
    data = [r for r in hardware.read(hardware.DEFAULT_DATA)
            if r.kernel == "Matrix-Vector" and r.size == "big" and r.variant == "att"]
    row = next(r for r in data if r.tile == 2048 and r.slots == 8)
    work = Work.of(hardware.scaled_kernel("Matrix-Vector", row.work_groups))
    assert row.fits and hardware.measured_residency(H, work, 2048, 8) == 0
    assert fit._residencies(H, data)(work, row) == hardware.measured_residency(H, work, 2048, 1) >= 1


def test_the_fit_finds_each_groups_unpipelined_tiles_once_and_as_the_group_alone_gives_them(monkeypatch):
    """The shipped file: a pass over the rows (issue_rows, stream_rows, stage_groups) asks
    unpipelined_tiles once for each (kernel, size, work-groups) at most, not once a row (which
    rescanned every row for each: quadratic), and each row's residency is the one its group
    alone gives (the rows filtered by kernel, size and work-groups, as hardware.points sees them)."""
    data = hardware.read(hardware.DEFAULT_DATA)
    tma = [r for r in data if r.variant == "att" and r.fits and r.tile and r.slots]
    groups = {(r.kernel, r.size, r.work_groups) for r in tma}
    real, calls = hardware.unpipelined_tiles, []
    monkeypatch.setattr(fit, "unpipelined_tiles", lambda *a: calls.append(a) or real(*a))
    for one_pass in (fit.issue_rows, fit.stream_rows, fit.stage_groups):
        calls.clear()
        assert one_pass(H, data)
        assert 0 < len(calls) <= len(groups)
    residency, unpipelined = fit._residencies(H, data), 0
    for r in tma:
        work = Work.of(hardware.scaled_kernel(r.kernel, r.work_groups))
        group = [x for x in tma if (x.kernel, x.size, x.work_groups) == (r.kernel, r.size, r.work_groups)]
        flat = real(H, work, group)
        assert residency(work, r) == hardware.measured_residency(H, work, r.tile, r.slots, pipelined=r.tile not in flat)
        unpipelined += bool(flat)
    assert unpipelined   # the file has unpipelined tiles: the check above is not vacuous
