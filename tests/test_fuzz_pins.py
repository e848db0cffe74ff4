"""Issue #34's blind spots, pinned by hand-computed cases: each ran on the firmware and the
reference model (fuzz.compare holds them to each other) and against numbers worked out here."""
import pytest

from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host import fuzz, reference
from quco.kernel.format import pack_record

S, T = abi.QUEUE_STREAMING, abi.QUEUE_STATIONARY


def header(**fields):
    return {**dict(magic=abi.LAUNCH_MAGIC, flags=0, compute_intensity=2.0, consumer_wavefronts=7), **fields}


def slots(res):
    return [q.slots for q in res.queues]


def test_a_stationary_run_does_not_count_in_the_steps_bytes(devices):
    """R9 Nano, 2 streaming queues of 65,536 x 1 B, then 2 identical stationary ones of
    65,536 x 2 B (the second joins the first's run). One step moves a tile of each streaming
    queue: 2 B per element, not 4 (stationary tiles stay put).
    At tile 2048 (the merit scan's pick): cpb = 1000 x 64 / 512,000 = 0.125; memTime = 850 +
    2048 x (2 x 0.125 + 2 x 2 / 64) = 1490; bestLatency = 2048 / (64 x 7) = 4.571, procTime =
    4.571 + 3.571 x min(6, 4) = 18.857; Little = 1490 / 18.857 / 16 = 4.94 -> 4 -> CU step
    (64 CUs: 4 x 4 x 32 < 3 x 4 x 64) 2. Stationary: avail 65,536 - 256 = 65,280; used 2 x
    4096 + 2 x 4096 (one slot each) = 16,384; room 1 + min(48,896 / 2 // 4096, (128 - 12) / 2 //
    2) = 6 -> 8 -> CU step 4 (<= room). Slots 2/2/4/4.
    With 4 B per step (the planted bug): memTime 2130, Little 7.06 -> 8 -> 4 for the streaming
    queues, room 5 -> 4 -> 2 for the stationary ones: 4/4/2/2."""
    gst = tables.load("r9-nano")
    qs = [dict(length=65536, type=S, elem_size=1)] * 2 + [dict(length=65536, type=T, elem_size=2)] * 2
    record = pack_record(header(), qs)
    p = reference.planner(gst, record)
    assert p.step_bytes == 2 and float(p.mem_time(2048, 2)) == 1490.0
    res = fuzz.compare(devices("r9-nano"), record)
    assert res.tile == 2048 and slots(res) == [2, 2, 4, 4]


def cu_step_gst(num_cus=128) -> bytes:
    """A table where the tile can only be 256 and max_slots is 16; the rest is the R9 Nano's."""
    g = tables.unpack(tables.load("r9-nano"))
    g.update(num_cus=num_cus, min_tile_elems=256, max_tile_elems=256, max_slots=16, lds_bytes=65536,
             barrier_limit=128)
    return tables.pack(g)


@pytest.mark.parametrize("active_cus,flags,expected", [
    # 4 x 16 x 32 = 2048 against 3 x s x CUs: 128 CUs halve 16 twice (s = 4: 2048 >= 1536)
    (0, abi.FLAG_NO_LITTLE, 4),
    (64, abi.FLAG_NO_LITTLE, 8),     # 2048 < 3 x 16 x 64, 2048 >= 3 x 8 x 64
    (32, abi.FLAG_NO_LITTLE, 16),    # 2048 >= 3 x 16 x 32: no step
    (0, abi.FLAG_NO_LITTLE | abi.FLAG_NO_CU_AWARE, 16),
])
def test_stationary_slots_are_cu_stepped(devices, active_cus, flags, expected):
    """One streaming and one stationary queue of 65,536 x 1 B, tile 256 (min = max), 16 slots
    at most, Little off (FLAG_NO_LITTLE: the streaming queue asks for max_slots = 16).
    Streaming: 16 -> CU step -> `expected` (the length caps at 65,536 / 256 = 256).
    Stationary: meta 128 B, avail 65,408; the streaming queue takes expected x 256 B and the
    stationary one its first 256 B; room = 1 + min(spare // 256, spare barriers // 2) >= 59
    (barriers 128 - 2 x 17 at most), so round(min(room, 16)) = 16 -> the same CU step -> `expected`
    (not 16: the room does not lower it). Issue #34: no bundled kernel gives a stationary
    queue enough slots for the step to show."""
    gst = cu_step_gst()
    qs = [dict(length=65536, type=S, elem_size=1), dict(length=65536, type=T, elem_size=1)]
    res = fuzz.compare(devices(gst), pack_record(header(flags=flags, active_cus=active_cus), qs))
    assert res.ok and res.tile == 256
    assert slots(res) == [expected, expected]


@pytest.mark.parametrize("clock,status", [(10_000, Status.OK), (10_001, Status.RECORD_FIELD),
                                          (0, Status.OK), (1, Status.OK)])
def test_record_clock_at_its_abi_bounds(devices, clock, status):
    """core_clock_mhz 0 (the GST's clock), 1 and the ABI's maximum 10,000 are accepted by both;
    10,001 is refused by both, naming the field's offset (16)."""
    qs = [dict(length=65536, type=S, elem_size=2)] * 2
    res = fuzz.compare(devices("r9-nano"), pack_record(header(core_clock_mhz=clock), qs))
    assert res.status == status
    if status != Status.OK:
        assert res.detail == abi.LAUNCH_HEADER.offset("core_clock_mhz") == 16
