"""Firmware against the reference model, bit for bit: presets x examples, then random
valid, near-valid and raw inputs (hypothesis drives the seeded generators of quco.host.fuzz)."""
import dataclasses
import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ALL_EXAMPLE_KERNELS, EXAMPLE_KERNELS
from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host import fuzz, reference
from quco.kernel.format import load_kernel, pack_record

EXAMPLES = EXAMPLE_KERNELS
EXAMPLES_DIR_R9 = EXAMPLE_KERNELS[0].parent
EXAMPLE_NAMES = [p.stem for p in EXAMPLES]
def slow(n):
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("gpu", tables.preset_names())
@pytest.mark.parametrize("path", ALL_EXAMPLE_KERNELS,
                         ids=[str(p.relative_to(p.parents[1] if p.parent.name != "kernels" else p.parent))
                              for p in ALL_EXAMPLE_KERNELS])
def test_presets_x_examples(devices, gpu, path):
    assert fuzz.compare(devices(gpu), load_kernel(path).record()).ok


def test_there_are_enough_presets_and_examples():
    assert len(tables.preset_names()) >= 5 and len(EXAMPLES) == 8 and len(ALL_EXAMPLE_KERNELS) == 24


@slow(120)
@given(st.randoms(use_true_random=False))
def test_random_gsts_and_records(devices, rng):
    raw = fuzz.gst(rng)
    dev = devices(raw)
    g = tables.unpack(raw)
    for _ in range(4):
        fuzz.compare(dev, fuzz.record(rng, g))


@slow(150)
@given(st.randoms(use_true_random=False))
def test_random_records_on_r9_nano(devices, rng):
    fuzz.compare(devices("r9-nano"), fuzz.record(rng, tables.unpack(tables.load("r9-nano"))))


@slow(40)
@given(st.randoms(use_true_random=False))
def test_kernel_shapes_at_littles_rounding_points(devices, rng):
    """Each shape the algorithm branches on (fuzz.SHAPES: identical runs of each type, one
    stationary queue and several, all stationary) on a preset or an edge-drawn GST, at the two
    launches one clock or one wavefront apart where Little's ratio crosses a power of two or
    1.5 times one (issue #34: a stationary queue joining its run and counted in the step's
    bytes moves the ratio; only launches next to such a point show it)."""
    raw = tables.load(rng.choice(tables.preset_names())) if rng.random() < 0.5 else tables.pack(fuzz.valid_gst(rng))
    dev, g = devices(raw), tables.unpack(raw)
    for shape in sorted(fuzz.SHAPES):
        header, queues = fuzz.valid_record(rng, g, shape, edge_p=0.1)
        pair = fuzz.ratio_boundary(rng, raw, header, queues)
        for h in pair or [header]:
            fuzz.compare(dev, pack_record(h, queues))


@slow(100)
@given(st.randoms(use_true_random=False))
def test_record_fields_at_their_edges(devices, rng):
    """Every bounded header field at an edge of its range (gst/abi.py's, narrowed by the
    GST where the firmware holds it to the GST): the firmware accepts and refuses what the
    model does (issue #34: a clock at the ABI's maximum refused by the firmware alone)."""
    raw = tables.load(rng.choice(tables.preset_names()))
    g = tables.unpack(raw)
    header, queues = fuzz.valid_record(rng, g, edge_p=1.0)
    fuzz.compare(devices(raw), pack_record(header, queues))
    fuzz.compare(devices(raw), fuzz.near_valid(rng, g, header, queues))


def test_the_edges_come_from_the_abi():
    """The generators' edges are the declared bounds and their neighbours, shape rules too."""
    f = abi.GST.field
    assert fuzz.edges(f("cache_line_bytes")) == ([16, 32, 512, 1024], [15, 17, 1023, 1025, 2048, 0xFFFFFFFF])
    assert fuzz.edges(f("lds_bytes"))[0] == [1024, 1280, 256 * 1024 - 256, 256 * 1024]
    assert 1025 in fuzz.edges(f("lds_bytes"))[1]  # not a multiple of 256
    h = abi.LAUNCH_HEADER.field
    assert fuzz.edges(h("core_clock_mhz")) == ([0, 1, 9999, 10000], [10001, 0xFFFFFFFF])
    assert fuzz.edges(h("active_cus"), 0, 64) == ([0, 1, 63, 64], [65, 0xFFFFFFFF])
    assert fuzz.edges(h("lds_bytes"), 0, 65536, 128) == ([0, 128, 65408, 65536], [1, 65535, 65537, 0xFFFFFFFF])
    inside, outside = fuzz.edges(h("compute_intensity"))
    assert {0.0, 1e6} <= set(inside) and 1e6 + 0.0625 in outside and any(math.isnan(v) for v in outside)
    assert fuzz.cu_thresholds()[:2] == [42, 43]  # 4 x 32 x n < 3 x n x CUs from 43 CUs on
    assert fuzz.ratio_thresholds({"max_slots": 8}) == [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0]


