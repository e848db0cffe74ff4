"""The performance model's data movement and memory system against closed forms: L2-bound,
DRAM-efficiency-bound and barrier-bound cases, the pass extrapolation, and three rules a
planted bug would break (the producer's wavefront, the DRAM share, ties).

Expectations are computed here from the machine's figures, never read back from the model.
"""
import dataclasses

import pytest

from conftest import EXAMPLES_DIR
from quco.gst import tables
from quco.kernel.format import KernelError, load_kernel, parse_kernel
from quco.perfmodel import params, search
from quco.perfmodel.params import const, dram_efficiency, machine
from quco.perfmodel.residency import occupancy
from quco.perfmodel.sim import simulate
from quco.perfmodel.sim_data import Outcome
from quco.perfmodel.work import STATIONARY, STREAMING, Config, Queue, Work

R9 = tables.unpack(tables.load("r9-nano"))
M = machine(R9)  # 64 CUs, 8 B/cycle of DRAM and 16 B/cycle of L2 (16 slices x 64 B) per CU


def barrier_code(m, work, descriptors, stores=0):
    """Cycles the consumers' barrier code of one step takes on a CU's pools: every consumer
    wavefront issues step_instr + queue_instr per descriptor (+ store_instr) instructions."""
    instr = m.step_instr + m.queue_instr * descriptors + m.store_instr * stores
    return instr * work.consumer_wavefronts * m.wave_instr / m.pools


def l2_rate(m=M, cus=None):
    return min(m.l2_bytes_per_cycle / (cus or m.cus), const("FABRIC_BYTES_PER_CYCLE"))


def test_re_read_data_that_fits_the_l2_runs_at_the_l2_bandwidth():
    """One queue re-read 64 times (the same 8 KiB each pass): 63 passes hit in the L2, so
    the CU is bound by its share of the L2 slices, not by DRAM."""
    passes, length = 64, 4096
    w = Work("l2", (Queue(length, STREAMING, 2, passes=passes, fresh=1),), 0.01, 8, work_groups=M.cus * 2)
    o = simulate(M, w, Config(1024, (8,)), exact=True)
    per_cu = 2 * passes * length * 2
    bound = per_cu / l2_rate()
    assert bound <= o.cycles <= 1.05 * bound
    assert o.l2_hit == pytest.approx((passes - 1) / passes)
    # the same bytes, every pass new data: DRAM-bound, at most half the rate
    fresh = dataclasses.replace(w, queues=(Queue(length, STREAMING, 2, passes=passes),))
    assert simulate(M, fresh, Config(1024, (8,))).cycles >= per_cu / (M.dram_bytes_per_cycle / M.cus)


def test_re_read_data_that_overflows_the_l2_misses_in_proportion():
    """Resident work-groups x bytes per pass over the L2's capacity: the hit fraction is
    capacity / footprint."""
    length = 65536  # 128 KiB per pass per work-group, 4 at once on 64 CUs = 32 MiB
    w = Work("big", (Queue(length, STREAMING, 2, passes=4, fresh=1),), 0.01, 8, work_groups=M.cus * 4)
    o = simulate(M, w, Config(2048, (2,)), exact=True)
    footprint = M.cus * o.occupancy * length * 2
    assert o.l2_hit == pytest.approx(3 / 4 * M.l2_bytes / footprint)


