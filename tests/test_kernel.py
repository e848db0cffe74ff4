"""kernel.json: schema, error messages, the bundled examples and the packed launch record."""
import json
import math
import re
import struct
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st
from jsonschema import Draft202012Validator

from conftest import EXAMPLES_DIR
from quco.gst import abi
from quco.util.schema import CONTROL
from quco.kernel.format import Kernel, KernelError, load_kernel, parse_kernel, schema

EXAMPLES = EXAMPLES_DIR
N = 16_777_216


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def ci(flops: int, traffic: int) -> float:
    return float(Fraction(flops, traffic))


# QuCo Table III inputs: problem size per GPU (vector kernels), dimensions, CI class.
M20 = 1 << 20
VECTOR_N = {"r9-nano": 16 * M20, "mi100": 30 * M20, "radeon-530": 5 * M20 // 4}  # 16M, 30M, 1.25M
CLASS = {"elementwise-k": "low", "elementwise": "low", "sumvectors": "low", "dot-product": "low",
         "matrix-vector": "low", "matrix-matrix": "high", "matrix-matrix-reduction": "high",
         "batched-matrix-matrix": "high"}
GPU_DIRS = {"r9-nano": EXAMPLES, "mi100": EXAMPLES / "mi100", "radeon-530": EXAMPLES / "radeon-530"}


def expected(stem, gpu):
    """(CI number from the dimensions, queues as (length, type code, elem_size), work-groups,
    output bytes per work-group); vector kernels: 65,536 elements per work-group. MM+Reduction
    splits K over 2 work-groups; a Batched MM work-group does its 8 rows of every product."""
    n = VECTOR_N[gpu]
    mm = {"matrix-vector": (2048, 2048, 1, 1), "matrix-matrix": (1024, 2048, 128, 1),
          "matrix-matrix-reduction": (1024, 1024, 4, 1), "batched-matrix-matrix": (1024, 1024, 4, 4)}
    if stem in mm:
        m, k, nn, batch = mm[stem]
        split = 2 if stem == "matrix-matrix-reduction" else 1
        return (ci(2 * m * k * nn, 2 * (m * k + k * nn + m * nn)), [(k, 0, 2)] * 8 + [(k, 1, 2)],
                split * m // 8, batch * 8 * nn * 2)
    if stem == "dot-product":
        return ci(2 * 2 * M20, 4 * 2 * M20 + 2), [(8192, 0, 2)] * 2, 256, 2
    reads = 1 if stem == "elementwise-k" else 2
    return ci(n, 2 * reads * n + 2 * n), [(65536, 0, 2)] * reads, n // 65536, 2 * 65536


def unpack(record: bytes):
    h = abi.LAUNCH_HEADER.unpack(record)
    qs = [abi.QUEUE.unpack(record[abi.LAUNCH_HEADER.size + abi.QUEUE.size * i:])
          for i in range(abi.MAX_QUEUES)]
    return h, qs


def minimal(**over):
    doc = {"name": "k", "compute_intensity": 1.0,
           "queues": [{"type": "streaming", "length": 64, "elem_size": 2}]}
    doc.update(over)
    return doc


def problems_of(doc) -> str:
    with pytest.raises(KernelError) as e:
        parse_kernel(doc)
    assert e.value.problems and str(e.value) == "\n".join(e.value.problems)
    return str(e.value)


# ---------------------------------------------------------------- schema and examples
def test_schema_is_valid_draft_2020_12():
    s = schema()
    Draft202012Validator.check_schema(s)
    assert s["$schema"].endswith("2020-12/schema")
    assert set(s["required"]) == {"name", "compute_intensity", "queues"}
    assert s["properties"]["queues"]["maxItems"] == abi.MAX_QUEUES


@pytest.mark.parametrize("gpu", sorted(GPU_DIRS))
def test_table_iii_examples_are_shipped_for_each_gpu(gpu):
    assert {p.stem for p in GPU_DIRS[gpu].glob("*.json")} == set(CLASS)


@pytest.mark.parametrize("gpu", sorted(GPU_DIRS))
@pytest.mark.parametrize("stem", sorted(CLASS))
def test_example_record_round_trips(stem, gpu):
    k = load_kernel(GPU_DIRS[gpu] / f"{stem}.json")
    number, want_queues, work_groups, out_bytes = expected(stem, gpu)
    # the file gives the paper's class; the number its description states is the one the dimensions give
    assert (k.ci_class, k.compute_intensity) == (CLASS[stem], 0.0)
    assert f"= {number:.8g}: class {CLASS[stem]}" in k.description
    assert k.queues == want_queues and len(k.queue_names) == len(want_queues)
    assert (k.work_groups, k.output_bytes) == (work_groups, out_bytes)
    assert k.consumer_wavefronts == 7 and k.flags == 0 and k.gpu == (None if gpu == "r9-nano" else gpu)
    assert "FLOPs" in k.description and "elem_size 2" in k.description
    rec = k.record()
    assert len(rec) == abi.LAUNCH_SIZE
    h, qs = unpack(rec)
    assert h == dict(magic=abi.LAUNCH_MAGIC, flags=0, compute_intensity=0.0, consumer_wavefronts=7,
                     ci_class=abi.CI_CLASSES[CLASS[stem]], reserved=0,
                     core_clock_mhz=0, active_cus=0, lds_bytes=0, num_queues=len(want_queues))
    assert [(q["length"], q["type"], q["elem_size"]) for q in qs[:len(want_queues)]] == want_queues
    # a queue's passes, as the file states them (0: streamed once); the unused slots are zero
    doc = json.loads((GPU_DIRS[gpu] / f"{stem}.json").read_text())
    passes = [q.get("passes", 1) for q in doc["queues"] for _ in range(q.get("count", 1))]
    assert [q["passes"] for q in qs[:len(want_queues)]] == [p if p > 1 else 0 for p in passes]
    assert rec[abi.LAUNCH_HEADER.size + abi.QUEUE.size * len(want_queues):] == bytes(
        abi.QUEUE.size * (abi.MAX_QUEUES - len(want_queues)))


def test_the_numbers_of_two_high_ci_kernels_would_class_them_medium():
    """Why the examples give the paper's classes: by FLOPs / bytes MM+Reduction and Batched MM
    sit at 3.97, under CI_HIGH = 4, and Matrix-Vector at 0.999, 0.1% under CI_LOW."""
    assert abi.const("CI_LOW") <= expected("matrix-matrix-reduction", "r9-nano")[0] < abi.const("CI_HIGH")
    assert expected("batched-matrix-matrix", "r9-nano")[0] == expected("matrix-matrix-reduction", "r9-nano")[0]
    assert 0.99 * abi.const("CI_LOW") < expected("matrix-vector", "r9-nano")[0] < abi.const("CI_LOW")
    assert expected("matrix-matrix", "r9-nano")[0] > abi.const("CI_HIGH")


def test_ci_class_or_number_reach_the_record():
    for name, code in abi.CI_CLASSES.items():
        h, _ = unpack(parse_kernel(minimal(compute_intensity=name)).record())
        assert (h["ci_class"], h["compute_intensity"]) == (code, 0.0)
    h, _ = unpack(parse_kernel(minimal(compute_intensity=3.5)).record())
    assert (h["ci_class"], h["compute_intensity"]) == (abi.CI_CLASS_NUMBER, 3.5)


def test_count_expands_names_and_defaults():
    k = parse_kernel(minimal(queues=[{"name": "A", "type": "streaming", "length": 5, "elem_size": 4, "count": 3},
                                     {"type": "stationary", "length": 7, "elem_size": 8}]))
    assert k.queues == [(5, 0, 4)] * 3 + [(7, 1, 8)]
    assert k.queue_names == ["A[0]", "A[1]", "A[2]", ""]
    assert (k.consumer_wavefronts, k.core_clock_mhz, k.active_cus, k.lds_bytes, k.gpu) == (7, 0, 0, 0, None)


def test_partition_and_ablation_reach_the_header():
    k = parse_kernel(minimal(gpu="mi100", consumer_wavefronts=64,
                             partition={"core_clock_mhz": 1200, "active_cus": 60, "lds_bytes": 32768},
                             ablation={"ci_scaling": False, "littles_law": True, "cu_aware": False, "cache": False}))
    h, _ = unpack(k.record())
    assert k.gpu == "mi100"
    assert h["flags"] == abi.FLAG_NO_CI_SCALING | abi.FLAG_NO_CU_AWARE | abi.FLAG_NO_CACHE
    assert (h["core_clock_mhz"], h["active_cus"], h["lds_bytes"], h["consumer_wavefronts"]) == (1200, 60, 32768, 64)
    all_off = parse_kernel(minimal(ablation={k: False for k in ("ci_scaling", "littles_law", "cu_aware", "cache")}))
    assert all_off.flags == abi.FLAGS_ALL & ~abi.FLAG_QUCO_PLUS  # the ablations: every flag but the rule set


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("doc, expected", [
    ({"compute_intensity": 1, "queues": [{"type": "streaming", "length": 1, "elem_size": 2}]},
     ["name: missing (required printable string of 1 to 128 characters)"]),
    (minimal(queues=[{"type": "streaming", "elem_size": 2}]),
     ["queues[0].length: missing (required integer 1 to 4294967295)"]),
    (minimal(compute_intensity="hihg"), ['compute_intensity: "hihg" is not an allowed name; expected number 0 to '
                                         '1000000 or one of "low", "medium", "high"']),
    (minimal(compute_intensity=True), ['compute_intensity: true is a boolean; expected number 0 to 1000000 or one of']),
    (minimal(consumer_wavefronts=True), ["consumer_wavefronts: true is a boolean", "integer 1 to 64"]),
    (minimal(queues=[{"type": "streaming", "length": 2.5, "elem_size": 2}]),
     ["queues[0].length: 2.5 is not a whole number", "integer 1 to 4294967295"]),
    (minimal(queues=[{"type": "streaming", "lenght": 4, "length": 4, "elem_size": 2}]),
     ["queues[0].lenght: unknown field (allowed: name, type, length, elem_size, count, passes, fresh_passes, "
      "shared_by)", 'did you mean "length"']),
    (minimal(colour="red"), ["colour: unknown field (allowed: name, description, gpu, compute_intensity"]),
    (minimal(partition={"clock": 5}), ["partition.clock: unknown field (allowed: core_clock_mhz, active_cus"]),
    (minimal(queues=[{"type": "streaming", "length": 0, "elem_size": 2}]),
     ["queues[0].length: 0 is out of range; expected integer 1 to 4294967295"]),
    (minimal(queues=[{"type": "streaming", "length": -5, "elem_size": 2}]),
     ["queues[0].length: -5 is out of range; expected integer 1 to 4294967295"]),
    (minimal(queues=[{"type": "streaming", "length": 2**32, "elem_size": 2}]),
     ["queues[0].length: 4294967296 is out of range"]),
    (minimal(queues=[{"type": "streaming", "length": 1, "elem_size": 2}] * 2 +
             [{"type": "streaming", "length": 1, "elem_size": 3}]),
     ["queues[2].elem_size: 3 is not one of 1, 2, 4, 8"]),
    (minimal(queues=[{"type": "stream", "length": 1, "elem_size": 2}]),
     ['queues[0].type: "stream" is not one of "streaming", "stationary"']),
    (minimal(compute_intensity=float("nan")), ["compute_intensity: NaN is not a finite number", "0 to 1000000"]),
    (minimal(compute_intensity=float("inf")), ["compute_intensity: Infinity is not a finite number", "0 to 1000000"]),
    (minimal(compute_intensity=-0.5), ["compute_intensity: -0.5 is out of range; expected number 0 to 1000000"]),
    (minimal(compute_intensity=2e6), ["compute_intensity: 2000000.0 is out of range; expected number 0 to 1000000"]),
    (minimal(queues=[{"type": "streaming", "length": 1, "elem_size": 2, "count": 9},
                     {"type": "stationary", "length": 1, "elem_size": 2, "count": 8}]),
     ["queues: 17 queues after expanding count (9 + 8); expected at most 16 in total"]),
    (minimal(queues=[{"type": "streaming", "length": 1, "elem_size": 2}] * 17),
     ["queues: 17 entries; expected array of 1 to 16 entries"]),
    (minimal(queues=[]), ["queues: 0 entries; expected array of 1 to 16 entries"]),
    (minimal(queues=[{"type": "streaming", "length": 1, "elem_size": 2, "count": 0}]),
     ["queues[0].count: 0 is out of range; expected integer 1 to 16"]),
    (minimal(partition={"lds_bytes": 1000}),
     ["partition.lds_bytes: 1000 is not a multiple of 128; expected integer 0 to 262144, multiple of 128"]),
    (minimal(partition={"active_cus": 2000}), ["partition.active_cus: 2000 is out of range; expected integer 0 to 1024"]),
    (minimal(ablation={"cache": "no"}), ['ablation.cache: "no" is a string; expected true or false']),
    (minimal(queues=[5]), ["queues[0]: 5 is a number; expected object with type, length, elem_size"]),
])
def test_bad_input_names_path_value_and_range(doc, expected):
    text = problems_of(doc)
    for part in expected:
        assert part in text, f"{part!r} not in {text!r}"


def test_all_problems_reported_sorted_by_path():
    doc = {"queues": [{"type": "streaming", "length": 0, "elem_size": 3}], "compute_intensity": -1, "zzz": 1}
    with pytest.raises(KernelError) as e:
        parse_kernel(doc, where="in.json")
    assert e.value.problems == [
        "in.json: compute_intensity: -1 is out of range; expected number 0 to 1000000 or one of \"low\", \"medium\", \"high\"",
        "in.json: name: missing (required printable string of 1 to 128 characters)",
        "in.json: queues[0].elem_size: 3 is not one of 1, 2, 4, 8",
        "in.json: queues[0].length: 0 is out of range; expected integer 1 to 4294967295",
        "in.json: zzz: unknown field (allowed: name, description, gpu, compute_intensity, consumer_wavefronts, "
        "queues, partition, grid, ablation)",
    ]


def test_nan_is_reported_once():
    errs = pytest.raises(KernelError, parse_kernel, minimal(compute_intensity=-math.inf)).value.problems
    assert errs == ["kernel: compute_intensity: -Infinity is not a finite number; expected number 0 to 1000000 "
                    'or one of "low", "medium", "high"']


@pytest.mark.parametrize("doc", [[1, 2], "kernel", None, 3])
def test_top_level_must_be_object(doc):
    assert "expected an object" in problems_of(doc)


@pytest.mark.parametrize("text, expected", [
    ('{"name": "k",\n  "compute_intensity": 1\n  "queues": []}', "not JSON: Expecting ',' delimiter at line 3 column 3"),
    ("", "not JSON: Expecting value at line 1 column 1"),
    ('{"name": "a", "name": "b"}', 'not JSON: duplicate field "name"'),
    ('{"name": "a", "queues": [], "queues": []}', 'not JSON: duplicate field "queues"'),  # the repeated one
])
def test_not_json(tmp_path, text, expected):
    p = tmp_path / "kernel.json"
    p.write_text(text)
    err = pytest.raises(KernelError, load_kernel, p).value
    assert str(err) == f"{p}: {expected}"


def test_nan_literal_in_file(tmp_path):
    p = tmp_path / "k.json"
    p.write_text(json.dumps(minimal(compute_intensity=float("nan"))))
    assert "NaN" in p.read_text()
    assert f"{p}: compute_intensity: NaN is not a finite number" in str(pytest.raises(KernelError, load_kernel, p).value)


def test_not_utf8_and_not_object(tmp_path):
    bad = tmp_path / "bin.json"
    bad.write_bytes(b'{"name": "\xff"}')
    assert str(pytest.raises(KernelError, load_kernel, bad).value).startswith(f"{bad}: not UTF-8")
    arr = tmp_path / "arr.json"
    arr.write_text("[1]")
    assert str(pytest.raises(KernelError, load_kernel, arr).value) == f"{arr}: the top level is an array; expected an object"


def test_unreadable_file(tmp_path):
    missing = tmp_path / "nope.json"
    assert str(pytest.raises(KernelError, load_kernel, missing).value) == f"{missing}: cannot read: No such file or directory"
    assert str(pytest.raises(KernelError, load_kernel, tmp_path).value) == f"{tmp_path}: is a folder; expected a kernel.json"


# ---------------------------------------------------------------- property: valid docs pack faithfully
# names refuse control characters: the schema's class also holds U+2028/U+2029 and unassigned U+2065..
PRINTABLE = st.characters(blacklist_categories=("Cc", "Cf", "Cs")).filter(lambda c: not re.match(CONTROL, c))
queue_st = st.fixed_dictionaries(
    {"type": st.sampled_from(["streaming", "stationary"]), "length": st.integers(1, 2**32 - 1),
     "elem_size": st.sampled_from([1, 2, 4, 8])},
    optional={"name": st.text(PRINTABLE, max_size=8), "count": st.integers(1, 4)})


@st.composite
def kernel_docs(draw):
    queues = draw(st.lists(queue_st, min_size=1, max_size=4))
    doc = {"name": draw(st.text(PRINTABLE, min_size=1, max_size=10)),
           "compute_intensity": draw(st.floats(0, 1e6, allow_nan=False) | st.integers(0, 10**6)
                                     | st.sampled_from(sorted(abi.CI_CLASSES))),
           "queues": queues}
    optional = {
        "consumer_wavefronts": st.integers(1, 64), "gpu": st.sampled_from(["r9-nano", "mi100", "gst/x.toml"]),
        "description": st.text(max_size=20),
        "partition": st.fixed_dictionaries({}, optional={
            "core_clock_mhz": st.integers(0, 10_000), "active_cus": st.integers(0, 1024),
            "lds_bytes": st.integers(0, 2048).map(lambda n: 128 * n)}),
        "ablation": st.fixed_dictionaries({}, optional={k: st.booleans() for k in
                                                        ("ci_scaling", "littles_law", "cu_aware", "cache")}),
    }
    for key, strat in optional.items():
        if draw(st.booleans()):
            doc[key] = draw(strat)
    return doc


@settings(max_examples=200, deadline=None)
@given(kernel_docs())
def test_valid_docs_parse_and_pack(doc):
    k = parse_kernel(json.loads(json.dumps(doc)))
    assert isinstance(k, Kernel)
    expanded = [q for q in doc["queues"] for _ in range(q.get("count", 1))]
    rec = k.record()
    assert len(rec) == abi.LAUNCH_SIZE
    h, qs = unpack(rec)
    part, abl = doc.get("partition", {}), doc.get("ablation", {})
    flags = sum(bit for key, bit in [("ci_scaling", abi.FLAG_NO_CI_SCALING), ("littles_law", abi.FLAG_NO_LITTLE),
                                     ("cu_aware", abi.FLAG_NO_CU_AWARE), ("cache", abi.FLAG_NO_CACHE)]
                if abl.get(key) is False)
    number = not isinstance(doc["compute_intensity"], str)
    assert h == dict(magic=abi.LAUNCH_MAGIC, flags=flags,
                     compute_intensity=f32(doc["compute_intensity"]) if number else 0.0,
                     ci_class=abi.CI_CLASS_NUMBER if number else abi.CI_CLASSES[doc["compute_intensity"]], reserved=0,
                     consumer_wavefronts=doc.get("consumer_wavefronts", 7),
                     core_clock_mhz=part.get("core_clock_mhz", 0), active_cus=part.get("active_cus", 0),
                     lds_bytes=part.get("lds_bytes", 0), num_queues=len(expanded))
    assert [(q["length"], q["type"], q["elem_size"]) for q in qs[:len(expanded)]] == [
        (q["length"], {"streaming": 0, "stationary": 1}[q["type"]], q["elem_size"]) for q in expanded]
    # passes > 1 as given, clamped to the field's 65,535; one pass (or none given) packs as 0
    assert [q["passes"] for q in qs[:len(expanded)]] == [
        min(q.get("passes", 1), 0xFFFF) if q.get("passes", 1) > 1 else 0 for q in expanded]
    assert all(q == dict(length=0, type=0, elem_size=0, passes=0) for q in qs[len(expanded):])
    assert (k.name, k.gpu, k.description) == (doc["name"], doc.get("gpu"), doc.get("description", ""))


# ---------------------------------------------------------------- edges found by bench/mutation.py
# Each case below states a value worked out by hand; each failed against a mutant of kernel/format.py
# that the suite let survive (a boundary moved by one, a default changed, a condition inverted).
def test_queue_names_number_only_the_counted_entries():
    doc = minimal(queues=[{"type": "streaming", "length": 64, "elem_size": 2, "name": "a"},
                          {"type": "streaming", "length": 64, "elem_size": 2, "name": "b", "count": 2},
                          {"type": "stationary", "length": 8, "elem_size": 4, "count": 2}])
    assert parse_kernel(doc).queue_names == ["a", "b[0]", "b[1]", "", ""]


def test_sixteen_entries_whose_counts_add_up_to_seventeen_are_refused():
    one = {"type": "streaming", "length": 64, "elem_size": 2}
    assert len(parse_kernel(minimal(queues=[one] * 16)).queues) == 16
    assert problems_of(minimal(queues=[one] * 15 + [{**one, "count": 2}])) == (
        "kernel: queues: 17 queues after expanding count (" + " + ".join(["1"] * 15 + ["2"]) +
        "); expected at most 16 in total")


def test_a_partition_of_exactly_the_whole_gpu_is_allowed():
    from quco.kernel.format import partition_problems
    g = {"num_cus": 64, "lds_bytes": 65536}
    assert partition_problems(64, 65536, g, "r9-nano") == []
    assert partition_problems(65, 65536 + 128, g, "r9-nano") == [
        "partition.active_cus: 65 is out of range; expected 0 to 64 (r9-nano's num_cus; 0 = all)",
        "partition.lds_bytes: 65664 is out of range; expected 0 to 65536 (r9-nano's lds_bytes per CU; 0 = all), "
        "a multiple of 128"]


def test_movement_problems_by_hand():
    from quco.kernel.format import movement_problems
    assert movement_problems([]) == []  # no queue: one pass, one phase
    assert movement_problems([(4, 2, 0), (2, 0, 0), (0, 0, 0)]) == []  # 0 = one pass, divides 4
    assert movement_problems([(0, 0, 0), (3, 0, 0)]) == []
    assert movement_problems([(0, 0, 0)], 2) == ["grid.phases: 2 does not divide the work-group's 1 passes"]
    assert movement_problems([(4, 3, 0)]) == ["queues[0].fresh_passes: 3 does not divide its passes (4)"]
    assert movement_problems([], 2) == ["grid.phases: 2 does not divide the work-group's 1 passes"]
    assert movement_problems([(4, 0, 0), (3, 0, 0)]) == [
        "queues[1].passes: 3 does not divide the work-group's 4 passes (the most of any queue); expected a divisor"]


def test_parse_kernel_checks_the_loop_nest_in_the_files_words():
    q = {"type": "streaming", "length": 64, "elem_size": 2}
    k = parse_kernel(minimal(queues=[q]))
    assert (k.movement, k.work_groups, k.output_bytes, k.flops_per_work_group, k.phases) == ([], 0, 0, 0, 1)
    assert parse_kernel(minimal(queues=[{**q, "passes": 3}, q])).movement == [(3, 0, 0), (1, 0, 0)]
    assert parse_kernel(minimal(queues=[{**q, "fresh_passes": 1}])).movement == [(1, 1, 0)]
    assert parse_kernel(minimal(queues=[{**q, "shared_by": 1}])).movement == [(1, 0, 1)]
    assert problems_of(minimal(queues=[{**q, "passes": 4}], grid={"work_groups": 1, "phases": 3})) == (
        "kernel: grid.phases: 3 does not divide the work-group's 4 passes")
    assert problems_of(minimal(queues=[{**q, "passes": 4, "fresh_passes": 3}])) == (
        "kernel: queues[0].fresh_passes: 3 does not divide its passes (4)")


def test_a_kernel_built_in_python_checks_its_loop_nest():
    q = (64, abi.QUEUE_STREAMING, 2)
    with pytest.raises(KernelError, match=r"^Kernel\('k'\): queues\[1\]\.passes: 3 does not divide the work-group's 4"):
        Kernel("k", 1.0, queues=[q, q], movement=[(4, 0, 0), (3, 0, 0)])
    with pytest.raises(KernelError, match=r"^Kernel\('k'\): grid\.phases: 3 does not divide the work-group's 4 passes$"):
        Kernel("k", 1.0, queues=[q], movement=[(4, 0, 0)], phases=3)
    assert Kernel("k", 1.0, queues=[q], movement=[(4, 0, 0)], phases=2).phases == 2


def test_document_writes_a_grid_for_phases_or_split_k_alone():
    q = (64, abi.QUEUE_STREAMING, 2)
    assert "grid" not in Kernel("k", 1.0, queues=[q]).document()
    phased = Kernel("k", 1.0, queues=[q], movement=[(4, 0, 0)], phases=2)
    assert phased.document()["grid"] == {"work_groups": 1, "output_bytes": 0, "flops_per_work_group": 0, "phases": 2}
    assert phased.document()["queues"] == [{"type": "streaming", "length": 64, "elem_size": 2, "passes": 4}]
    split = Kernel("k", 1.0, queues=[q], split_k=3, work_groups=3)  # split K needs the grid it splits
    assert split.document()["grid"] == {"work_groups": 3, "output_bytes": 0, "flops_per_work_group": 0, "split_k": 3}
    back = parse_kernel(phased.document())
    assert (back.phases, back.split_k, back.movement) == (2, 1, [(4, 0, 0)])
    assert parse_kernel(split.document()).split_k == 3
    once = Kernel("k", 1.0, queues=[q], movement=[(4, 1, 1)])  # fresh once, shared by one: not the defaults (0)
    assert Kernel("k", 1.0, queues=[q], movement=[(1, 1, 0)]).document()["queues"][0] == {
        "type": "streaming", "length": 64, "elem_size": 2, "fresh_passes": 1}  # one pass is the default: not written
    assert once.document()["queues"] == [{"type": "streaming", "length": 64, "elem_size": 2, "passes": 4,
                                          "fresh_passes": 1, "shared_by": 1}]


def test_a_kernel_built_in_python_takes_numpy_numbers_and_refuses_booleans():
    import numpy as np
    k = Kernel("k", np.float32(1.5), queues=[(np.int64(64), abi.QUEUE_STREAMING, np.int32(2))], active_cus=np.int64(4))
    assert json.loads(json.dumps(k.document()))["compute_intensity"] == 1.5  # plain JSON numbers
    assert k.record() == Kernel("k", 1.5, queues=[(64, abi.QUEUE_STREAMING, 2)], active_cus=4).record()
    for bad, message in ((dict(compute_intensity=True), "compute_intensity: true is a boolean"),
                         (dict(consumer_wavefronts=True), "consumer_wavefronts: true is a boolean; expected integer 1 to 64")):
        with pytest.raises(KernelError, match=re.escape(message)):
            Kernel(**{"name": "k", "compute_intensity": 1.0, "queues": [(64, 0, 2)], **bad})
    with pytest.raises(KernelError, match=re.escape('queues[0].type: 7 is not one of "streaming", "stationary"')):
        Kernel("k", 1.0, queues=[(64, 7, 2)])