def test_records_drawn_for_a_raw_gst_have_a_queue():
    """A raw GST's fields may say 0 queues, CUs and LDS bytes: the record still has one queue
    (the unit answers it with the GST's boot status), so steering has one to move."""
    rng = random.Random(0)
    for shape in list(fuzz.SHAPES) * 10:
        _, queues = fuzz.valid_record(rng, {"max_queues": 0, "num_cus": 0, "lds_bytes": 0}, shape, edge_p=1.0)
        assert len(queues) == 1


@slow(60)
@given(st.binary(min_size=abi.LAUNCH_SIZE, max_size=abi.LAUNCH_SIZE))
def test_raw_record_bytes(devices, raw):
    fw = fuzz.compare(devices("mi100"), raw)
    assert fw.status != Status.OK or raw[:4] == abi.LAUNCH_MAGIC.to_bytes(4, "little")


@slow(40)
@given(st.binary(min_size=abi.GST.size, max_size=abi.GST.size))
def test_raw_gst_bytes_are_rejected_at_boot(devices, raw):
    dev = devices(raw)
    assert dev.boot_status == Status.GST_MAGIC or raw[:4] == abi.GST_MAGIC.to_bytes(4, "little")
    fw = fuzz.compare(dev, load_kernel(EXAMPLES[0]).record())
    assert fw.status == dev.boot_status


def test_relaunch_hits_the_cache_and_writes_the_same_bytes(elf_path):
    from quco.host.device import Device
    dev = Device("mi100", elf_path)  # its own: on the shared one an earlier test may have cached this record
    rec = load_kernel(EXAMPLES[0]).record()
    first, second = dev.launch(rec), dev.launch(rec)
    assert second.cache_hit and second.generation == first.generation + 1
    assert second.lds[8:] == first.lds[8:] and second.instructions < first.instructions


def test_cache_holds_four_and_evicts_the_oldest(elf_path):
    from quco.host.device import Device
    dev = Device("r9-nano", elf_path)
    # Some Table I kernels share every input (and so a cache key): take five distinct records.
    distinct = {}
    for k in map(load_kernel, EXAMPLES):
        distinct.setdefault(k.record(), k)
    kernels = list(distinct.values())[:5]
    assert len(kernels) == 5
    for k in kernels:
        assert not dev.launch(k).cache_hit
    assert all(dev.launch(k).cache_hit for k in kernels[1:5])
    assert not dev.launch(kernels[0]).cache_hit  # the oldest was evicted by the fifth


def test_a_cache_hit_after_other_launches_rewrites_the_lds(elf_path):
    # a unit of its own: on the shared one, `a` may already be the oldest of the four cached
    # records, and launching `b` evicts it (FIFO), whatever ran before (issue #24 part 6)
    from quco.host.device import Device
    dev = Device("r9-nano", elf_path)
    a, b = (load_kernel(p).record() for p in EXAMPLES[:2])
    first = fuzz.compare(dev, a)
    fuzz.compare(dev, b)
    again = fuzz.compare(dev, a)  # compare() checks the bytes against the model again
    assert again.cache_hit and again.lds[8:] == first.lds[8:]


def test_failed_launch_keeps_the_previous_configuration(devices):
    dev = devices("radeon-530")
    good = fuzz.compare(dev, load_kernel(EXAMPLES[-1]).record())
    lds_before = dev.lds_window()
    bad = bytearray(load_kernel(EXAMPLES[-1]).record())
    bad[abi.LAUNCH_HEADER.size + 5] = 3  # element size 3
    fw = fuzz.compare(dev, bytes(bad))
    assert fw.status == Status.ELEM_SIZE and fw.generation == good.generation
    assert dev.lds_window() == lds_before


