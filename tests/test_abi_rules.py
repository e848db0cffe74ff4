"""Each rule of the ABI is declared once, on its field in gst/abi.py, and everything else reads
it: the fuzzer's generators, the launch-record check of the reference model and of the
firmware (generated C), and a GST layout that changes must come with a new GST_VERSION."""
import dataclasses
import json
import random
from importlib.resources import files
from pathlib import Path

import pytest

from quco.gst import abi, codegen, tables
from quco.host import fuzz, reference
from quco.kernel.format import pack_record

# ---------------------------------------------------------------- the GST layout and its version
layout_fingerprint = abi.layout_fingerprint


def test_the_gst_layout_is_the_one_its_version_names():
    """abi.GST_LAYOUTS records the layout of every GST_VERSION: a changed layout needs a new one."""
    assert abi.GST_LAYOUTS.get(abi.GST_VERSION) == layout_fingerprint(abi.GST), (
        f"the GST layout changed (fingerprint {layout_fingerprint(abi.GST)}) but GST_VERSION is still "
        f"{abi.GST_VERSION}: bump GST_VERSION in gst/abi.py and add the new fingerprint to GST_LAYOUTS")
    assert abi.GST_VERSION == max(abi.GST_LAYOUTS), "GST_VERSION is the newest layout's"
    assert len(set(abi.GST_LAYOUTS.values())) == len(abi.GST_LAYOUTS), "each version names its own layout"


def test_the_fingerprint_sees_a_new_field_and_a_moved_one():
    fields = list(abi.GST.fields)
    added = abi.Struct("gst", tuple(fields[:-1] + [abi.Field("x", "u32", "new", 0, 1)] + fields[-1:]), 256, "")
    swapped = abi.Struct("gst", tuple(fields[:4] + [fields[5], fields[4]] + fields[6:]), 256, "")
    retyped = abi.Struct("gst", tuple(fields[:-2] + [abi.Field(fields[-2].name, "u16", "")] + fields[-1:]), 256, "")
    prints = {layout_fingerprint(s) for s in (abi.GST, added, swapped, retyped)}
    assert len(prints) == 4
    # a rule (range, doc) is not the layout: the version stays
    ranged = abi.Struct("gst", tuple(fields[:4] + [abi.Field(fields[4].name, "u32", "", 2, 9)] + fields[5:]), 256, "")
    assert layout_fingerprint(ranged) == layout_fingerprint(abi.GST)


# ---------------------------------------------------------------- the generators' valid share
def gst_share(make, n=400, seed=5) -> float:
    """The share of tables `make(rng)` (field values) that the boot check accepts."""
    rng = random.Random(seed)
    return sum(abi.gst_violation(tables.pack(make(rng))) is None for _ in range(n)) / n


def test_valid_gst_draws_only_tables_the_firmware_accepts():
    assert gst_share(fuzz.valid_gst) == 1.0
    assert gst_share(fuzz.realistic_gst_fields) == 1.0


def test_the_differential_fuzzer_draws_mostly_valid_tables():
    rng = random.Random(6)
    share = sum(abi.gst_violation(fuzz.gst(rng)) is None for _ in range(1000)) / 1000
    assert 0.6 <= share <= 0.9  # mostly valid, and near-valid or raw ones too


def test_valid_records_pass_the_launch_check():
    rng = random.Random(8)
    for gpu in tables.preset_names():
        g = tables.unpack(tables.load(gpu))
        for _ in range(100):
            header, queues = fuzz.valid_record(rng, g)
            launch = reference.parse_launch(pack_record(header, queues), g)  # raises on a bad record
            assert len(launch.queues) == len(queues)


@pytest.fixture
def planted(monkeypatch):
    """gst/abi.py with one more GST field, lower bound 1,024, declared nowhere else (the presets
    give it a value: they are data); the issue's experiment."""
    presets = {n: {**tables.unpack(tables.load(n)), "planted_kib": 2048} for n in tables.preset_names()}
    fields = list(abi.GST.fields)
    fields.insert(abi.GST.names.index("name"), abi.Field("planted_kib", "u32", "planted", 1024, 65536))
    gst = abi.Struct("gst", tuple(fields), abi.GST.size, abi.GST.doc)
    monkeypatch.setattr(abi, "GST", gst)
    monkeypatch.setattr(abi, "GST_CHECKED", tuple(f for f in gst.fields if f.lo is not None))
    monkeypatch.setattr(abi, "GST_SHAPED", tuple(f for f in gst.fields if f.shape))
    monkeypatch.setattr(fuzz, "_PRESETS", presets)
    return gst.field("planted_kib")


