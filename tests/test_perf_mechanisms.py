"""The mechanisms issue #29 added to the performance model, each against a closed form, and
the planted-bug classes of issue #28 part 5 (each test fails when its bug is planted).

Closed forms are computed here from the machine's figures, not from the model's code:
issue-bound (the CU's pools), chain-bound (one work-group's dependent instructions),
occupancy-bound (LDS, reserved bytes, barriers in the LDS), DRAM-bound at the sustained rate,
and the grid's whole waves plus the launch."""
from __future__ import annotations

import dataclasses
import math

import pytest

from quco.gst import tables
from quco.perfmodel.memory import hit_fractions
from quco.perfmodel.params import const, description, machine
from quco.perfmodel.residency import occupancy
from quco.perfmodel.cu_model import Model
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import STATIONARY, STREAMING, Config, Queue, Work, operands_of

R9 = tables.unpack(tables.load("r9-nano"))
H100 = tables.unpack(tables.load("h100-sxm"))
M = machine(R9)
H = machine(H100)


def per_step_code(m, work, descs, stores=0):
    """Issue cycles of one step's barrier code on a CU: waves x instructions x wave_instr / pools."""
    instrs = m.step_instr + m.queue_instr * descs + m.store_instr * stores
    return work.consumer_wavefronts * instrs * m.wave_instr / min(work.consumer_wavefronts, m.pools), instrs


def stream(n, length=8192, wgs=None, m=H, out=0, names=None):
    q = Queue(length, STREAMING, 2)
    return Work("s", (q,) * n, 0.0, 7, work_groups=wgs or m.cus * 64, output_bytes=out,
                operands=operands_of(names) if names else ())


# ---------------------------------------------------------------- the GPU's description
def test_each_preset_describes_its_gpu():
    """Architecture constants come from the GPU's preset, not one table for every GPU."""
    assert (M.waves_per_pool, M.wave_instr, M.att_box_rows) == (10, 4.0, 1)
    assert (H.waves_per_pool, H.wave_instr, H.att_box_rows) == (16, 1.0, 256)
    assert H.max_waves == 64 and M.max_waves == 40
    assert (H.code_on_pools, M.code_on_pools) == (1, 0)  # single issue vs GCN's issue by type
    assert H.l2_bytes == 80 * 640 * 1024 and M.l2_bytes == 16 * 256 * 1024
    # sustained DRAM: the H100's measured copy ceiling, 3,005 of 3,350 GB/s
    assert H.dram_bytes_per_cycle * H.clock_mhz == pytest.approx(3_350_000 * 0.897)
    assert description("no such GPU")["waves_per_pool"] == 10  # GCN's, stated in docs