def test_launch_sequences_with_uncached_and_refused_launches(elf_path):
    """Random sequences over six records, each also with FLAG_NO_CACHE and with a bad element
    size: every launch agrees with the model (so the LDS holds the right configuration, also
    when the firmware skips rewriting it), and cache_hit follows an independent model of the
    cache: four entries, a commit on every cached cold launch that succeeds, oldest out."""
    from quco.host.device import Device
    flags, num_queues = abi.LAUNCH_HEADER.offset("flags"), abi.LAUNCH_HEADER.offset("num_queues")
    pool = []
    for record in sorted({load_kernel(p).record() for p in EXAMPLES})[:6]:
        uncached, refused = bytearray(record), bytearray(record)
        uncached[flags] |= abi.FLAG_NO_CACHE
        refused[abi.LAUNCH_HEADER.size + 5] = 3  # element size 3
        pool += [record, bytes(uncached), bytes(refused)]
    rng = random.Random(12)
    hits = 0
    for _ in range(6):
        dev = Device("r9-nano", elf_path)
        live, oldest = [None] * abi.const("CACHE_ENTRIES"), 0
        for _ in range(40):
            record = rng.choice(pool)
            n = int.from_bytes(record[num_queues:num_queues + 4], "little")
            key = record[:abi.LAUNCH_HEADER.size + n * abi.QUEUE.size]
            cached = not int.from_bytes(record[flags:flags + 4], "little") & abi.FLAG_NO_CACHE
            fw = fuzz.compare(dev, record)
            assert fw.cache_hit == (cached and key in live)
            if fw.status == Status.OK and cached and not fw.cache_hit:
                live[oldest], oldest = key, (oldest + 1) % abi.const("CACHE_ENTRIES")
            hits += fw.cache_hit
    assert hits >= 20  # the sequences do reach the cache (30 with this seed)


def test_stack_stays_inside_its_reserve(devices):
    rng = random.Random(7)
    dev = devices("r9-nano")
    g = tables.unpack(dev.gst)
    for _ in range(300):
        fuzz.compare(dev, fuzz.record(rng, g))
    assert 0 < dev.stack_high_water() <= abi.STACK_RESERVE - 128, "keep a 128-byte margin"


@pytest.mark.parametrize("gpu", ["r9-nano", "h100-sxm"])
def test_boot_table_and_live_scan_agree_with_the_model(devices, gpu):
    """At the GST's clock the firmware looks the merit scan up in its boot-time table; at
    any other clock it scans live. Every table entry (Wfs 1..17 and beyond, each element
    size) is checked against the model, and the same launch one MHz off takes the live path."""
    dev = devices(gpu)
    nominal = tables.unpack(dev.gst)["core_clock_mhz"]
    for wfs in list(range(1, 19)) + [40, 64]:
        for e in abi.ELEM_SIZES:
            for clock in (0, nominal, nominal + 1):
                header = dict(magic=abi.LAUNCH_MAGIC, flags=abi.FLAG_NO_CACHE, compute_intensity=2.0,
                              consumer_wavefronts=wfs, core_clock_mhz=clock)
                queues = [dict(length=1 << 16, type=0, elem_size=e)] * 2 + [dict(length=4096, type=1, elem_size=e)]
                assert fuzz.compare(dev, pack_record(header, queues)).status == Status.OK


def test_same_inputs_same_bytes_and_counts(elf_path):
    from quco.host.device import Device
    record = load_kernel(EXAMPLES[0]).record()
    runs = [Device("mi300x", elf_path, profile="cv32e40p", count_memory=True).launch(record) for _ in range(2)]
    assert runs[0].lds == runs[1].lds
    assert runs[0].cost.as_dict() == runs[1].cost.as_dict() and runs[0].cost.cycles > 0


