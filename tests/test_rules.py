"""One test per argued rule of docs/algorithm.md (issue #30), each on the firmware (fuzz.compare
holds it to the reference model bit for bit) and each on a case where the rule planted wrong
gives another pick. The expected values are worked by hand in the docstrings."""
import numpy as np
import pytest

from quco.gst import abi, tables
from quco.host import fuzz, reference
from quco.kernel.format import pack_record

R9_NANO = "r9-nano"


def record(queues, ci_class=abi.CI_CLASS_MEDIUM, wfs=7, **hdr):
    header = dict(magic=abi.LAUNCH_MAGIC, compute_intensity=0.0, ci_class=ci_class, consumer_wavefronts=wfs, **hdr)
    # a queue is (length, type, elem_size) or (length, type, elem_size, passes)
    return pack_record(header, [dict(zip(("length", "type", "elem_size", "passes"), q)) for q in queues])


def pick(devices, gst, rec):
    res = fuzz.compare(devices(gst), rec)
    assert res.ok, res.message
    return res.tile, [q.slots for q in res.queues]


def small_gst(**changes) -> bytes:
    """A small GPU: 4 CUs at 1 GHz, 16 KiB LDS, the R9 Nano's latencies (850 cycles in all) and a
    CU's share of 32 GB/s = 8 B per cycle, as on the R9 Nano (cpb = 1000 x 4 / 32000 = 0.125)."""
    g = tables.unpack(tables.load(R9_NANO))
    g.update(num_cus=4, dram_bw_mbps=32_000, lds_bytes=16384)
    g.update(changes)
    return tables.pack(g)


def test_the_scan_on_a_small_gst_by_hand(devices):
    """Algorithm 2 with cpb = 0.125, lat = 850, E = 2, Wfs = 7 (sched 448, overlap 4), cost =
    lat / T (COST_A = COST_B = 0): weighted = procTime x (850 / T) / (850 + 0.3125 T).
    T = 512: proc 1.714, weighted 1.714 x 1.660 / 1010 = 0.002818; 1024: proc 7.43, 7.43 x 0.830
    / 1170 = 0.005273; 2048: proc 18.86, 18.86 x 0.415 / 1490 = 0.005253. Peak 1024 (by 0.4%);
    medium CI keeps it; the 8,192-element queue allows it; Little: memTime of the step (2 queues,
    4 B) 850 + 1024 x 0.625 = 1490, / 7.43 / 16 = 12.5 -> 8 -> x 32 / 4 CUs (no cut) -> 8; 2 x 8
    x 2 KiB = 32 KiB > 16 KiB - 128 B: the LDS bound halves to 512 (Little 16.1 -> 8, 16 KiB,
    still too much) and 256 (Little 2130 / 0.571 / 16 = 233 -> 8: 2 x 8 x 512 B = 8 KiB fits)."""
    assert pick(devices, small_gst(), record([(8192, 0, 2)] * 2)) == (256, [8, 8])
    # one queue: 8 x 2 KiB = 16 KiB at 1024 is 16,384 > 16,256 available: 512, 8 x 1 KiB fits
    assert pick(devices, small_gst(), record([(8192, 0, 2)])) == (512, [8])


def test_latencies_are_core_cycles_at_the_gst_clock(devices):
    """Table II: "latency L1 / L2 / DRAM (cycles, CU round trip)". The same small GPU at a
    2 GHz nominal clock with the same cycle counts and the same bytes per cycle (64 GB/s) scans
    the same merit: peak 1024 as above, so a single queue gets 512 / 8. Read as ns (the rule
    planted wrong) the 850 would be 1,700 cycles and the peak 2048."""
    gst = small_gst(core_clock_mhz=2000, dram_bw_mbps=64_000)
    assert pick(devices, gst, record([(8192, 0, 2)])) == pick(devices, small_gst(), record([(8192, 0, 2)]))
    # at a DVFS clock of 1 GHz the round trip (a time) is half as many cycles, 425, and the
    # bytes per cycle double (cpb 0.0625); the firmware agrees with the model there too
    rec = record([(8192, 0, 2)], core_clock_mhz=1000)
    p = reference.planner(gst, rec)
    assert p.lat == np.float32(425) and p.cpb == np.float32(0.0625)
    pick(devices, gst, rec)


@pytest.mark.parametrize("length,tile", [(1024, 512), (1025, 1024), (1152, 1024), (2048, 1024), (384, 256),
                                         (257, 256), (256, 128), (65, 64), (64, 64)])
