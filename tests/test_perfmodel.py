"""The performance model against closed forms, Little's law and properties.

Expectations are computed here from the machine's figures (roofline bounds, one slot = no
overlap), never read back from the model.
"""
import dataclasses
import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from quco.gst import tables
from quco.perfmodel import search
from quco.perfmodel.params import const, dram_efficiency, machine
from quco.perfmodel.cu_model import Model
from quco.perfmodel.sim import simulate
from quco.perfmodel.trace import chrome_trace
from quco.perfmodel.work import STATIONARY, STREAMING, Config, Queue, Work, fits

R9 = tables.unpack(tables.load("r9-nano"))
M = machine(R9)  # 64 CUs, 1 GHz, 512 GB/s = 8 B/cycle per CU, 128 FLOPs/cycle per CU


def barrier_code(m, work, descriptors, stores=0):
    """Cycles the consumers' barrier code of one step takes on a CU's pools: every consumer
    wavefront issues step_instr + queue_instr per descriptor (+ store_instr) instructions."""
    instr = m.step_instr + m.queue_instr * descriptors + m.store_instr * stores
    return instr * work.consumer_wavefronts * m.wave_instr / m.pools


def stream(n_queues=1, length=65536, ci=0.01, wgs_per_cu=4, elem=2, wfs=8, out=0, stationary=None):
    qs = tuple(Queue(length, STREAMING, elem) for _ in range(n_queues))
    if stationary:
        qs += (Queue(stationary, STATIONARY, elem),)
    return Work("w", qs, ci, wfs, work_groups=M.cus * wgs_per_cu, output_bytes=out)


def per_cu_rate(m=M, desc_bytes=None):
    """A CU's DRAM share; with `desc_bytes`, at the efficiency of descriptors that size."""
    rate = min(m.dram_bytes_per_cycle / m.cus, const("FABRIC_BYTES_PER_CYCLE"))
    return rate * (dram_efficiency(desc_bytes) if desc_bytes else 1.0)


def test_bandwidth_bound_runs_at_bytes_over_bandwidth():
    w = stream(n_queues=2, length=65536, ci=0.01)
    o = simulate(M, w, Config(1024, (8, 8)))
    bytes_per_cu = 4 * 2 * 65536 * 2
    bound = bytes_per_cu / per_cu_rate(desc_bytes=1024 * 2)  # 2 KiB descriptors
    assert bound <= o.cycles <= 1.05 * bound
    assert o.dram_gbps == pytest.approx(512 * dram_efficiency(2048), rel=0.05)


def test_compute_bound_runs_at_flops_over_throughput():
    w = stream(n_queues=1, length=16384, ci=500.0)
    o = simulate(M, w, Config(256, (4,)))
    flops_per_cu = 4 * 16384 * 2 * 500.0
    bound = flops_per_cu / (2 * R9["simd_muls_per_cycle"])
    assert bound <= o.cycles <= 1.05 * bound
    assert o.compute_util == pytest.approx(1.0, rel=0.05)


