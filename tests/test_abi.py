"""The ABI is declared once (gst/abi.py); generated files must match it."""
import struct
from pathlib import Path

from quco.gst import abi, codegen

ROOT = Path(__file__).resolve().parent.parent


def test_generated_files_are_current():
    assert codegen.main(["--check", "--root", str(ROOT)]) == 0, "run `make firmware` to regenerate firmware/include/quco_abi.h"


def test_stale_check_notices_a_changed_constant(monkeypatch):
    before = codegen.header_text()
    monkeypatch.setitem(abi.CONSTANTS, "COST_A", (0.75, "f", "changed"))
    after = codegen.header_text()
    assert before != after
    assert before.splitlines()[0] != after.splitlines()[0], "banner hash must follow the content"


def test_struct_sizes_and_offsets_match_the_declared_layouts():
    assert abi.GST.used <= abi.GST.size == 256
    assert struct.calcsize(abi.GST.fmt) == 256
    assert abi.GST.offset("checksum") == 8 and abi.GST.offset("name") + 32 <= 256
    assert abi.LAUNCH_HEADER.used == abi.LAUNCH_HEADER.size == 32
    assert abi.QUEUE_DESC.used == 16 and abi.ATT_DESC.used == abi.ATT_DESC.size == 24
    assert abi.LAUNCH_SIZE == 32 + 16 * 8
    assert abi.MAILBOX_RECORD + abi.LAUNCH_SIZE <= abi.MAILBOX.size


def test_header_declares_every_struct_field_with_offset_asserts():
    text = codegen.header_text()
    for s in (abi.GST, abi.LAUNCH_HEADER, abi.QUEUE, abi.LDS_HEADER, abi.QUEUE_DESC, abi.ATT_DESC):
        for f in s.fields:
            assert f"__builtin_offsetof(quco_{s.name}_t, {f.name}) == {s.offset(f.name)}" in text


def test_pack_unpack_round_trip():
    values = dict(magic=abi.LAUNCH_MAGIC, flags=3, compute_intensity=0.5, consumer_wavefronts=8, ci_class=3, reserved=0,
                  core_clock_mhz=700, active_cus=4, lds_bytes=1024, num_queues=2)
    assert abi.LAUNCH_HEADER.unpack(abi.LAUNCH_HEADER.pack(values)) == values