def test_a_queue_is_streamed_in_two_transfers_or_more(devices, length, tile):
    """The length bound: ceil(length / tile) >= 2, so one transfer loads while one is used
    (QuCo Table III, MI100: MM+Reduction, K = 1,024, gets 512 where its merit gives 1024; Fig. 9:
    Conv1d-2's 1024 for K = 1,152 rules out two *whole* tiles). Low CI doubles the R9 Nano's
    peak 1024 to 2048; one queue, so Little's slots fit the LDS at every tile here. Planted as
    "two whole tiles", 1025, 1152 and 384 would give 512, 512 and 128; planted as "tile at most
    the length", 1024 and 256 would give 1024 and 256. Never below the GST's minimum, 64."""
    assert pick(devices, R9_NANO, record([(length, 0, 2)], ci_class=abi.CI_CLASS_LOW))[0] == tile


@pytest.mark.parametrize("length,slots", [(1152, 2), (2048, 2), (2049, 2), (3072, 2), (3073, 4), (1024, 1)])
def test_slots_are_capped_by_the_transfers_a_queue_makes(devices, length, slots):
    """A ring slot beyond ceil(length / tile) transfers is never filled. R9 Nano, one queue,
    low CI, tile forced to 1024 by max_tile_elems = 1024 (the scan's best 1024; low CI cannot
    double past the maximum): Little's 8 x 32 / 64 CUs = 4 slots, capped to the largest power of
    two within ceil(length / 1024). 1,152 = two transfers (planted as whole tiles: 1). A queue of
    1,024 is one transfer: the length bound halves the tile to 512 and the slots are 2."""
    g = tables.unpack(tables.load(R9_NANO))
    g["max_tile_elems"] = 1024
    tile, got = pick(devices, tables.pack(g), record([(length, 0, 2)], ci_class=abi.CI_CLASS_LOW))
    assert (tile, got[0]) == ((512, 2) if length == 1024 else (1024, slots))


def test_the_lds_bound_keeps_littles_slots_and_the_cu_step(devices):
    """R9 Nano Matrix-Vector shape (8 + 1 queues of K = 2,048, low CI): 2048 -> 1024 (two
    transfers); Little 8 x 32 / 64 = 4 slots of 1024: 8 x 4 x 2 KiB = 64 KiB does not fit -> 512
    / 4 (QuCo's Table III pick; planted as room for 2 slots, 1024 / 2). With the CU step off
    Little's 8 are counted only as far as the 128 barriers give (8 x 8 + 1 slots need 130): 4,
    so the pick is the same."""
    queues = [(2048, 0, 2)] * 8 + [(2048, 1, 2)]
    on = pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW))
    assert on[0] == 512 and on[1][:8] == [4] * 8
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW, flags=abi.FLAG_NO_CU_AWARE)) == on


def test_fewer_active_cus_keep_more_slots(devices):
    """The CU step: "reduces the number of tiles when more CUs are active". ElementwiseK shape on
    the R9 Nano (one 65,536-element queue, low CI, 2048): Little 4 -> x 32 / 64 = 2; on 16 CUs
    x 32 / 16: kept, 4."""
    rec = {c: record([(65536, 0, 2)], ci_class=abi.CI_CLASS_LOW, active_cus=c) for c in (64, 16)}
    assert pick(devices, R9_NANO, rec[64]) == (2048, [2])
    assert pick(devices, R9_NANO, rec[16]) == (2048, [4])


def test_quco_plus_rounds_up_to_an_integer_and_skips_the_cu_step(devices):
    """quco+ (FLAG_QUCO_PLUS, not the paper's rule set): Little's ratio rounded up (the fewest
    tiles in flight that cover the memory time), no power of two, no CU step. Two 65,536-element
    int8 queues on the R9 Nano, low CI, tile 4096: memTime of a step 850 + 4096 x (2 x 0.125 +
    4 / 64) = 2130 over procTime 9.143 + 8.143 x 4 = 41.71, / 16 = 3.19: the paper's rules round
    to 4 and step x 32 / 64 CUs to 2; quco+ takes 4, then deepens it (neighbours, below): 2 x 4 x
    4 KiB = 32 KiB leaves room for one work-group in the 65,408 B (64 KiB less 128 B of metadata),
    and so do 5, 6 and 7 slots (56 KiB); 8 slots (64 KiB) do not fit: 7. Planted as the nearest
    integer: 3 -> 7 as well, so the CU step is what the first assertion checks; as a power of
    two with the CU step: 2."""
    queues = [(65536, 0, 1)] * 2
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW)) == (4096, [2, 2])
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW, flags=abi.FLAG_QUCO_PLUS)) == (4096, [7, 7])


