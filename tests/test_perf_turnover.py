"""The turnover between consecutive work-groups on one slot (`wg_turnover_ns`, issue #29): the
model against a time worked out by hand, and its fit on the H100 rows (quco/perfmodel/turnover.py).
The presets carry 0 (docs/perf-model-not-shipped.md, "The turnover between work-groups": the paper grid's
value does not carry to the big grid), so these tests set it themselves."""
from __future__ import annotations

import dataclasses

import pytest

from quco.gst import tables
from quco.perfmodel import hardware as hw, turnover
from quco.perfmodel.model_table import RANGES
from quco.perfmodel.params import GPU_FIELDS, const, description, dram_efficiency, machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import STREAMING, Config, Queue, Work

H100_GST = tables.load("h100-sxm")
H = machine(tables.unpack(H100_GST))


def one_tile_work(per_cu: int) -> Work:
    """One queue of one 64-element fp16 tile a work-group, `per_cu` work-groups on the busiest SM."""
    return Work("one-tile", (Queue(64, STREAMING, 2),), 0.0, 8, work_groups=per_cu * H.cus)


def work_group_by_hand(m) -> float:
    """Cycles of one such work-group alone on an SM, from the machine's figures: the ATT takes its
    descriptor (att_issue), the tile arrives after the ATT and DRAM round trip and its 128 bytes'
    slowest server (the SM's DRAM share at a 128-byte descriptor's efficiency, its L2 share, the
    fill path), the consumers wake (LDS_LATENCY) and run the step's code: its chain of dependent
    instructions or its issue on the pools, whichever is longer (no stage set-up: stage_instr 0)."""
    nbytes = 128
    share = m.dram_bytes_per_cycle / (1 + m.dram_stream_cost * m.cus * 1) / m.cus   # 1 stream a WG
    fabric = const("FABRIC_BYTES_PER_CYCLE")
    xfer = max(nbytes / (min(share, fabric) * dram_efficiency(nbytes)),
               nbytes / min(m.l2_bytes_per_cycle / m.cus, fabric), nbytes / fabric)
    instrs = m.step_instr + m.queue_instr * 1           # one descriptor, no stores
    code = max(instrs * m.dep_instr, 8 * instrs * m.wave_instr / 4)
    return m.att_issue + m.lat_att + m.lat_dram + xfer + const("LDS_LATENCY") + code


@pytest.mark.parametrize("ns", [0.0, 500.0, 2000.0])
def test_two_work_groups_in_turn_pay_one_turnover(ns):
    """Two work-groups on an SM that holds one at a time: launch + 2 x the work-group + the
    turnover between them, each term by hand."""
    m = dataclasses.replace(H, stage_instr=0.0, turnover=ns * H.clock_mhz / 1000.0)
    o = simulate(m, one_tile_work(2), Config(64, (1,)), max_occupancy=1)
    assert o.occupancy == 1 and o.work_groups_per_cu == 2
    expected = m.launch + 2 * work_group_by_hand(m) + m.turnover
    assert o.cycles == pytest.approx(expected, rel=1e-9)


def test_resident_work_groups_pay_no_turnover_and_long_grids_pay_it_per_work_group():
    """Both work-groups resident at once: nothing turns over. Four in turn: three turnovers."""
    m0 = dataclasses.replace(H, stage_instr=0.0)
    m1 = dataclasses.replace(m0, turnover=1000.0)
    w2, w4 = one_tile_work(2), one_tile_work(4)
    cfg = Config(64, (1,))
    assert simulate(m1, w2, cfg, max_occupancy=2).cycles == simulate(m0, w2, cfg, max_occupancy=2).cycles
    assert simulate(m1, w4, cfg, max_occupancy=1).cycles - simulate(m0, w4, cfg, max_occupancy=1).cycles \
        == pytest.approx(3 * 1000.0, rel=1e-9)


def test_the_field_is_described_ranged_and_zero_in_every_preset():
    """A field of the GPU's description, checked like the others; no preset sets it (not shipped)."""
    assert GPU_FIELDS["wg_turnover_ns"] == 0 and RANGES["wg_turnover_ns"][:2] == (0, 1_000_000)
    for name in tables.preset_names():
        assert machine(tables.unpack(tables.load(name))).turnover == 0.0
        assert description(params_name(name))["wg_turnover_ns"] == 0


def params_name(preset: str) -> str:
    from quco.perfmodel.params import gst_name
    return gst_name(tables.unpack(tables.load(preset)))


@pytest.fixture(scope="module")
def h100_pairs():
    rows = hw.read(hw.DEFAULT_DATA)
    return rows, turnover.pairs(H, rows)