def test_a_planted_gst_field_keeps_the_valid_share(planted):
    assert gst_share(fuzz.valid_gst) == 1.0
    rng = random.Random(6)
    raws = [fuzz.gst(rng) for _ in range(1000)]
    assert sum(abi.gst_violation(r) is None for r in raws) / 1000 >= 0.6
    values = [abi.GST.unpack(r)["planted_kib"] for r in raws]
    assert min(values) < planted.lo and max(values) >= planted.lo  # its edges are drawn too


def test_the_share_falls_for_a_generator_that_ignores_the_planted_field(planted):
    """What the check above catches: a generator that leaves the new field at 0 (as the
    hand-written field list did) makes the firmware refuse most tables."""
    def ignoring(rng):
        fields = fuzz.valid_gst(rng)
        fields.pop("planted_kib", None)
        return fields
    assert gst_share(ignoring) < 0.5


@pytest.mark.parametrize("name", ["num_cus", "lds_bytes", "max_tile_elems", "cache_line_bytes"])
def test_a_field_without_a_typical_value_is_drawn_inside_its_rules(name):
    f, rng = abi.GST.field(name), random.Random(3)
    values = [fuzz.declared(f, rng, at_least=16) for _ in range(300)]
    fields = {"min_tile_elems": 16}
    assert all(f.lo <= v <= f.hi and f.shape_ok({**fields, name: v}) for v in values)
    assert len(set(values)) > 5


# ---------------------------------------------------------------- the launch-record check
GST_R9 = tables.unpack(tables.load("r9-nano"))


def header(**changes):
    return {**dict(magic=abi.LAUNCH_MAGIC, flags=0, compute_intensity=2.0, consumer_wavefronts=7, ci_class=0,
                   reserved=0, core_clock_mhz=0, active_cus=0, lds_bytes=0, num_queues=2), **changes}


@pytest.mark.parametrize("changes, status, detail", [
    ({}, None, None),
    ({"magic": 0}, abi.Status.RECORD_MAGIC, 0),
    ({"flags": 0x20, "magic": 0}, abi.Status.RECORD_MAGIC, 0),  # the magic first
    ({"flags": 0x20}, abi.Status.BAD_FLAGS, 0x20),
    ({"compute_intensity": float("nan")}, abi.Status.RECORD_FIELD, 8),
    ({"ci_class": 4, "consumer_wavefronts": 0}, abi.Status.RECORD_FIELD, 14),  # ci_class before the wavefronts
    ({"consumer_wavefronts": 65}, abi.Status.RECORD_FIELD, 12),
    ({"core_clock_mhz": 10_001}, abi.Status.RECORD_FIELD, 16),
    ({"active_cus": 65}, abi.Status.RECORD_FIELD, 20),  # r9-nano: 64 CUs
    ({"lds_bytes": 65536 + 128}, abi.Status.RECORD_FIELD, 24),  # r9-nano: 64 KiB
    ({"lds_bytes": 192}, abi.Status.RECORD_FIELD, 24),  # not a multiple of 128
    ({"lds_bytes": 65536, "active_cus": 64, "core_clock_mhz": 10_000}, None, None),
    ({"num_queues": 0}, abi.Status.QUEUE_COUNT, 0),
    ({"num_queues": 17}, abi.Status.QUEUE_COUNT, 17),
])
def test_header_rules_in_the_firmwares_order(changes, status, detail):
    """Hand-worked: which status and detail the first broken rule gives (docs/abi.md)."""
    bad = abi.header_violation(header(**changes), GST_R9)
    assert (bad and (bad.status, bad.detail)) == ((status, detail) if status is not None else None)