def test_quco_plus_rounding_up_enters_the_lds_bound(devices):
    """Elementwise on the R9 Nano (two 65,536-element fp16 queues, low CI): at 2048 the ratio is
    (850 + 2048 x (4 x 0.125 + 8 / 64)) / 18.857 / 16 = 2130 / 301.7 = 7.06; rounded up, 8 slots
    of 4 KiB per queue are the whole 64 KiB LDS, which also holds the metadata, so the LDS bound
    halves the tile: at 1024 the ratio is 1490 / 7.43 / 16 = 12.5, capped at max_slots 8, 2 x 8 x
    2 KiB fits. The paper's rules: 8 -> CU step 4 at 2048. (Planted as the nearest integer:
    2048 / 7, 56 KiB fits.)"""
    queues = [(65536, 0, 2)] * 2
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW)) == (2048, [4, 4])
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW, flags=abi.FLAG_QUCO_PLUS)) == (1024, [8, 8])


def test_quco_plus_caps_at_the_transfers_not_a_power_of_two(devices):
    """quco+ keeps a ring of exactly the transfers a queue makes: 3 for a 5,000-element queue in
    tiles of 2048 (2048 + 2048 + 904), where Little's ratio 1490 / 18.857 / 16 = 4.94 asks 5; the
    paper's rules take 4 -> CU step 2, within the transfers."""
    queues = [(5000, 0, 2)]
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW)) == (2048, [2])
    assert pick(devices, R9_NANO, record(queues, ci_class=abi.CI_CLASS_LOW, flags=abi.FLAG_QUCO_PLUS)) == (2048, [3])


@pytest.mark.parametrize("passes,slots", [(0, 3), (1, 3), (2, 5), (500, 5)])
def test_quco_plus_caps_at_the_transfers_of_every_pass(devices, passes, slots):
    """quco+ reads a queue's passes (the record's `passes`; 0 or 1 = once): a queue the work-group
    streams again fills its ring with the next pass's tiles, so the cap is transfers x passes. The
    5,000-element queue above in tiles of 2048 makes 3 transfers a pass: once, 3 slots (of Little's
    5); twice, 6 >= 5, so Little's 5 (neighbours: 5 x 4 KiB = 20 KiB leaves 3 work-groups in the
    65,408 B, 6 x 4 KiB = 24 KiB only 2: no deeper). The length bound (10,000 elements across two
    passes) keeps 2048. The paper's rules ignore passes: 2 at every count. Planted as "transfers"
    (passes ignored): 3 for 2 and 500; as "transfers + passes": 5 for passes 2 as well, which the
    384-element case below separates."""
    q = [(5000, 0, 2, passes)]
    assert pick(devices, R9_NANO, record(q, ci_class=abi.CI_CLASS_LOW, flags=abi.FLAG_QUCO_PLUS)) == (2048, [slots])
    assert pick(devices, R9_NANO, record(q, ci_class=abi.CI_CLASS_LOW)) == (2048, [2])


@pytest.mark.parametrize("passes,tile,slots", [(0, 256, 2), (2, 512, 2), (3, 1024, 3), (4, 1024, 4)])
def test_quco_plus_length_bound_counts_the_passes(devices, passes, tile, slots):
    """The length bound under quco+: two transfers across the passes, ceil(length x passes / tile)
    >= 2. A 384-element fp16 queue on the R9 Nano, low CI (2048 from the scan's 1024): once, the
    tile halves while it is >= 384: 256, 2 transfers, 2 slots (Little's 930 / 0.571 / 16 = 101 ->
    8, capped). Twice (768): 512, one transfer a pass, so 1 x 2 = 2 slots of Little's 36.8 -> 8.
    Three times (1,152): 1024 (Little 1170 / 7.43 / 16 = 9.8 -> 8), cap 1 x 3 = 3; four times
    (1,536): 1024, cap 4. Planted as "transfers + passes": 3, 4, 5 slots; as the length alone:
    256 throughout. The paper's rules: 256 / 2 at every count."""
    q = [(384, 0, 2, passes)]
    assert pick(devices, R9_NANO, record(q, ci_class=abi.CI_CLASS_LOW, flags=abi.FLAG_QUCO_PLUS)) == (tile, [slots])
    assert pick(devices, R9_NANO, record(q, ci_class=abi.CI_CLASS_LOW)) == (256, [2])


def test_the_papers_rules_ignore_passes_on_every_example(devices):
    """Every bundled example on its GPU, with every queue's passes 1 and 500: the paper's picks are
    those of the record that says 0 (the API the paper gives has no such input)."""
    from conftest import ALL_EXAMPLE_KERNELS
    from quco.kernel.format import load_kernel
    for path in ALL_EXAMPLE_KERNELS:
        k = load_kernel(path)
        raw = bytearray(k.record())
        picks = []
        for passes in (0, 1, 500):
            for i in range(len(k.queues)):
                at = abi.LAUNCH_HEADER.size + i * abi.QUEUE.size + abi.QUEUE.offset("passes")
                raw[at:at + 2] = passes.to_bytes(2, "little")
            picks.append(pick(devices, k.gpu or R9_NANO, bytes(raw)))
        assert picks[0] == picks[1] == picks[2], path