def test_small_descriptors_stream_at_the_dram_efficiency_of_their_size(monkeypatch):
    """64-element fp16 tiles are 128-byte descriptors: bound by bytes / (share x efficiency).
    With a row overhead of 256 bytes (the shipped, fitted one is smaller) they stream at a third."""
    monkeypatch.setitem(params.CONSTANTS, "DRAM_ROW_OVERHEAD_BYTES", (256,) + params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"][1:])
    assert dram_efficiency(128) == pytest.approx(1 / 3)
    w = Work("small", (Queue(65536, STREAMING, 2),) * 2, 0.01, 8, work_groups=M.cus * 4)
    o = simulate(M, w, Config(64, (8, 8)))
    per_cu = 4 * 2 * 65536 * 2
    bound = per_cu / (M.dram_bytes_per_cycle / M.cus * dram_efficiency(128))
    assert bound <= o.cycles <= 1.05 * bound
    assert dram_efficiency(128) < dram_efficiency(8192) < 1


def test_phases_drain_the_queues_and_expose_the_round_trip():
    """One tile per pass and a drain barrier after every pass: nothing overlaps, each phase
    costs the descriptor, the ATT and DRAM round trips, the transfer, the consumers' barrier
    instructions and wake-up, the compute and the drain."""
    passes, tile, ci = 16, 1024, 8.0
    q = Queue(tile, STREAMING, 2, passes=passes)
    w = Work("phased", (q,), ci, 8, work_groups=M.cus, phases=passes)
    o = simulate(M, w, Config(tile, (4,)), exact=True)
    nbytes = tile * 2
    transfer = nbytes / (M.dram_bytes_per_cycle / M.cus * dram_efficiency(nbytes))
    compute = ci * nbytes / (2 * R9["simd_muls_per_cycle"])
    serial = passes * (M.lat_att + M.lat_dram + transfer + compute)
    sync = M.att_issue + barrier_code(M, w, 1) + 2 * const("LDS_LATENCY")
    assert serial < o.cycles <= 1.01 * (serial + passes * sync)
    # without the drains the 4 slots overlap the next transfers with this compute
    free = simulate(M, dataclasses.replace(w, phases=1), Config(tile, (4,)), exact=True)
    assert free.cycles < 0.5 * o.cycles


@pytest.mark.parametrize("cfg", [Config(256, (2,) * 4 + (2,)), Config(512, (4,) * 4 + (8,)), Config(64, (3,) * 5)])
def test_extrapolated_passes_match_the_full_simulation(cfg):
    rows = Queue(1024, STREAMING, 2, passes=128, fresh=1)
    col = Queue(1024, STATIONARY, 2, passes=128, sharers=128)
    w = Work("mm", (rows,) * 4 + (col,), 0.0, 7, work_groups=128, output_bytes=512, flops=2 * 4 * 1024 * 128)
    fast, full = simulate(M, w, cfg), simulate(M, w, cfg, exact=True)
    assert fast.extrapolated and fast.events < full.events
    assert fast.cycles == pytest.approx(full.cycles, rel=0.005)


# ---------------------------------------------------------------- planted-bug classes (issue #24)
def test_the_producer_wavefront_counts_in_occupancy():
    """4 consumers + 1 producer = 5 wavefronts a work-group: 40 / 5 = 8 at once (not 10)."""
    w = Work("w", (Queue(4096, STREAMING, 2),), 0.1, 4, work_groups=M.cus * 16)
    cfg = Config(64, (1,))
    assert occupancy(M, w, cfg) == M.max_waves // 5 == 8
    assert occupancy(M, w, cfg, "noatt") == M.max_waves // 4 == 10  # NoATT has no producer


def test_the_dram_share_is_divided_among_the_cus_that_get_work():
    """16 work-groups on 64 CUs: 16 CUs share the whole bandwidth (32 B/cycle each)."""
    w = Work("w", (Queue(65536, STREAMING, 2),) * 2, 0.01, 8, work_groups=16)
    o = simulate(M, w, Config(2048, (4, 4)))
    per_cu = 2 * 65536 * 2
    bound = per_cu / min(M.dram_bytes_per_cycle / 16 * dram_efficiency(4096), l2_rate(cus=16))
    assert bound <= o.cycles <= 1.1 * bound


def test_exact_ties_rank_the_larger_tile_first(monkeypatch):
    same = Outcome(1000.0, 1000.0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    monkeypatch.setattr(search, "evaluate", lambda *a, **k: same)
    w = Work("w", (Queue(4096, STREAMING, 2),), 1.0, 7)
    ranked = search.rank(M, w, [Config(64, (2,)), Config(128, (2,)), Config(128, (1,)), Config(256, (4,))])
    assert [r.config for r in ranked] == [Config(256, (4,)), Config(128, (1,)), Config(128, (2,)), Config(64, (2,))]


# ---------------------------------------------------------------- the kernels' structure
def test_matrix_matrix_moves_b_per_column_and_re_reads_a():
    k = load_kernel(EXAMPLES_DIR / "matrix-matrix.json")
    w = Work.of(k)
    # of the movement the unit sees each queue's passes (the record's field, for quco+) and nothing else
    assert k.record() == dataclasses.replace(k, movement=[(p, 1, 1) for p, _, _ in k.movement]).record()
    assert k.record() != dataclasses.replace(k, movement=[]).record()
    assert w.passes == 128 and [q.fresh_passes for q in w.queues] == [1] * 8 + [128]
    assert w.moved_bytes() == 128 * 9 * 2048 * 2
    assert w.flops_per_byte == pytest.approx(2 * 8 * 2048 * 128 / (128 * 9 * 2048 * 2))


def test_split_k_and_batches_follow_from_the_files():
    r = Work.of(load_kernel(EXAMPLES_DIR / "matrix-matrix-reduction.json"))
    assert (r.split_k, r.work_groups, r.pass_length(0)) == (2, 256, 512)
    b = Work.of(load_kernel(EXAMPLES_DIR / "batched-matrix-matrix.json"))
    assert (b.phases, b.passes, b.work_groups) == (4, 16, 128)
    assert [b.queues[0].is_fresh(p) for p in range(8)] == [True, False, False, False] * 2


def test_movement_fields_round_trip_and_are_checked():
    doc = {"name": "k", "compute_intensity": 2.0, "grid": {"work_groups": 8, "phases": 2},
           "queues": [{"type": "streaming", "length": 256, "elem_size": 2, "passes": 4, "fresh_passes": 2},
                      {"type": "stationary", "length": 256, "elem_size": 2, "passes": 4, "shared_by": 8}]}
    k = parse_kernel(doc)
    assert k.movement == [(4, 2, 0), (4, 0, 8)] and k.phases == 2
    assert parse_kernel(k.document()) == k
    assert parse_kernel({**doc, "queues": [{**q, "fresh_passes": 1, "shared_by": 1} for q in doc["queues"]],
                         "grid": {"work_groups": 8}}).record() == k.record()  # the record carries passes only
    assert parse_kernel({**doc, "queues": [{**q, "passes": 1, "fresh_passes": 1, "shared_by": 1} for q in doc["queues"]],
                         "grid": {"work_groups": 8}}).record() != k.record()
    bad = {**doc, "queues": [{**doc["queues"][0], "passes": 3}, doc["queues"][1]]}
    with pytest.raises(KernelError, match=r"^kernel: queues\[0\].passes: 3 does not divide the work-group's 4 passes"
                       r"(.|\n)*\nkernel: queues\[0\].fresh_passes: 2 does not divide its passes \(3\)"):
        parse_kernel(bad)
    with pytest.raises(KernelError, match=r"grid.phases: 3 does not divide the work-group's 4 passes"):
        dataclasses.replace(k, phases=3)  # a Kernel built in Python obeys the same rule
    with pytest.raises(KernelError, match=r"queues\[0\].passes: 0 is out of range"):
        parse_kernel({**doc, "queues": [{**doc["queues"][0], "passes": 0}]})


def test_config_parse_reads_labels():
    w = Work.of(load_kernel(EXAMPLES_DIR / "matrix-matrix.json"))
    assert Config.parse(w, "512/2+4") == Config(512, (2,) * 8 + (4,))
    assert Config.parse(w, "512 / 2") == Config(512, (2,) * 9)
    assert Config.parse(w, Config(256, (1,) * 8 + (3,)).label(w)) == Config(256, (1,) * 8 + (3,))
    for bad in ("512", "x/2", "512/2+3+4"):
        with pytest.raises(ValueError, match="512/2"):
            Config.parse(w, bad)


def test_fits_exactly_at_the_lds_and_barrier_limits():
    """A configuration fits when header + queue blocks <= the LDS and its barriers <= the limit,
    both bounds included (bench/mutation.py: `or`, `-` and `<` variants survived)."""
    from quco.perfmodel.work import barriers, fits, meta_bytes, queue_bytes
    w = Work.of(load_kernel(EXAMPLES_DIR / "matrix-matrix.json"))
    cfg = Config.parse(w, "512/2")
    need, bars = meta_bytes(len(w.queues)) + queue_bytes(w, cfg), barriers(cfg)
    assert need > meta_bytes(len(w.queues)) > 0 and bars > 0
    assert fits(w, cfg, need, bars)
    assert not fits(w, cfg, need - 1, bars) and not fits(w, cfg, need, bars - 1)
