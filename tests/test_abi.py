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


# ---------------------------------------------------------------- the kernel.json schema's bounds
def _schema_bounds(node, path=()):
    """Every (path, keyword, value) of a numeric bound, enum or multipleOf in the schema."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("minimum", "maximum", "multipleOf", "minItems", "maxItems") or (k == "enum" and all(
                    isinstance(x, int) for x in v)):
                yield path, k, v
            else:
                yield from _schema_bounds(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _schema_bounds(v, path + (i,))


def _field_bounds(s, name):
    f = s.field(name)
    return {"minimum": f.lo, "maximum": f.hi}


H, Q = abi.LAUNCH_HEADER, abi.QUEUE
# Where each bound of kernel.json comes from in gst/abi.py (or why it is not the unit's): the
# record's are written there by codegen (codegen.SCHEMA_FIELDS); this also catches a bound the
# schema gains without an origin.
SCHEMA_ORIGIN = {
    ("properties", "compute_intensity", "anyOf", 0): _field_bounds(H, "compute_intensity"),
    ("properties", "consumer_wavefronts"): _field_bounds(H, "consumer_wavefronts"),
    ("properties", "queues"): {"minItems": H.field("num_queues").lo, "maxItems": abi.MAX_QUEUES},
    ("properties", "partition", "properties", "core_clock_mhz"): _field_bounds(H, "core_clock_mhz"),
    ("properties", "partition", "properties", "active_cus"): _field_bounds(H, "active_cus"),
    ("properties", "partition", "properties", "lds_bytes"): {**_field_bounds(H, "lds_bytes"),
                                                             "multipleOf": abi.LDS_ALIGN},
    ("$defs", "queue", "properties", "length"): _field_bounds(Q, "length"),
    ("$defs", "queue", "properties", "elem_size"): {"enum": list(abi.ELEM_SIZES)},
    ("$defs", "queue", "properties", "count"): {"minimum": 1, "maximum": abi.MAX_QUEUES},
    # the performance model's, not the unit's: the launch record carries only passes, clamped to
    # its u16 field (kernel/format.py), so the schema's bound is the model's
    ("properties", "grid", "properties", "work_groups"): {"minimum": 1, "maximum": 0xFFFFFFFF},
    ("properties", "grid", "properties", "flops_per_work_group"): {"minimum": 0, "maximum": 10 ** 15},
    ("properties", "grid", "properties", "output_bytes"): {"minimum": 0, "maximum": 0xFFFFFFFF},
    ("properties", "grid", "properties", "phases"): {"minimum": 1, "maximum": 65536},
    ("properties", "grid", "properties", "split_k"): {"minimum": 1, "maximum": 65536},
    ("$defs", "queue", "properties", "passes"): {"minimum": 1, "maximum": 1 << 20},
    ("$defs", "queue", "properties", "fresh_passes"): {"minimum": 1, "maximum": 1 << 20},
    ("$defs", "queue", "properties", "shared_by"): {"minimum": 1, "maximum": 0xFFFFFFFF},
}


def test_every_bound_of_the_kernel_schema_is_the_abis():
    from quco.kernel import format as kernel
    found = list(_schema_bounds(kernel.schema()))
    assert len(found) >= 15
    for path, keyword, value in found:
        origin = SCHEMA_ORIGIN.get(path)
        assert origin is not None and keyword in origin, f"{'/'.join(map(str, path))}: {keyword} {value} has no origin in abi.py"
        assert value == origin[keyword], f"{'/'.join(map(str, path))}: {keyword} {value}, abi.py says {origin[keyword]}"
