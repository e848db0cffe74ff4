"""The reference model against hand-computed figures and the paper's Table III."""
import json

import numpy as np
import pytest

from conftest import EXAMPLES_DIR
from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host import reference as ref
from quco.host.device import decode_lds, pack_record

EXAMPLES = EXAMPLES_DIR
# QuCo Table III, R9 Nano column: tile elements / slots.
TABLE_III_R9_NANO = {
    "elementwise-k": (2048, 2), "elementwise": (2048, 4), "sumvectors": (2048, 4),
    "dot-product": (2048, 4), "matrix-vector": (512, 4), "matrix-matrix": (512, 4),
    "matrix-matrix-reduction": (512, 2), "batched-matrix-matrix": (512, 2),
}


def record(ci=97.5, queues=((2048, 0, 2),) * 8 + ((2048, 1, 2),), **hdr):
    header = dict(magic=abi.LAUNCH_MAGIC, compute_intensity=ci, consumer_wavefronts=8, **hdr)
    return pack_record(header, [dict(length=n, type=t, elem_size=e) for n, t, e in queues])


@pytest.fixture(scope="module")
def r9():
    return tables.load("r9-nano")


def planner(gst, rec):
    g = ref.check_gst(gst)
    return ref.Planner(g, ref.parse_launch(rec, g))


def test_algorithm_2_times_by_hand(r9):
    p = planner(r9, record())
    # bestScheduling = 512 / (64 x min(8, 4)) = 2; proc = 2 + (2 - 1) x min(8 - 1, 4) = 6
    assert p.proc_time(512) == np.float32(6.0)
    # below one scheduling round the overlap term is clamped: 128 / 256 = 0.5
    assert p.proc_time(128) == np.float32(0.5)
    # lat = ATT 100 + L2 300 + DRAM 450; per-CU BW = 512000 MB/s / 1000 MHz / 64 = 8 B/cycle
    assert p.cpb == np.float32(0.125) and p.lat == np.float32(850.0)
    # mem = 850 + 512*2/8 + 2*512*2/64 = 850 + 128 + 32
    assert p.mem_time(512, 2) == np.float32(1010.0)


def test_weighted_merit_peaks_at_1024_before_ci_scaling(r9):
    p = planner(r9, record(ci=2.0))  # 1 <= CI <= 4: no scaling
    w = {t: float(p.proc_time(t)) / float(p.mem_time(t, 2)) * float(p.lat / t + p.cost_const)
         for t in (64 << k for k in range(8))}
    assert max(w, key=w.get) == 1024
    # the 4-slot LDS bound then halves it for 8+1 queues: 8*4*1024*2 B > 64 KiB - metadata
    assert p.choose_tile() == 512


def test_littles_law_slots_by_hand(r9):
    p = planner(r9, record())
    # 8 queues x 1010 / 6 = 1346.7, x CU_SLOT_REF 4 / 64 CUs = 84.2 -> capped at max_slots 8,
    # then at the 2048 / 512 = 4 tiles the queue ever holds
    assert p.little_slots(0, 512) == 4
    p = planner(r9, record(queues=((1 << 20, 0, 2),)))
    # 1 queue at 2048: proc 36, mem 850+512+128 = 1490: 41.4 x 4 / 64 = 2.59 -> 2
    assert p.little_slots(0, 2048) == 2


@pytest.mark.parametrize("name", sorted(TABLE_III_R9_NANO))
def test_table_iii_r9_nano(name, r9):
    from quco.host.kernel import load_kernel
    kernel = load_kernel(EXAMPLES / f"{name}.json")
    res = ref.configure(r9, kernel.record())
    assert res.status == Status.OK
    tile, slots = TABLE_III_R9_NANO[name]
    streaming = [s for s, (_, t, _) in zip(res.slots, kernel.queues) if t == abi.QUEUE_STREAMING]
    assert (res.tile, set(streaming)) == (tile, {slots})