def test_quco_plus_deepens_the_ring_while_the_neighbours_stay(devices):
    """quco+'s neighbour rule: the ring deepens while the CU still holds as many work-groups as at
    Little's count. ElementwiseK on the h100-sxm preset (one 65,536-element fp16 queue, low CI):
    cpb = 1980 x 132 / 3,350,000 = 0.0780, lat = 327 + 285 + 693 = 1305; at 8192 memTime =
    1305 + 8192 x (2 x 0.0780 + 4 / 128) = 2839, procTime = 9.143 + 8.143 x 4 = 41.71, ratio
    2839 / 41.71 / 16 = 4.25 -> 5. The partition holds 233,472 - 128 B of metadata = 233,344 B:
    at 5 slots (80 KiB) two work-groups, at 6 (96 KiB) and 7 (112 KiB) still two, at 8 (128 KiB)
    one: 7 (the sweep's best at the paper's size; 8192/8 runs +10.9% there). Planted as "no
    deepening": 5; as "as deep as one work-group fits": 8. The R9 Nano's 5,000-element queue below
    shows the other stop, the queue's transfers; and on the R9 Nano the same ElementwiseK (2048,
    Little 4.94 -> 5) keeps 5: 20 KiB x 3 work-groups fit, 24 KiB x 3 do not."""
    assert pick(devices, "h100-sxm", record([(65536, 0, 2)], ci_class=abi.CI_CLASS_LOW,
                                            flags=abi.FLAG_QUCO_PLUS)) == (8192, [7])
    assert pick(devices, R9_NANO, record([(65536, 0, 2)], ci_class=abi.CI_CLASS_LOW,
                                         flags=abi.FLAG_QUCO_PLUS)) == (2048, [5])
    # the paper's rule set does not deepen: Little 5 -> power of two 4 -> CU step x 32 / 132: 2
    assert pick(devices, "h100-sxm", record([(65536, 0, 2)], ci_class=abi.CI_CLASS_LOW)) == (8192, [2])


def test_quco_plus_neighbours_agree_with_the_model_where_they_deepen(devices):
    """The neighbour rule's loop (two divisions, then products per deeper slot) against the
    model's integer divisions, on launches drawn so that Little's count is often below max_slots
    with room to deepen: long low-CI queues (one or two, 1- or 2-byte elements, sometimes a
    stationary queue), 7 or 15 consumers, max_slots 16, partitions of the LDS, and barrier
    budgets small enough that some rings stop at the barriers rather than the LDS. Every launch
    agrees bit for bit (fuzz.compare raises otherwise); at least a quarter deepen (42 of 120 with
    this seed), and some stop at the barriers (12)."""
    import random
    rng = random.Random(30)
    deepened = by_barriers = 0
    n = 120
    for _ in range(n):
        g = tables.unpack(tables.load(rng.choice(["h100-sxm", "r9-nano", "mi100"])))
        g.update(max_slots=16, barrier_limit=rng.choice([128, 128, 24, 40]))
        gst = tables.pack(g)
        queues = [(rng.choice([1 << 20, rng.randint(100_000, 1 << 20)]), 0, rng.choice([1, 2]))] * rng.randint(1, 2)
        if rng.random() < 0.25:
            queues.append((65536, 1, 2))
        lds = rng.choice([0, 0, 128 * rng.randint(g["lds_bytes"] // 512, g["lds_bytes"] // 128)])
        rec = record(queues, ci_class=abi.CI_CLASS_LOW, wfs=rng.choice([7, 15]), lds_bytes=lds,
                     flags=abi.FLAG_QUCO_PLUS)
        res = fuzz.compare(devices(gst), rec)
        trace = []
        p = reference.planner(gst, rec, trace)
        tile, _ = p.plan()
        assert res.ok and res.tile == tile
        little = next(t for t in trace if t["step"] == "little")
        if little["stepped"] > little["rounded"]:
            deepened += 1
            s = little["stepped"]
            ring = {i: s + 1 for i in p.stream}
            r0 = p.residents(tile, little["rounded"])
            by_barriers += (s < g["max_slots"] and p.avail // p.bytes_needed(tile, ring)
                            >= r0 > g["barrier_limit"] // p.barriers_needed(ring))
    assert deepened >= n // 4
    assert by_barriers >= 1