def test_the_pairs_are_occupancy_one_rows_against_a_resident_row_of_their_tile(h100_pairs):
    """Every pair: a row where one work-group fits the SM, against the same tile's row with the
    most slots that holds two or more; Dot-Product paper 8192/5 (16.8 us between 9.4 and 10.9)
    is an outlier and sets nothing."""
    _, pairs = h100_pairs
    paper = {(p["kernel"], p["tile"], p["slots"]): p for p in pairs if p["size"] == "paper"}
    assert ("Dot-Product", 8192, 5) not in paper
    for k in (("Dot-Product", 8192, 6), ("Dot-Product", 8192, 8), ("Matrix-Vector", 1024, 8)):
        assert k in paper and paper[k]["turns"] == 1
    assert paper[("Dot-Product", 8192, 8)]["ref_slots"] == 4
    assert paper[("Matrix-Vector", 1024, 8)]["ref_slots"] == 7
    # measured: Matrix-Vector paper 1024/8 12.19 us against 1024/7 9.73
    assert paper[("Matrix-Vector", 1024, 8)]["measured"] == pytest.approx(12.19 - 9.73, abs=1e-9)


def test_the_model_sees_a_turnover_only_where_a_work_group_is_short(h100_pairs):
    """One or two steps a work-group (Dot-Product 8192, Matrix-Vector 1024): the paper grid's
    second work-group waits the whole turnover (sensitivity 1 us a us). Eight or more (the
    streaming kernels): the DRAM pipe still carries the first work-group's posted stores through
    it, so no turnover moves them (sensitivity 0)."""
    _, pairs = h100_pairs
    for p in pairs:
        if p["size"] != "paper":
            continue
        if p["kernel"] in ("Dot-Product", "Matrix-Vector"):
            assert p["sensitivity"] == pytest.approx(1.0, abs=1e-6)
        else:
            assert p["sensitivity"] == pytest.approx(0.0, abs=1e-6)


def test_the_turnover_fitted_on_one_grid_size_does_not_carry_to_the_other(h100_pairs):
    """The paper grid's pairs want about 1.3 us (the residuals are 0.7-1.7 us); the big grid's,
    whose work-groups turn over 124-248 times an SM, want almost none (under 0.05 us): the cost
    the paper grid's occupancy-1 rows pay is not one per work-group, and the constant is not
    shipped."""
    rows, _ = h100_pairs
    paper, used = turnover.fit_turnover(H, rows, sizes=("paper",))
    big, _ = turnover.fit_turnover(H, rows, sizes=("big",))
    assert {(p["kernel"], p["tile"], p["slots"]) for p in used} == {
        ("Dot-Product", 8192, 6), ("Dot-Product", 8192, 7), ("Dot-Product", 8192, 8), ("Matrix-Vector", 1024, 8)}
    assert 1000 <= paper <= 1600
    assert big <= 50
    # the paper grid's value, on the big grid: Dot-Product's 248 turnovers an SM are 6x its spread
    # of residuals over slots 5..8 (-35..+32 us), Matrix-Vector's 124 are 6x its residual (+23 us)
    cross = [x for x in turnover.cross(H, rows) if x["fitted_on"] == "paper grid" and x["predicted"]]
    assert cross and all(x["predicted"] > 4 * abs(x["measured"]) for x in cross)


def test_rounds_extrapolate_and_the_search_bound_holds_with_a_turnover():
    """A long grid of lone work-groups (Dot-Product 8192, ceil(4,096 / 132) = 32 an SM in turn):
    the extrapolated rounds equal the full run, each of the 31 turnovers 2 us longer, and the branch and bound's lower bound
    (which charges no turnover) stays below it."""
    from quco.perfmodel.bounds import lower_bound
    work = Work.of(hw.scaled_kernel("Dot-Product", 4096))
    cfg = Config(8192, (1, 1))
    m0 = dataclasses.replace(H, lds_bytes=1 << 40)
    m = dataclasses.replace(m0, turnover=2.0 * H.clock_mhz)
    fast, exact = simulate(m, work, cfg, max_occupancy=1), simulate(m, work, cfg, max_occupancy=1, exact=True)
    assert fast.events < exact.events and fast.cycles == pytest.approx(exact.cycles, rel=1e-6)
    base = simulate(m0, work, cfg, max_occupancy=1, exact=True)
    assert exact.cycles - base.cycles == pytest.approx((-(-4096 // H.cus) - 1) * m.turnover, rel=1e-6)
    assert lower_bound(m, work, cfg, max_occupancy=1) <= exact.cycles