def test_queue_rules_in_the_firmwares_order():
    def q(**c):
        return {**dict(length=8, type=0, elem_size=4, passes=0), **c}
    assert abi.queue_violation(q(), 3) is None
    assert (abi.queue_violation(q(type=2, length=0), 3).status, abi.queue_violation(q(type=2), 3).detail) == (
        abi.Status.QUEUE_TYPE, 3)
    assert abi.queue_violation(q(length=0, elem_size=3), 1).status == abi.Status.QUEUE_LENGTH
    assert abi.queue_violation(q(elem_size=3, passes=1), 1).status == abi.Status.ELEM_SIZE
    # passes (once the reserved field) takes every value a u16 holds
    assert all(abi.queue_violation(q(passes=v), 1) is None for v in (0, 1, 2, 0x8000, 0xFFFF))


def test_the_generated_c_check_follows_the_declared_order():
    """quco_abi.h's check tests the header fields in LAUNCH_CHECKED's order and the queue's in
    QUEUE_CHECKED's (the differential tests hold its answers to the reference model's)."""
    text = "\n".join(codegen.record_check())
    fault = [f for f in abi.LAUNCH_CHECKED if f.status == "RECORD_FIELD"]
    in_fault = [text.index(f"/* {f.name}: ") for f in fault]
    assert in_fault == sorted(in_fault) and in_fault[-1] < text.index("#define QUCO_HEADER_CHECK")
    macro = text.index("#define QUCO_HEADER_CHECK")
    steps = [text.index("check_header_ranges(h, g)", macro) if f is fault[0] else text.index(f"/* {f.name}: ", macro)
             for f in abi.LAUNCH_CHECKED if f not in fault[1:]]
    assert steps == sorted(steps)
    ruled = [f for f in abi.QUEUE_CHECKED if codegen.c_broken(f, "v", "g")]
    queue = [text.index(f"/* {f.name}: ", text.index("queue_status")) for f in ruled]
    assert queue == sorted(queue)
    # a field every value of its type passes (passes) has no test in C, and is the only one
    assert [f.name for f in abi.QUEUE_CHECKED if f not in ruled] == ["passes"]
    assert "passes" not in text[text.index("queue_status"):]


def test_partition_zero_means_the_gsts_value():
    g = dict(GST_R9)
    assert abi.partition(header(), g) == {"core_clock_mhz": g["core_clock_mhz"], "active_cus": g["num_cus"],
                                          "lds_bytes": g["lds_bytes"]}
    assert abi.partition(header(active_cus=4, lds_bytes=1024), g)["lds_bytes"] == 1024


# ---------------------------------------------------------------- the schemas' bounds
def test_kernel_schema_bounds_are_written_from_the_declarations(monkeypatch):
    root = Path(__file__).resolve().parent.parent
    assert codegen.kernel_schema_text(root) == (root / codegen.KERNEL_SCHEMA).read_text(encoding="utf-8")
    path = ("properties", "partition", "properties", "lds_bytes")
    monkeypatch.setitem(codegen.SCHEMA_FIELDS, path, dataclasses.replace(abi.LAUNCH_HEADER.field("lds_bytes"),
                                                                         multiple=256, hi=1 << 17))
    node = json.loads(codegen.kernel_schema_text(root))
    for key in path:
        node = node[key]
    assert (node["multipleOf"], node["maximum"], node["minimum"]) == (256, 1 << 17, 0)


def test_the_workload_schemas_launch_bounds_are_the_abis():
    """workloads/workload.schema.json restates some launch-record bounds (a layer's partition,
    clock, wavefronts and element size): they must be the declared ones."""
    doc = json.loads((files("quco.workloads") / "workload.schema.json").read_text(encoding="utf-8"))
    item = doc["$defs"]["item"]["properties"]
    h = abi.LAUNCH_HEADER.field
    assert {k: v for k, v in item["partition"]["properties"]["active_cus"].items() if k != "type"} == \
        codegen.schema_bounds(h("active_cus"))
    assert {k: v for k, v in item["partition"]["properties"]["lds_bytes"].items() if k != "type"} == \
        codegen.schema_bounds(h("lds_bytes"))
    for key, f in (("clock_mhz", h("core_clock_mhz")), ("consumer_wavefronts", h("consumer_wavefronts"))):
        assert (item[key]["minimum"], item[key]["maximum"]) == (f.lo, f.hi)
    assert item["elem_size"] == codegen.schema_bounds(abi.QUEUE.field("elem_size"))