def test_stationary_queue_shares_the_rest(r9):
    res = ref.configure(r9, record())
    # 8 streaming x 4 slots x 1 KiB = 32 KiB; the stationary queue could take 31 more
    # slots, but max_slots is 8 and its 2048 elements are only 4 tiles.
    assert res.slots[8] == 4


def test_layout_is_contiguous_aligned_and_within_the_lds(r9):
    res = ref.configure(r9, record())
    d = decode_lds(res.lds)
    h, qs = d["header"], d["queues"]
    assert h["magic"] == abi.LDS_MAGIC and h["meta_bytes"] == 512  # 32 + 9 x 40 = 392 -> 512
    end = h["meta_bytes"]
    for q in qs:
        assert q.offset == end and q.offset % abi.LDS_ALIGN == 0
        end += ref.align(q.slots * q.slot_bytes)
    assert h["used_bytes"] == end <= 65536
    assert h["barriers_used"] == sum(q.barrier_count for q in qs) == 2 * sum(q.slots for q in qs)


@pytest.mark.parametrize("field,value", [("num_cus", 0), ("core_clock_mhz", 0), ("dram_bw_mbps", 0),
                                         ("cache_line_bytes", 48), ("lds_bytes", 1000),
                                         ("min_tile_elems", 96), ("max_tile_elems", 32)])
def test_bad_gst_fields_name_their_offset(r9, field, value):
    g = tables.unpack(r9)
    g[field] = value
    res = ref.configure(tables.pack(g), record())
    assert (res.status, res.detail) == (Status.GST_FIELD, abi.GST.offset(field))


def test_gst_magic_version_checksum(r9):
    bad = bytearray(r9)
    bad[0] ^= 1
    assert ref.configure(bytes(bad), record()).status == Status.GST_MAGIC
    bad = bytearray(r9)
    bad[100] ^= 1
    assert ref.configure(bytes(bad), record()).status == Status.GST_CHECKSUM
    g = tables.unpack(r9)
    g["version"] = 2
    assert ref.configure(tables.pack(g), record()).status == Status.GST_VERSION


@pytest.mark.parametrize("rec,status,detail", [
    (record(ci=float("nan")), Status.RECORD_FIELD, 8),
    (record(ci=-1.0), Status.RECORD_FIELD, 8),
    (record(ci=float("inf")), Status.RECORD_FIELD, 8),
    (record(active_cus=65), Status.RECORD_FIELD, 20),
    (record(lds_bytes=100), Status.RECORD_FIELD, 24),
    (record(flags=0x10), Status.BAD_FLAGS, 0x10),
    (record(queues=((0, 0, 2),)), Status.QUEUE_LENGTH, 0),
    (record(queues=((8, 0, 2), (8, 2, 2))), Status.QUEUE_TYPE, 1),
    (record(queues=((8, 0, 3),)), Status.ELEM_SIZE, 0),
    # metadata align(32 + 16 x 40) = 768 B, plus 16 queues x one 64-element fp16 slot (128 B)
    (record(queues=((8, 0, 2),) * 16, lds_bytes=1024), Status.LDS_NO_FIT, 768 + 16 * 128),
])
def test_record_errors(r9, rec, status, detail):
    assert (ref.configure(r9, rec).status, ref.configure(r9, rec).detail) == (status, detail)


def test_queue_count_and_barrier_limit(r9):
    rec = bytearray(record())
    rec[28:32] = (17).to_bytes(4, "little")
    assert ref.configure(r9, bytes(rec)).status == Status.QUEUE_COUNT
    g = tables.unpack(r9)
    g["barrier_limit"] = 16
    res = ref.configure(tables.pack(g), record())
    assert (res.status, res.detail) == (Status.BARRIER_LIMIT, 18)


def test_lower_clock_means_more_bandwidth_per_cycle(r9):
    # DVFS: at 500 MHz the same DRAM delivers 16 B per core cycle
    assert planner(r9, record(core_clock_mhz=500)).cpb == np.float32(1 / 16)
