"""Pins for the deliberate bugs of issue #13 that `make test` missed, in the firmware, the
model and the emulator (the input layer's are pinned with the CLI tests). Each test sits on
the exact boundary or the exact case the bug changes, so it fails on every run, not on a
lucky seed:

- the LDS generation word written before the descriptors instead of last;
- a GST checksum check skipped at boot;
- the configuration cache's key ignoring the last queue;
- a partition's `lds_bytes` equal to the GST's refused (`>` turned into `>=`);
- the compute-intensity upper bound dropped (CI = inf or just above 1e6 accepted);
- Little's ratio computed as memTime / procTime instead of memTime x (1 / procTime), the
  firmware's and the model's form (a case where float32 tells them apart);
- an FDIV's busy time not carried into the next block;
- `fmadd.d` in the RV32IMF allow-list.
"""
import dataclasses
import zlib

import numpy as np
import pytest
from unicorn import UC_HOOK_MEM_WRITE

from conftest import MM_KERNEL, text_bytes
from quco.emulator import elf, isa, timing
from quco.emulator.faults import IllegalInstruction
from quco.emulator.soc import Soc
from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host import fuzz, reference
from quco.host.device import Device
from quco.kernel.format import load_kernel, pack_record

f32 = np.float32
R9 = tables.load("r9-nano")
MM = load_kernel(MM_KERNEL).record()


def with_field(record: bytes, name: str, value) -> bytes:
    raw = bytearray(record)
    f = abi.LAUNCH_HEADER.field(name)
    at = abi.LAUNCH_HEADER.offset(name)
    raw[at:at + f.size] = np.array(value, dtype={"u32": "<u4", "f32": "<f4"}[f.ctype]).tobytes()
    return bytes(raw)


# ---------------------------------------------------------------- the LDS write order
def lds_writes(elf_path, records):
    """Each launch's LDS stores, in order: [(offset, size)], recorded by a Unicorn hook."""
    soc = Soc(elf.load(elf_path), R9)
    seen = []
    soc.uc.hook_add(UC_HOOK_MEM_WRITE, lambda uc, access, address, size, value, _: seen.append(
        (address - abi.LDS.base, size)), begin=abi.LDS.base, end=abi.LDS.base + soc.lds_bytes - 1)
    soc.boot()
    per_launch = []
    for record in records:
        seen.clear()
        assert soc.launch(record).answer.status == Status.OK
        per_launch.append(list(seen))
    return per_launch


def test_the_generation_word_is_the_last_lds_store(elf_path):
    other = load_kernel(MM_KERNEL.parent / "dot-product.json").record()
    cold, cached, evicting = lds_writes(elf_path, [MM, MM, other])
    generation = (abi.LDS_HEADER.offset("generation"), 4)
    # a cold launch writes every word of its configuration once, the generation last
    n = abi.LDS_HEADER.unpack(reference.configure(R9, MM).lds)["num_queues"]
    assert len(cold) == abi.config_bytes(n) // 4
    assert sorted(cold) == [(off, 4) for off in range(0, abi.config_bytes(n), 4)]
    assert cold[-1] == generation and cold.count(generation) == 1
    # an identical relaunch (the LDS holds it already) writes the generation alone
    assert cached == [generation]
    assert evicting[-1] == generation and len(evicting) > 1


# ---------------------------------------------------------------- the boot checksum
def test_boot_refuses_a_table_whose_only_fault_is_its_checksum(elf_path):
    g = tables.unpack(R9)
    g["num_cus"] = 60  # valid, but the checksum is still the R9 Nano's
    raw = bytearray(tables.pack(g))
    raw[abi.GST.offset("checksum"):abi.GST.offset("checksum") + 4] = R9[8:12]
    assert abi.gst_violation(bytes(raw)).status == Status.GST_CHECKSUM
    assert zlib.crc32(bytes(raw[:8]) + bytes(4) + bytes(raw[12:])) != int.from_bytes(R9[8:12], "little")
    dev = Device(bytes(raw), elf_path)
    assert (dev.boot_status, dev.boot_detail) == (Status.GST_CHECKSUM, 0)
    res = dev.launch(MM)
    assert (res.status, res.detail, res.lds) == (Status.GST_CHECKSUM, 0, b"")
    assert Device(tables.pack(g), elf_path).boot_status == Status.OK  # the control: right checksum


# ---------------------------------------------------------------- the cache key
@pytest.mark.parametrize("field,value", [("length", 4096), ("elem_size", 4)])
def test_a_relaunch_differing_only_in_the_last_queue_is_a_cache_miss(elf_path, field, value):
    n = abi.LAUNCH_HEADER.unpack(MM)["num_queues"]
    raw = bytearray(MM)
    last = abi.LAUNCH_HEADER.size + (n - 1) * abi.QUEUE.size + abi.QUEUE.offset(field)
    size = abi.QUEUE.field(field).size
    assert int.from_bytes(raw[last:last + size], "little") != value
    raw[last:last + size] = value.to_bytes(size, "little")
    changed = bytes(raw)
    dev = Device(R9, elf_path)
    first = dev.launch(MM)
    second = dev.launch(changed)
    assert not second.cache_hit
    model = reference.configure(R9, changed, first.generation + 1)
    assert second.lds == model.lds != first.lds[:len(model.lds)]
    assert dev.launch(MM).cache_hit  # the first is still cached, under its own key


