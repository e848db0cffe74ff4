"""The host shim: the ACTA-style flow of the papers' listings, resets, describe()."""

import pytest

from conftest import MM_KERNEL
from quco.gst import abi
from quco.gst.abi import Status
from quco.host import reference
from quco.host.device import Device, DeviceError, describe
from quco.kernel.format import Kernel, KernelError, load_kernel, pack_record

MM = MM_KERNEL


def test_acta_flow_equals_the_kernel_file(elf_path):
    kernel = load_kernel(MM)
    dev = Device("r9-nano", elf_path)
    dev.init(compute_intensity=kernel.ci_class, consumer_wavefronts=kernel.consumer_wavefronts)
    for length, qtype, elem in kernel.queues:
        dev.register_queue("stationary" if qtype else "streaming", length=length, elem_size=elem)
    res = dev.size_queue()
    assert res.ok and res.lds[8:] == dev.launch(kernel).lds[8:]
    assert (res.tile, [q.slots for q in res.queues]) == (512, [4] * 9)


def test_acta_flow_carries_the_passes_quco_plus_reads(elf_path):
    """register_queue's passes (not the paper's API) reach the record's `passes` field as a
    kernel.json's do: under quco+ the flow and the file give the same configuration, the
    stationary B (2,048 elements at 512: 4 transfers a pass, 128 passes) gets 8 slots where it
    gets 4 streamed once; a value outside kernel.json's range is refused naming the field."""
    kernel = load_kernel(MM)
    dev = Device("r9-nano", elf_path)
    got = {}
    for label, passes in (("once", [1] * 9), ("file", [m[0] for m in kernel.movement])):
        dev.init(compute_intensity=kernel.ci_class, flags=abi.FLAG_QUCO_PLUS)
        for (length, qtype, elem), p in zip(kernel.queues, passes):
            dev.register_queue("stationary" if qtype else "streaming", length=length, elem_size=elem, passes=p)
        got[label] = dev.size_queue()
    plus = dev.launch(Kernel(**{**vars(kernel), "flags": abi.FLAG_QUCO_PLUS}))
    assert got["file"].lds[8:] == plus.lds[8:]
    assert [q.slots for q in got["file"].queues] == [4] * 8 + [8]
    assert [q.slots for q in got["once"].queues] == [4] * 9
    dev.init(compute_intensity=1.0)
    for bad, words in ((0, "0 is out of range"), ((1 << 20) + 1, "1048577 is out of range")):
        with pytest.raises(ValueError, match=rf"^queues\[0\]\.passes: {words}; expected integer 1 to 1048576$"):
            dev.register_queue("streaming", 16, 2, passes=bad)


def test_quco_init_takes_a_class_and_a_work_group_size(elf_path):
    """QuCo Fig. 4a: InitQuCo(HIGH, 512, 64) -- a class, 512 work-items (7 consumer
    wavefronts besides the producer) and the CUs."""
    dev = Device("r9-nano", elf_path)
    dev.init("high", work_group_size=512, active_cus=64)
    assert dev._pending["ci_class"] == "high" and dev._pending["consumer_wavefronts"] == 7
    for _ in range(8):
        dev.register_queue("streaming", length=2048, elem_size=2)
    dev.register_queue("stationary", length=2048, elem_size=2)
    by_class = dev.size_queue()
    assert by_class.ok and by_class.lds[8:] == dev.launch(load_kernel(MM)).lds[8:]
    with pytest.raises(ValueError, match='compute_intensity: "hgh" is not an allowed name.*"low", "medium", "high"'):
        dev.init("hgh")
    with pytest.raises(ValueError, match="work_group_size 500"):
        dev.init(2.0, work_group_size=500)


def test_work_group_sizes_at_the_edges_of_the_range(elf_path):
    # consumer_wavefronts is 1..64 (the ABI); one more wavefront is the producer, so a
    # work-group is 2..65 wavefronts of 64 work-items: 128..4160
    dev = Device("r9-nano", elf_path)
    for wavefronts in (2, 65):
        dev.init("high", work_group_size=wavefronts * 64)
        assert dev._pending["consumer_wavefronts"] == wavefronts - 1
        dev.register_queue("streaming", length=2048, elem_size=2)
        assert dev.size_queue().ok
    for work_items in (64, 66 * 64, 65 * 64 + 1):
        with pytest.raises(ValueError, match=f"work_group_size {work_items}: expected a multiple of 64 from 128 to 4160"):
            dev.init("high", work_group_size=work_items)


def test_acta_flow_errors(elf_path):
    dev = Device("r9-nano", elf_path)
    with pytest.raises(RuntimeError, match="init"):
        dev.register_queue("streaming", 16, 2)
    dev.init(compute_intensity=1.0)
    with pytest.raises(ValueError, match='queues\\[0\\].type: "fifo" is not one of "streaming", "stationary"'):
        dev.register_queue("fifo", 16, 2)
    dev.register_queue("streaming", 16, 2)
    dev._pending["queues"][0] = (16, 0, 3)  # past register_queue's check: the Kernel refuses it as kernel.json's
    with pytest.raises(KernelError, match="queues\\[0\\].elem_size: 3 is not one of 1, 2, 4, 8"):
        dev.size_queue()
    record = pack_record(Kernel("k", 1.0, queues=[(16, 0, 2)]).header(), [dict(length=16, type=0, elem_size=3)])
    with pytest.raises(DeviceError, match="queue 0: element size is not 1, 2, 4 or 8"):
        dev.launch(record, check=True)  # past the host's checks: the unit refuses it itself


def test_reset_boots_again_and_forgets_the_cache(elf_path):
    dev = Device("r9-nano", elf_path)
    k = load_kernel(MM)
    first = dev.launch(k)
    assert dev.launch(k).cache_hit
    dev.reset()
    again = dev.launch(k)
    assert not again.cache_hit and again.generation == 1 and again.lds == first.lds


def test_cost_figures_are_consistent(elf_path):
    dev = Device("r9-nano", elf_path, profile="ipc1", count_memory=True, clock_mhz=500)
    res = dev.launch(load_kernel(MM))
    c = res.cost
    assert c.cycles == c.instructions, "IPC = 1 profile: one cycle per instruction"
    assert c.ns == pytest.approx(c.instructions * 2.0)  # 500 MHz: 2 ns a cycle
    reads, writes = sum(c.reads.values()), sum(c.writes.values())
    assert c.energy_nj == pytest.approx(reads * 0.0032 + writes * 0.0061)
    assert c.writes["ROM"] == 0 and c.writes["GST"] == 0


def test_describe_names_fields_and_ranges():
    assert "num_cus must be within 1..1024" in describe(Status.GST_FIELD, abi.GST.offset("num_cus"))
    assert "lds_bytes" in describe(Status.RECORD_FIELD, abi.LAUNCH_HEADER.offset("lds_bytes"))
    assert describe(Status.QUEUE_TYPE, 3).startswith("queue 3:")
    assert all(describe(s, 0) for s in Status)


def test_boot_status_answers_every_launch(elf_path):
    from quco.gst import tables
    g = tables.unpack(tables.load("r9-nano"))
    g["max_slots"] = 0
    dev = Device(tables.pack(g), elf_path)
    assert dev.boot_status == Status.GST_FIELD and "max_slots" in dev.boot_message
    res = dev.launch(load_kernel(MM))
    expected = reference.configure(dev.gst, load_kernel(MM).record())
    assert (res.status, res.detail) == (expected.status, expected.detail) == (Status.GST_FIELD, abi.GST.offset("max_slots"))
