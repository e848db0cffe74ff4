"""Pins for the input layer and the reference model at the exact boundaries a small
deliberate bug moves (issue #13's mutants): each expected value is worked out by hand in
the comment next to it, not taken from the code under test."""
import copy
import tomllib

import pytest

from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host import reference
from quco.kernel.format import KernelError, pack_record, parse_kernel

Q = {"type": "streaming", "length": 4096, "elem_size": 2}
PRESET = tomllib.loads((tables.PRESET_DIR / "r9-nano.toml").read_text())


def kernel_doc(queues):
    return {"name": "pins", "compute_intensity": 2.0, "queues": queues}


@pytest.mark.parametrize("counts", [[16], [8, 8], [1] * 16, [15, 1]])
def test_count_expanding_to_exactly_16_queues_is_accepted(counts):
    k = parse_kernel(kernel_doc([dict(Q, count=c) for c in counts]))
    assert len(k.queues) == 16 == abi.MAX_QUEUES
    assert abi.LAUNCH_HEADER.unpack(k.record())["num_queues"] == 16
    # the R9 Nano takes 16 queues (max_queues 16): the unit does not answer QUEUE_COUNT
    assert reference.configure(tables.load("r9-nano"), k.record()).status != Status.QUEUE_COUNT


@pytest.mark.parametrize("counts,message", [
    ([17], "queues[0].count: 17 is out of range; expected integer 1 to 16"),
    ([8, 9], "queues: 17 queues after expanding count (8 + 9); expected at most 16 in total"),
    ([16, 1], "queues: 17 queues after expanding count (16 + 1)"),
])
def test_count_expanding_to_17_queues_is_refused(counts, message):
    with pytest.raises(KernelError) as e:
        parse_kernel(kernel_doc([dict(Q, count=c) for c in counts]))
    assert message in str(e.value)


def preset(**changes) -> dict:
    doc = copy.deepcopy(PRESET)
    for key, value in changes.items():
        if key == "name":
            doc["name"] = value
        else:
            doc[key]["value"] = value
    return doc


def test_gst_name_of_31_bytes_keeps_its_terminating_nul():
    raw = tables.pack(tables.fields_from_doc(preset(name="N" * 31), "p.toml"))
    off = abi.GST.offset("name")
    assert raw[off:off + 32] == b"N" * 31 + b"\0"


def test_gst_name_of_32_bytes_has_no_room_for_the_nul():
    with pytest.raises(tables.GstFileError, match='name: "NNN.*has 32 characters.*1..31 characters'):
        tables.fields_from_doc(preset(name="N" * 32), "p.toml")


def gst(**changes) -> bytes:
    return tables.pack(tables.fields_from_doc(preset(**changes), "pins"))


def record(streaming: int, stationary: int = 0, flags: int = 0, active_cus: int = 16, length: int = 4096) -> bytes:
    header = dict(magic=abi.LAUNCH_MAGIC, flags=flags, compute_intensity=2.0, ci_class=abi.CI_CLASS_NUMBER,
                  consumer_wavefronts=7, active_cus=active_cus)
    queues = [dict(length=length, type=abi.QUEUE_STREAMING, elem_size=2)] * streaming
    queues += [dict(length=length, type=abi.QUEUE_STATIONARY, elem_size=2)] * stationary
    return pack_record(header, queues)


# The fallback: FLAG_NO_LITTLE starts every streaming queue at the R9 Nano's max_slots = 8
# (16 active CUs: the CU step keeps them), which needs 2 x 8 = 16 barriers; the queue is long
# enough (65,536 elements) to hold 8 tiles. The CI is 2.0 (medium), so the fallback
# starts at FALLBACK_SLOTS = 4 (8 barriers) and halves until the barriers fit; the LDS (64 KiB)
# never binds for one 2-byte queue at these tiles.
@pytest.mark.parametrize("barrier_limit,slots", [
    (16, 8),   # 8 slots need 16 barriers: fit exactly, no fallback
    (15, 4),   # 16 > 15: the fallback's 4 slots need 8 <= 15
    (8, 4),    # 4 slots, 8 barriers: fit exactly
    (7, 2),    # 8 > 7: halve once, 2 slots need 4
    (4, 2),    # 4 <= 4
    (3, 1),    # 4 > 3: halve twice, 1 slot needs 2
])
def test_fallback_halves_the_slots_until_the_barriers_fit(devices, barrier_limit, slots):
    table, launch = gst(barrier_limit=barrier_limit), record(1, flags=abi.FLAG_NO_LITTLE, length=1 << 16)
    model = reference.configure(table, launch)
    assert model.status == Status.OK and model.slots == [slots]
    fw = devices(table).launch(launch)
    assert fw.ok and [q.slots for q in fw.queues] == [slots] and fw.lds == model.lds


# The barrier limit: one slot per queue needs 2 barriers per queue (streaming or stationary);
# exactly the GST's barrier_limit is allowed, one more is BARRIER_LIMIT with the need as detail.
@pytest.mark.parametrize("streaming,stationary,barrier_limit,status,detail", [
    (1, 0, 2, Status.OK, 0),
    (2, 0, 4, Status.OK, 0),
    (2, 0, 3, Status.BARRIER_LIMIT, 4),
    (1, 1, 4, Status.OK, 0),
    (1, 1, 3, Status.BARRIER_LIMIT, 4),
    (8, 8, 32, Status.OK, 0),
    (8, 8, 31, Status.BARRIER_LIMIT, 32),
])
def test_barrier_limit_boundary(devices, streaming, stationary, barrier_limit, status, detail):
    table, launch = gst(barrier_limit=barrier_limit), record(streaming, stationary)
    model = reference.configure(table, launch)
    assert (model.status, model.detail) == (status, detail)
    if status == Status.OK:  # at the limit every queue gets its one slot
        assert sum(model.slots) * 2 <= barrier_limit
    fw = devices(table).launch(launch)
    assert (fw.status, fw.detail) == (status, detail)