# ---------------------------------------------------------------- boundaries of the launch header
@pytest.mark.parametrize("lds,status", [
    (65536, Status.OK),                 # exactly the GST's LDS (the R9 Nano's 64 KiB)
    (65536 - abi.LDS_ALIGN, Status.OK),
    (65536 + abi.LDS_ALIGN, Status.RECORD_FIELD),
])
def test_a_partition_may_have_exactly_the_gsts_lds(devices, lds, status):
    assert tables.unpack(R9)["lds_bytes"] == 65536
    fw = fuzz.compare(devices("r9-nano"), with_field(MM, "lds_bytes", lds))
    assert fw.status == status
    assert fw.detail == (abi.LAUNCH_HEADER.offset("lds_bytes") if status else 0)


ABOVE_1E6 = float(np.nextafter(f32(1e6), f32(np.inf)))  # 1000000.0625, the next float32


@pytest.mark.parametrize("ci,ok", [
    (1e6, True), (ABOVE_1E6, False), (1.0000001e6, False), (float("inf"), False), (float("nan"), False),
    (0.0, True), (-0.0, True), (float(-np.float32(1e-45)), False),
])
def test_compute_intensity_range_is_closed_and_finite(devices, ci, ok):
    assert f32(ABOVE_1E6) > f32(1e6) and f32(1.0000001e6) > f32(1e6)  # both just above the bound in float32
    fw = fuzz.compare(devices("r9-nano"), with_field(MM, "compute_intensity", ci))
    if ok:
        assert fw.status == Status.OK
    else:
        assert (fw.status, fw.detail) == (Status.RECORD_FIELD, abi.LAUNCH_HEADER.offset("compute_intensity"))


# ---------------------------------------------------------------- float32: one rounding or two
# Found by search (a GST whose latency puts memTime at 96 x procTime, so Little's ratio x 1/16
# sits on the 1.5 x 4 threshold of roundToPowerOfTwo): mem x (1/proc) rounds below 96,
# mem / proc does not. The firmware and the model multiply by the reciprocal (one FDIV per
# tile tried, not one per queue); the two forms must not be swapped in either.
LITTLE_GST = tables.pack({**tables.unpack(R9), "simd_muls_per_cycle": 64, "num_cus": 8, "dram_bw_mbps": 512000,
                          "wavefront_pools": 4, "lat_att_cycles": 0, "lat_l2_cycles": 0, "lat_dram_cycles": 5664})
LITTLE_RECORD = pack_record(dict(magic=abi.LAUNCH_MAGIC, compute_intensity=2.0, consumer_wavefronts=4,
                                 flags=abi.FLAG_NO_CU_AWARE), [dict(length=1 << 16, type=0, elem_size=1)])


def test_littles_ratio_is_memtime_times_the_reciprocal_of_proctime(elf_path):
    p = reference.planner(LITTLE_GST, LITTLE_RECORD)
    tile, slots = p.plan()
    mem, proc = p.mem_time(tile, 1), p.proc_time(tile)
    assert mem * (f32(1.0) / proc) < f32(96.0) <= mem / proc  # the two forms straddle 16 x 1.5 x 4
    assert (tile, slots) == (4096, [4])                        # 4 slots; mem / proc would give 8
    res = Device(LITTLE_GST, elf_path).launch(LITTLE_RECORD)
    assert (res.tile, [q.slots for q in res.queues]) == (4096, [4])
    assert res.lds == reference.configure(LITTLE_GST, LITTLE_RECORD).lds


# ---------------------------------------------------------------- the emulator
@pytest.fixture(scope="module")
def assemble(gnu_as):
    return lambda source, **kw: gnu_as(".globl _start\n_start:\n" + source, **kw)


@pytest.mark.parametrize("profile,latency", [
    (dataclasses.replace(timing.load_profile("cv32e40p"), fdiv_by_operands=False), 9),  # the constant result.fp_div
    ("cv32e40p-worst", 19)], ids=["cv32e40p-constant", "cv32e40p-worst"])
def test_an_fdivs_busy_time_is_carried_into_the_next_block(assemble, profile, latency):
    # the next block's FP instruction does not read the quotient: only the busy FPU stalls it
    profile = timing.load_profile(profile) if isinstance(profile, str) else profile
    path = assemble("li t0,0x2000\ncsrs mstatus,t0\nfdiv.s fa0,fa1,fa2\njal zero,next\nnext:\n"
                    "fadd.s fa3,fa4,fa5\nwfi")
    code = text_bytes(path)
    t = timing.Timer(profile, lambda a, n: code[a:a + n])
    assert t.block(0, 16).cycles == 8                          # li 1, csrs 4, fdiv 1 (issues at 5), jal 2
    assert t.block(0, 16).fpu_pending == latency - 3           # busy until 5 + latency, the block ends at 8
    assert t.cost((0, 16), 16, 8) == (latency - 3) + 1 + 1     # the wait, fadd 1, wfi 1
    assert t.cost(None, 16, 8) == 2                            # the same block from idle
    # and through the Soc, from reset: wake-up, the first block, the carried wait, fadd, wfi
    soc = Soc(elf.load(path), R9, profile=profile)
    assert soc.run().cycles == profile.wake_reset + 8 + (latency - 3) + 2


def test_fmadd_d_is_not_rv32imf(assemble):
    path = assemble("li t0, 0x2000\ncsrs mstatus, t0\nfault: fmadd.d fa0, fa1, fa2, fa3\nwfi", march="rv32imfd")
    image = elf.load(path)
    word = text_bytes(path)[8:12]
    found, _ = isa.scan(word, 0)
    assert found and found[0][1].startswith("fmadd.d ") and "fmadd.d" not in isa.ALLOWED
    with pytest.raises(IllegalInstruction) as info:
        Soc(image, R9).run()
    assert info.value.pc == image.addresses["fault"]
    assert info.value.message.startswith("fmadd.d fa0, fa1, fa2, fa3") and "is not RV32IMF" in info.value.message