def test_one_slot_gives_no_overlap():
    """One work-group per CU, one slot: every tile waits for its transfer, then computes."""
    tile, length, ci = 1024, 16384, 20.0
    w = stream(n_queues=1, length=length, ci=ci, wgs_per_cu=1)
    o = simulate(M, w, Config(tile, (1,)))
    nbytes = tile * 2
    transfer = M.lat_att + M.lat_dram + nbytes / per_cu_rate(desc_bytes=nbytes)
    compute = ci * nbytes / (2 * R9["simd_muls_per_cycle"])
    # the slot's round trip: descriptor issue, consumers' wake-up and barrier instructions,
    # the release the producer sees one LDS latency later
    sync = M.att_issue + 2 * const("LDS_LATENCY") + barrier_code(M, w, 1)
    serial = (length // tile) * (transfer + compute)
    assert serial < o.cycles <= 1.01 * (serial + (length // tile) * sync)
    # two slots overlap the next transfer with this compute: clearly faster
    assert simulate(M, w, Config(tile, (2,))).cycles < 0.8 * o.cycles


@pytest.mark.parametrize("cfg,work", [
    (Config(512, (2, 2)), stream(2, 8192, 0.5)),
    (Config(256, (8,)), stream(1, 65536, 0.25)),
    (Config(512, (2,) * 8 + (4,)), stream(8, 2048, 4.0, stationary=2048)),
])
def test_littles_law_holds_inside_the_model(cfg, work):
    """Throughput x latency = in flight (the model counts a transfer in flight from issue to
    arrival), and what is in flight never exceeds the slots of the resident work-groups."""
    o = simulate(M, work, cfg, exact=True)
    assert o.throughput * o.mean_latency == pytest.approx(o.mean_in_flight, rel=0.02)
    assert 0 < o.mean_in_flight <= o.occupancy * sum(cfg.slots)


def test_same_inputs_same_cycles():
    w = stream(8, 2048, 3.9, stationary=2048)
    a, b = simulate(M, w, Config(512, (2,) * 9)), simulate(M, w, Config(512, (2,) * 9))
    assert a.as_dict() == b.as_dict()


@pytest.mark.parametrize("gpu", ["radeon-530", "r9-nano"])
@pytest.mark.parametrize("cfg,work", [
    (Config(64, (1,)), stream(1, 8192, 0.25, wgs_per_cu=20)),
    (Config(512, (2, 2)), stream(2, 4096, 0.5, wgs_per_cu=17)),
    (Config(256, (2,) * 8 + (1,)), stream(8, 1024, 4.0, stationary=1024, wgs_per_cu=23)),
])
def test_extrapolated_rounds_match_the_full_simulation(gpu, cfg, work):
    m = machine(tables.unpack(tables.load(gpu)))
    fast, full = simulate(m, work, cfg), simulate(m, work, cfg, exact=True)
    assert fast.cycles == pytest.approx(full.cycles, rel=0.005)
    assert fast.events < full.events or not fast.extrapolated


def test_stationary_operand_that_fits_is_loaded_once_per_resident_slot():
    w = stream(1, 4096, 1.0, stationary=4096, wgs_per_cu=6)
    kept = Model(M, w, Config(1024, (2, 4)))       # 4 slots hold all 4 tiles of the operand
    refetched = Model(M, w, Config(1024, (2, 2)))  # 2 slots: a ring, re-fetched by every work-group
    assert [g.resident for g in kept.groups] == [False, True]
    assert [g.resident for g in refetched.groups] == [False, False]
    a, b = kept.run(exact=True), refetched.run(exact=True)
    assert a["transfers"] < b["transfers"]


def test_occupancy_is_bounded_by_lds_barriers_and_wavefronts():
    w = stream(2, 65536, 0.1)
    assert Model(M, w, Config(2048, (4, 4))).occ == 1        # 2 x 4 x 4 KiB = 32 KiB of 64
    assert Model(M, w, Config(512, (2, 2))).occ == 4         # 40 wavefronts / (8 + 1)
    tight = dataclasses.replace(M, barrier_limit=8)
    assert Model(tight, w, Config(512, (2, 2))).occ == 1     # 8 barriers / (2 x 2 x 2)
    with pytest.raises(ValueError):
        Model(M, w, Config(8192, (8, 8)))


def test_noatt_loads_synchronously():
    w = stream(1, 16384, 2.0, wgs_per_cu=1)
    att = simulate(M, w, Config(1024, (4,)))
    noatt = simulate(M, w, Config(1024, (1,)), mode="noatt")
    nbytes = 1024 * 2
    per_tile = M.lat_dram + nbytes / per_cu_rate(desc_bytes=nbytes) + 2.0 * nbytes / (2 * R9["simd_muls_per_cycle"])
    assert noatt.cycles >= 16 * per_tile
    assert att.cycles < noatt.cycles


def test_dvfs_clock_changes_dram_in_cycles():
    low = machine(R9, core_clock_mhz=500)
    assert low.dram_bytes_per_cycle == pytest.approx(2 * M.dram_bytes_per_cycle)
    assert low.lat_l2 == M.lat_l2 and low.lat_dram < M.lat_dram


def test_gst_latencies_are_core_cycles_at_the_nominal_clock():
    # The GST's latencies are core cycles at its core_clock_mhz (QuCo Table II: "cycles, CU
    # round trip"), as the firmware reads them: the MI100's 100/250/300 are 100/250/300 cycles.
    assert (M.lat_att, M.lat_l2, M.lat_dram) == (100, 300, 450)
    mi100 = tables.unpack(tables.load("mi100"))
    assert (mi100["lat_att_cycles"], mi100["lat_l2_cycles"], mi100["lat_dram_cycles"]) == (100, 250, 300)
    m = machine(mi100)
    assert (m.lat_att, m.lat_l2, m.lat_dram) == pytest.approx((100, 250, 300))
    # At 1 GHz the L2 round trip stays 250 core cycles; the 50 cycles beyond it at 1.5 GHz
    # (33.3 ns of DRAM time) become 33.3 cycles.
    low = machine(mi100, core_clock_mhz=1000)
    assert (low.lat_att, low.lat_l2, low.lat_dram) == pytest.approx((100, 250, 250 + 50 / 1.5))
    # The same cycle counts at twice the nominal clock stay the same cycle counts.
    fast = machine(dict(R9, core_clock_mhz=2000))
    assert (fast.lat_att, fast.lat_l2, fast.lat_dram) == pytest.approx((100, 300, 450))


def test_h100_latencies_are_the_measured_round_trips_in_cycles():
    # h100-latency.csv measures ns per dependent step; the preset's cycles at its 1,980 MHz
    # must land inside the measured ranges (rounding to a cycle: 0.51 ns).
    import csv
    from quco.examples import HARDWARE
    rows = list(csv.DictReader((HARDWARE / "h100-latency.csv").open()))
    def ns(method, state):
        v = [float(r["ns_per_dependent_step"]) for r in rows if r["method"] == method and state in r["state"]]
        return min(v), max(v)
    h = tables.unpack(tables.load("h100-sxm"))
    to_ns = 1000.0 / h["core_clock_mhz"]
    lo, hi = ns("plain load", "(L2 hit")
    assert lo - 0.51 <= h["lat_l2_cycles"] * to_ns <= hi
    lo, hi = ns("plain load", "(DRAM)")
    assert lo <= h["lat_dram_cycles"] * to_ns <= hi + 0.51
    # the TMA's part: a tensor load's round trip less a plain one's, at either level
    tma_l2, tma_dram = ns("TMA tensor load", "(L2 hit)"), ns("TMA tensor load", "(DRAM)")
    att_ns = h["lat_att_cycles"] * to_ns
    assert tma_l2[0] - ns("plain load", "(L2 hit")[1] <= att_ns <= tma_l2[1] - ns("plain load", "(L2 hit")[0]
    assert tma_dram[0] - ns("plain load", "(DRAM)")[1] <= att_ns <= tma_dram[1] - ns("plain load", "(DRAM)")[0]


# ---------------------------------------------------------------- properties
works = st.builds(
    lambda n, length, ci, wgs, stat: stream(n, length, ci, wgs_per_cu=wgs, stationary=stat),
    st.integers(1, 4), st.sampled_from([1024, 4096, 16384]), st.sampled_from([0.1, 1.0, 8.0, 60.0]),
    st.integers(1, 6), st.sampled_from([None, 1024, 4096]))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(works, st.sampled_from([64, 256, 1024]), st.integers(1, 4),
       st.sampled_from([1.25, 2.0, 4.0]))
def test_more_bandwidth_or_lower_latency_is_never_slower(work, tile, slots, factor):
    cfg = Config(tile, (slots,) * len(work.queues))
    if not fits(work, cfg, M.lds_bytes, M.barrier_limit):
        return
    base = simulate(M, work, cfg).cycles
    wider = dataclasses.replace(M, dram_bytes_per_cycle=M.dram_bytes_per_cycle * factor)
    nearer = dataclasses.replace(M, lat_dram=M.lat_dram / factor, lat_l2=M.lat_l2 / factor)
    assert simulate(wider, work, cfg).cycles <= base * (1 + 1e-9)
    assert simulate(nearer, work, cfg).cycles <= base * (1 + 1e-9)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(st.builds(lambda n, length, ci, wgs, stat: stream(n, length, ci, wgs_per_cu=wgs, stationary=stat),
                 st.integers(1, 2), st.sampled_from([1024, 4096]), st.sampled_from([0.1, 8.0, 60.0]),
                 st.integers(1, 3), st.sampled_from([None, 1024])),
       st.sampled_from([16384, 32768]))
def test_more_lds_never_makes_the_best_configuration_slower(work, smaller):
    small = machine(R9, lds_bytes=smaller)
    best_small = search.exhaustive(small, R9, work)
    best_big = search.exhaustive(M, R9, work)
    if best_small:
        assert best_big[0].outcome.cycles <= best_small[0].outcome.cycles * (1 + 1e-9)


# ---------------------------------------------------------------- search and trace
def test_exhaustive_search_covers_the_space_and_ranks_it():
    w = stream(8, 2048, 97.5, wgs_per_cu=1, stationary=2048)
    ranked = search.exhaustive(M, R9, w)
    cycles = [r.outcome.cycles for r in ranked]
    assert cycles == sorted(cycles)
    assert all(fits(w, r.config, M.lds_bytes, M.barrier_limit) for r in ranked)
    # by hand: every power-of-two tile 64..8192 x 1..8 slots for the 8 queues x 1..8 for B that fits
    expect = sum(1 for t in (64, 128, 256, 512, 1024, 2048, 4096, 8192) for a in range(1, 9) for b in range(1, 9)
                 if 512 + 8 * ((a * t * 2 + 127) // 128 * 128) + (b * t * 2 + 127) // 128 * 128 <= 65536
                 and 2 * (8 * a + b) <= 128)
    assert len(ranked) == expect
    informed = search.informed(M, R9, w)
    assert 64 <= informed.config.tile <= 256 and set(informed.config.slots) <= {2, 4}
    assert informed.outcome.cycles >= ranked[0].outcome.cycles


def test_ideal_is_a_lower_bound_of_the_searched_space():
    w = stream(2, 8192, 0.5)
    ideal = search.ideal(R9, w)
    assert ideal.outcome.cycles <= search.exhaustive(M, R9, w)[0].outcome.cycles * (1 + 1e-9)


def test_trace_has_one_cu_timeline():
    w = stream(2, 4096, 2.0, wgs_per_cu=2)
    o = simulate(M, w, Config(512, (2, 2)), trace=True)
    doc = json.loads(json.dumps(chrome_trace(o.trace, M.clock_mhz, "t")))
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["name"].split(" ")[0] for e in spans}
    assert {"compute", "barriers", "q0+1"} <= names
    computes = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if e["name"].startswith("compute"))
    assert len(computes) == 2 * (4096 // 512)  # 2 work-groups x 8 steps (both queues per step)
    # the SIMDs are shared: compute spans never overlap
    assert all(b[0] >= a[1] - 1e-9 for a, b in zip(computes, computes[1:]))
    assert max(e["ts"] + e["dur"] for e in spans) == pytest.approx(o.cycles / M.clock_mhz)
    assert math.isfinite(o.cycles)