@pytest.mark.parametrize("flags", [0, abi.FLAG_QUCO_PLUS])
@pytest.mark.parametrize("queue,passes,elem,status", [
    (0, 1, 2, Status.OK),         # once, as 0 says
    (8, 0x8000, 2, Status.OK),    # the highest bit, in the last queue (stationary)
    (3, 0x0100, 2, Status.OK),    # the middle of a run of identical queues: the run splits
    (0, 0xFFFF, 2, Status.OK),    # the most the field holds
    (3, 0x0100, 3, Status.ELEM_SIZE),  # a bad element size is still reported
])
def test_a_queues_passes_are_read_alike_by_firmware_and_model(devices, flags, queue, passes, elem, status):
    """The queue's passes field (once `reserved`, refused when nonzero) takes every u16: firmware
    and model answer alike, bit for bit (fuzz.compare), and the paper's rules pick as they do
    when every queue says 0."""
    base = load_kernel(EXAMPLES[EXAMPLE_NAMES.index("matrix-matrix")]).record()
    raw = bytearray(base)
    for i in range(9):  # the example's own passes (128) cleared: every queue streamed once
        at = abi.LAUNCH_HEADER.size + i * abi.QUEUE.size + abi.QUEUE.offset("passes")
        raw[at:at + 2] = bytes(2)
    raw[abi.LAUNCH_HEADER.offset("flags")] = flags
    once = bytes(raw)
    at = abi.LAUNCH_HEADER.size + queue * abi.QUEUE.size
    raw[at + abi.QUEUE.offset("passes"):at + abi.QUEUE.offset("passes") + 2] = passes.to_bytes(2, "little")
    raw[at + abi.QUEUE.offset("elem_size")] = elem
    fw = fuzz.compare(devices("r9-nano"), bytes(raw))
    assert (fw.status, fw.detail) == (status, queue if status != Status.OK else 0)
    if status == Status.OK and not flags:
        ref = reference.configure(devices("r9-nano").gst, once)
        assert (fw.tile, [q.slots for q in fw.queues]) == (ref.tile, ref.slots)


# ---------------------------------------------------------------- planted-bug classes (issue #24)
def test_queue_count_is_checked_against_the_gsts_max_queues(devices):
    """A GST may take fewer queues than the ABI's 16: the firmware must refuse a launch with more
    queues than the GST's max_queues (not only more than the ABI's), as the model does."""
    g = tables.unpack(tables.load("r9-nano"))
    g["max_queues"] = 4
    dev = devices(tables.pack(g))
    q = (1 << 16, abi.QUEUE_STREAMING, 2)
    base = load_kernel(EXAMPLES[0])
    five, four = (fuzz.compare(dev, dataclasses.replace(base, queues=[q] * n, queue_names=[]).record()) for n in (5, 4))
    assert (five.status, five.detail) == (Status.QUEUE_COUNT, 5)
    assert four.status == Status.OK


def test_overlap_is_the_consumers_beyond_the_first(devices):
    """procTime = bestLatency + (bestLatency - 1) x min(Wfs - 1, WfPools): with 2 consumers one
    overlaps, not two. Dot-Product on the R9 Nano with Wfs = 2, tile 1024: bestLatency = 1024 /
    (64 x 2) = 8, procTime = 8 + 7 x 1 = 15; a step moves 2 queues x 2 B per element: memTime =
    850 + 1024 x (4 / 8 + 8 / 64) = 1490; Little 1490 / 15 / 16 = 6.2 -> 8 -> x 32 / 64 CUs -> 4
    slots. With min(Wfs, WfPools) = 2 procTime would be 22, Little 4.2 -> 4 -> 2 slots."""
    k = dataclasses.replace(load_kernel(EXAMPLES_DIR_R9 / "dot-product.json"), consumer_wavefronts=2)
    p = reference.planner(tables.load("r9-nano"), k.record())
    assert float(p.proc_time(1024)) == 15.0 and float(p.mem_time(1024, p.step_bytes)) == 1490.0
    res = fuzz.compare(devices("r9-nano"), k.record())
    assert res.ok and res.tile == 1024 and [q.slots for q in res.queues] == [4, 4]


@pytest.mark.parametrize("stem", ["matrix-matrix", "dot-product"])
def test_each_att_descriptor_signals_its_queues_full_barriers(devices, stem):
    """Queue i owns barriers barrier_base .. + 2 x slots - 1: the full barriers of its slots,
    then the empty ones (docs/abi.md). The ATT signals "full" when a tile lands, so every ATT
    descriptor's full_barrier is its queue's barrier_base, never base + slots (the empty ones),
    and the bases follow each other by 2 x slots."""
    res = fuzz.compare(devices("r9-nano"), load_kernel(EXAMPLES_DIR_R9 / f"{stem}.json").record())
    assert res.ok
    n = len(res.queues)
    at = abi.LDS_HEADER.size + n * abi.QUEUE_DESC.size
    base = 0
    for i, q in enumerate(res.queues):
        att = abi.ATT_DESC.unpack(res.lds[at + i * abi.ATT_DESC.size:])
        assert q.barrier_base == base and q.barrier_count == 2 * q.slots
        assert att["full_barrier"] == q.barrier_base != q.barrier_base + q.slots
        assert att["queue_index"] == i
        base += q.barrier_count