# ---------------------------------------------------------------- issue- and chain-bound
@pytest.mark.parametrize("n_queues", [1, 2, 4])
def test_issue_bound_small_tiles_run_at_the_pools_rate(n_queues):
    """64-element tiles, 8 slots, 8 work-groups resident: every step costs the CU its barrier
    code on the pools (waves x instructions / pools), whatever the slots: the ceiling the
    H100 shows for small tiles."""
    w = stream(n_queues)
    cfg = Config(64, (8,) * n_queues)
    o = simulate(H, w, cfg)
    assert o.occupancy == 8
    code, _ = per_step_code(H, w, n_queues)
    wgs = math.ceil(w.work_groups / H.cus)
    bound = wgs * ((8192 // 64) * code + stage_code(H, w, 8))
    # (to the rounding of summed floats: the full run, and the extrapolated one, equal it)
    assert bound * (1 - 1e-12) <= o.cycles - H.launch <= 1.03 * bound
    # more slots cannot lift it (beyond the stages they cost)
    four = simulate(H, w, Config(64, (4,) * n_queues)).cycles
    assert four - wgs * stage_code(H, w, 4) == pytest.approx(o.cycles - wgs * stage_code(H, w, 8), rel=0.02)


def stage_code(m, work, slots):
    """Issue cycles of a work-group's pipeline set-up on a CU: stage_instr a wavefront per stage."""
    return (m.code_on_pools * slots * m.stage_instr * work.consumer_wavefronts * m.wave_instr
            / min(work.consumer_wavefronts, m.pools))


def test_each_slot_costs_issue_bound_work_groups_their_stage_setup():
    """The per-stage cost, issue-bound: 64-element tiles of a short pass (128 steps a
    work-group, the H100's Dot-Product), 8 resident work-groups whose pools are busy: each slot
    more adds stage_instr x waves x wave_instr / pools cycles per work-group of the busiest CU
    (the measured +17 us a slot of 32,768 work-groups), 8 slots against 4 within 3%."""
    w = stream(2)
    wgs = math.ceil(w.work_groups / H.cus)
    four, eight = (simulate(H, w, Config(64, (s, s))).cycles for s in (4, 8))
    expect = wgs * (stage_code(H, w, 8) - stage_code(H, w, 4))
    assert expect > 0.02 * four  # the mechanism is visible here
    assert eight - four == pytest.approx(expect, rel=0.03)
    # without it, the slots cost nothing here
    h0 = dataclasses.replace(H, stage_instr=0.0)
    assert simulate(h0, w, Config(64, (8, 8))).cycles == pytest.approx(simulate(h0, w, Config(64, (4, 4))).cycles,
                                                                       rel=0.01)


def test_stage_setup_hides_under_the_first_round_trip_and_costs_gcn_nothing():
    """One work-group per CU: its set-up (8 stages, 8 x 78.7 x 1.75 = 1,102 cycles) runs while
    its first tiles are on the way (ATT + DRAM round trip, 1,020 cycles), so at most the
    difference shows; on GCN (stage_instr 0, and code_on_pools 0) slots cost no set-up."""
    w = stream(2, wgs=H.cus)
    h0 = dataclasses.replace(H, stage_instr=0.0)
    cfg = Config(64, (8, 8))
    setup = stage_code(H, w, 8)
    extra = simulate(H, w, cfg).cycles - simulate(h0, w, cfg).cycles
    assert abs(extra) <= max(0.0, setup - (H.lat_att + H.lat_dram)) + 100  # of a 128-step run's 73,000
    assert M.stage_instr == 0.0 and stage_code(dataclasses.replace(M, stage_instr=50.0), w, 8) == 0.0


def test_chain_bound_steps_on_an_idle_cu():
    """One work-group per CU: the pools are idle, a step takes the chain of its instructions
    (instructions x dep_instr), 2x the issue time here."""
    w = stream(2, wgs=H.cus)
    o = simulate(H, w, Config(64, (8, 8)))
    _, instrs = per_step_code(H, w, 2)
    bound = (8192 // 64) * instrs * H.dep_instr
    assert bound <= o.cycles - H.launch <= bound + 3 * (H.lat_att + H.lat_dram)


def test_rows_of_one_operand_share_a_box_descriptor():
    """Eight rows of one matrix (one kernel.json entry with count) take one TMA box on the
    H100 and eight descriptors on QuCo's ATT; eight separate operands take eight."""
    rows = stream(8, names=[f"A[{i}]" for i in range(8)])
    apart = stream(8, names=[f"a{i}" for i in range(8)])
    cfg = Config(64, (8,) * 8)
    t_rows, t_apart = (simulate(H, w, cfg).cycles - H.launch for w in (rows, apart))
    wgs = math.ceil(rows.work_groups / H.cus)
    steps, setup = wgs * (8192 // 64), wgs * stage_code(H, rows, 8)
    assert t_rows == pytest.approx(steps * per_step_code(H, rows, 1)[0] + setup, rel=0.03)
    assert t_apart == pytest.approx(steps * per_step_code(H, apart, 8)[0] + setup, rel=0.03)


# ---------------------------------------------------------------- occupancy-bound
def test_lds_reserved_and_barriers_in_lds_limit_residency():
    """Hopper: each resident block costs 1 KB beyond its queues, and its mbarriers (8 B each,
    2 per slot) live in shared memory; the per-CU barrier count does not apply."""
    w = stream(2, length=65536)
    cfg = Config(8192, (3, 3))                      # 2 x 3 x 16 KiB = 96 KiB a work-group
    from quco.perfmodel.work import meta_bytes
    per_wg = 2 * 3 * 8192 * 2 + 1024 + 8 * 2 * 6
    assert occupancy(H, w, cfg) == (H.lds_bytes - meta_bytes(2)) // per_wg == 2
    small = Config(64, (8, 8))                      # 32 barriers: 4 a CU on a 128-barrier count
    assert occupancy(H, w, small) == H.max_waves // 8 == 8
    assert occupancy(M, w, small) == M.barrier_limit // 32


def test_slots_cost_when_they_keep_work_groups_out():
    """Occupancy-bound: the same tile with more slots than two work-groups' LDS allows runs
    with one, and the grid takes longer (the H100's Dot-Product 8192/5 vs 8192/3)."""
    w = stream(2, length=65536, wgs=H.cus * 16)
    two, one = simulate(H, w, Config(8192, (3, 3))), simulate(H, w, Config(8192, (5, 5)))
    assert (two.occupancy, one.occupancy) == (2, 1)
    assert one.cycles > 1.05 * two.cycles


# ---------------------------------------------------------------- DRAM, waves, launch
def test_dram_bound_at_the_sustained_rate_with_launch():
    """Large tiles, many work-groups: bytes / sustained bandwidth, plus the launch."""
    w = stream(2, length=65536, wgs=H.cus * 32)
    o = simulate(H, w, Config(4096, (4, 4)))
    total = w.work_groups * w.moved_bytes()
    streams = H.cus * o.occupancy * 2       # two operands a resident work-group, no results
    rate = H.dram_bytes_per_cycle * (4096 * 2 / (4096 * 2 + 16)) / (1 + H.dram_stream_cost * streams)
    bound = H.launch + total / rate
    assert bound <= o.cycles <= 1.01 * bound


def test_fewer_concurrent_streams_stream_faster():
    """The same bytes with one resident work-group a CU (8192 x 7 slots) against three
    (8192 x 2): the DRAM rate differs by (1 + c x 3 x 2 x 132) / (1 + c x 1 x 2 x 132)."""
    w = stream(2, length=1 << 20, wgs=H.cus * 3)   # long passes: the fill is noise
    one, three = simulate(H, w, Config(8192, (7, 7))), simulate(H, w, Config(8192, (2, 2)))
    assert (one.occupancy, three.occupancy) == (1, 3)
    c = H.dram_stream_cost
    assert c > 0
    assert (three.cycles - H.launch) / (one.cycles - H.launch) == pytest.approx(
        (1 + c * 3 * 2 * H.cus) / (1 + c * 2 * H.cus), rel=0.01)


@pytest.mark.parametrize("mode, serial", [("att", True), ("att", False), ("noatt", False)])
def test_a_shared_operands_tile_mixes_its_round_trips_in_a_serial_step_only(mode, serial):
    """An operand that 4 work-groups read (fitting the L2: hit h = 1 - 1/4). In a serial step
    (Config.serial: the measured unpipelined loop) its tile is found whole in the L2 or brought
    whole from DRAM: the expected round trip h x L2 + (1 - h) x DRAM. Elsewhere (pipelined ATT,
    NoATT) the tile arrives with its last line: a DRAM round trip (the whole-tile rule in every
    step was evaluated and not shipped: docs/perf-model-not-shipped.md, "A shared operand's tile,
    whole, in every step").
    One work-group a CU, one slot, 128-byte tiles: each step waits for its tile on idle pipes,
    so against the same operand read by nobody else (every tile a DRAM round trip) a step is
    shorter by the two round trips' difference. R9 Nano, per CU 8 B/cycle of DRAM at the
    128-byte descriptor's efficiency 128 / (128 + 16) and 16 B/cycle of L2; own: 450 + 128 B of
    DRAM (18) = 468; mixed: 0.75 x (300 + 96 B of L2 (6)) + 0.25 x (450 + 32 B of DRAM (4.5)) =
    343.1, 124.9 a step shorter; last line: 450 + 128 B of L2 (8) = 458, 10 a step shorter."""
    n, h, tile_bytes = 256, 0.75, 128
    assert M.dram_stream_cost == 0 and M.att_inflight == 0  # (R9 Nano: no stream cost, no limit)
    dram_rate = M.dram_bytes_per_cycle / M.cus * tile_bytes / (tile_bytes + const("DRAM_ROW_OVERHEAD_BYTES"))
    l2_rate = M.l2_bytes_per_cycle / M.cus
    assert l2_rate < const("FABRIC_BYTES_PER_CYCLE")  # the L2 share, not the fill path, sets a hit's time
    own_trip = M.lat_dram + tile_bytes / dram_rate
    mixed = (h * (M.lat_l2 + h * tile_bytes / l2_rate)
             + (1 - h) * (M.lat_dram + (1 - h) * tile_bytes / dram_rate))
    last_line = M.lat_dram + max((1 - h) * tile_bytes / dram_rate, tile_bytes / l2_rate)

    def run(sharers):
        w = Work("x", (Queue(n * 64, STREAMING, 2, sharers=sharers),), 0.0, 7, work_groups=M.cus)
        return simulate(M, w, Config(64, (1,), serial=serial), mode=mode, exact=True)
    shared, own = run(4), run(1)
    assert (shared.l2_hit, own.l2_hit) == (pytest.approx(h), 0.0)
    assert (own.cycles - shared.cycles) / n == pytest.approx(own_trip - (mixed if serial else last_line), rel=0.01)
    # either way the DRAM moved the missing quarter of the bytes only (both parts reserve the pipes)
    assert shared.dram_gbps * shared.ns == pytest.approx((1 - h) * own.dram_gbps * own.ns, rel=1e-9)


def test_a_grid_of_256_on_132_cus_runs_two_waves_worth():
    """The busiest CU runs ceil(256 / 132) = 2 work-groups; DRAM is shared by the whole GPU,
    so its share is that of 2 of 256 work-groups (not 1/132): the time is the GPU's bytes at
    the sustained rate."""
    w = stream(2, length=65536, wgs=256)
    m = model_of(w)
    assert m.wgs == 2 and m.share_cus == 128


def model_of(w, cfg=Config(4096, (4, 4))):
    return Model(H, w, cfg)


# ---------------------------------------------------------------- planted-bug classes (issue #28 part 5)
def test_the_shared_operands_own_bytes_count_in_the_l2_footprint():
    """A shared operand (x of Matrix-Vector) that fits next to the private data only without
    its own bytes: its hit fraction is (1 - 1/sharers) x L2 / (its bytes + the private ones)."""
    small_l2 = dataclasses.replace(M, l2_bytes=1 << 20)
    priv = Queue(16384, STREAMING, 2)                          # 32 KiB a work-group
    shared = Queue(262144, STATIONARY, 2, sharers=64)          # 512 KiB, read by all 64
    w = Work("mv", (priv, shared), 1.0, 7, work_groups=64)
    concurrent = 16
    private = concurrent * (16384 + 262144) * 2
    hits = hit_fractions(small_l2, w, concurrent)
    unique = 262144 * 2
    assert hits[1][0] == pytest.approx((1 - 1 / 64) * min(1.0, small_l2.l2_bytes / (unique + private)))
    assert hits[1][0] < (1 - 1 / 64) * min(1.0, small_l2.l2_bytes / private) or private >= small_l2.l2_bytes


def test_the_write_back_counts_in_the_dram_bytes():
    """Elementwise writes half as much as it reads: achieved GB/s x time = reads + writes."""
    w = stream(2, length=65536, wgs=H.cus * 8, out=65536 * 2)
    o = simulate(H, w, Config(4096, (4, 4)))
    total = w.work_groups * (w.moved_bytes() + w.output_bytes)
    assert o.dram_gbps * o.ns == pytest.approx(total, rel=0.01)


def test_the_barrier_code_is_paid_per_descriptor_not_per_step():
    """Issue-bound steps of 1 and of 4 separate queues differ by 3 x queue_instr per wave."""
    one, four = stream(1), stream(4)
    t1 = simulate(H, one, Config(64, (8,))).cycles - H.launch
    t4 = simulate(H, four, Config(64, (8,) * 4)).cycles - H.launch
    steps = math.ceil(one.work_groups / H.cus) * (8192 // 64)
    expected = steps * (per_step_code(H, four, 4)[0] - per_step_code(H, one, 1)[0])
    assert t4 - t1 == pytest.approx(expected, rel=0.05)


def test_pass_extrapolation_over_a_remainder_of_partial_periods():
    """Rows new once every 8 passes over 88 (period 8) on slow DRAM, so a pass with new rows
    costs far more than a re-read one: the passes left after the short run must be whole
    periods (the short run absorbs the remainder), or the extrapolation counts the wrong mix
    (planted: 3-9% off). The extrapolated time equals the full run. (88 passes: the two runs
    of the pass window, warm-up included, must cost less than the whole for it to apply.)"""
    slow = dataclasses.replace(M, dram_bytes_per_cycle=M.dram_bytes_per_cycle / 8)
    rows = Queue(2048, STREAMING, 2, passes=88, fresh=11)
    w = Work("p8", (rows,) * 2, 0.0, 7, work_groups=64, flops=2 * 2 * 2048 * 88)
    for cfg in (Config(256, (2, 2)), Config(512, (4, 4))):
        fast, full = simulate(slow, w, cfg), simulate(slow, w, cfg, exact=True)
        assert fast.extrapolated
        assert fast.cycles == pytest.approx(full.cycles, rel=0.002)


def test_split_k_pays_the_reductions_dram_round_trip():
    """After the grid, the reduction reads every partial result back and writes the sums:
    lat_dram + (1 + 1/split_k) x partial bytes / bandwidth, on top of the grid."""
    q = Queue(1024, STREAMING, 2)
    w = Work("sk", (q,) * 2, 1.0, 7, work_groups=128, output_bytes=4096, split_k=2)
    model = Model(M, w, Config(256, (2, 2)))
    t = model.run()
    o = model.outcome(t)
    partials = 128 * 4096
    assert o.cycles - t["cycles"] - M.launch == pytest.approx(
        M.lat_dram + (1 + 1 / 2) * partials / M.dram_bytes_per_cycle)


# ---------------------------------------------------------------- cost independent of the grid
@pytest.mark.parametrize("cfg", [Config(1024, (4, 4)), Config(64, (8, 8)), Config(8192, (3, 3))])
def test_per_work_group_time_and_cost_do_not_depend_on_the_grid(cfg):
    """Steady state plus first and last waves: the time one more round of work-groups adds is
    the same at 16 and at 256 work-groups per CU (2,112 and 33,792 on 132 SMs) within 0.5%, and
    the simulation's events stop growing once the steady rounds are extrapolated. (Below 8 a
    CU the resident work-groups, and with them the DRAM streams, change with the grid.)"""
    def run(n):
        return simulate(H, stream(2, wgs=H.cus * n), cfg)
    a, b, c, d = run(8), run(16), run(128), run(256)
    small, large = (b.cycles - a.cycles) / (8 * H.cus), (d.cycles - c.cycles) / (128 * H.cus)
    assert small == pytest.approx(large, rel=0.005)
    assert d.events == c.events and d.extrapolated


@pytest.mark.parametrize("m", [H, M], ids=["h100", "r9-nano"])
@pytest.mark.parametrize("cfg", [Config(64, (8, 8)), Config(128, (4, 4)), Config(256, (3, 3)), Config(64, (1, 1))])
@pytest.mark.parametrize("per_cu", [2, 12])
def test_long_passes_extrapolated_over_steps_match_the_full_run(m, cfg, per_cu):
    """A work-group's long single pass is simulated over STEP_RUNS steps and extrapolated:
    equal to the full run within 0.5%, with fewer events (a 16/32-step window was 5% off at
    512/7 with two work-groups a CU: the window must cover the fill)."""
    w = stream(2, length=65536, wgs=m.cus * per_cu, out=65536 * 2)
    fast, full = simulate(m, w, cfg), simulate(m, w, cfg, exact=True)
    assert fast.extrapolated and fast.events < full.events / 1.5
    assert fast.cycles == pytest.approx(full.cycles, rel=0.005)
    assert fast.dram_gbps == pytest.approx(full.dram_gbps, rel=0.005)


def test_the_ideal_run_cut_short_keeps_its_slots():
    """The ideal run's slots hold whole passes: cut to a step window its queues keep them (a
    window that gave it slots for the cut pass only changed what fits: ElementwiseK's Fig. 6
    fell to 0.72 of ideal), so the Ideal is the full run's (the step windows themselves:
    tests/test_perfmodel_speed.py)."""
    from quco.perfmodel import search
    w = stream(1, length=65536, wgs=M.cus * 4, m=M)
    r = search.ideal(R9, w)
    full = simulate(machine(R9, unlimited_lds=True), w, r.config, "ideal", exact=True,
                    max_occupancy=r.outcome.occupancy)
    assert r.outcome.cycles == pytest.approx(full.cycles, rel=1e-9)


def test_gcn_barrier_code_costs_its_chain_not_the_simds():
    """On GCN the barrier code issues beside the VALU: a compute-bound step costs the compute
    on the shared SIMDs, and the code only when its chain is longer. Two work-groups sharing
    the SIMDs with heavy compute: the same time with the code counted or not (planted on the
    pools: +code per step)."""
    w = Work("c", (Queue(16384, STREAMING, 2),) * 2, 60.0, 7, work_groups=M.cus * 2)
    cfg = Config(1024, (4, 4))
    with_code = simulate(M, w, cfg)
    without = simulate(dataclasses.replace(M, queue_instr=0.0), w, cfg)
    assert with_code.cycles == pytest.approx(without.cycles, rel=0.002)  # chains hidden but at the ends
    on_pools = simulate(dataclasses.replace(M, code_on_pools=1), w, cfg)
    assert on_pools.cycles > with_code.cycles * 1.005
