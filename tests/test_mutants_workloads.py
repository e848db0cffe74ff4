"""Issue #28 part 5, workloads side: tests written for the survivors of the mutation campaign
over workloads/ (bench/mutation.py; docs/testing.md, "Mutation campaign over workloads/").
Each states its expectation independently of the code's formula: shapes, FLOPs, bytes and
output sizes computed by hand in the comments, the unit's own CI classification (the
reference model), and the derivation text `quco-emu run --explain` and `--json` show.
"""
import json
import math

import pytest

from conftest import EXAMPLES_DIR
from quco.gst import abi, tables
from quco.host import reference
from quco.kernel.format import load_kernel
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work
from quco.workloads import baselines, derive, dvfs, format, runner

CLASS_WORD = {abi.CI_CLASS_LOW: "low", abi.CI_CLASS_MEDIUM: "medium", abi.CI_CLASS_HIGH: "high"}


@pytest.fixture
def fresh_derivations():
    """format remembers derived layer types by body across workloads; a body derived earlier in
    the session (or in mutmut's clean run) would be looked up, not derived, here."""
    format._derived_by_body.cache_clear()
    yield
    format._derived_by_body.cache_clear()


# ---------------------------------------------------------------- GEMM derivation text
# Every number below is worked out by hand from the shapes (fp16: 2 B an element, 8 rows a
# work-group); CI = 2 x batch x M K N / (2 B x batch x (MK + KN + MN)).
GEMM_CASES = [
    # a batch of 2: 2 x ceil(64/8) = 16 work-groups; 16 columns of B, each one pass;
    # CI = 131,072 / (2 x 2 x 3,584 = 14,336) = 9.14286 > 4: high
    ((64, 32, 16, 2), [
        "GEMM C[64,16] = A[64,32] x B[32,16], batch 2",
        "streamed operand: A (M rows); 8 of its rows per work-group -> 8 streaming queues of K = 32 elements",
        "other operand: 1 stationary queue of K = 32 elements",
        "work-groups = 2 x ceil(64 / 8) = 16",
        "FLOPs per work-group = 2 x 8 x 32 x 16 = 8,192; output = 8 x 16 x 2 B = 256 B",
        "data movement: 16 passes, one per column of the other operand; the 8 rows pass again each time "
        "(L2 re-reads), each column is read by the 8 work-groups of its product",
        "CI = 2 x 2 x 64 x 32 x 16 / (2 x 2 x (64x32 + 32x16 + 64x16)) = 131,072 / 14,336 = 9.14286 FLOPs/byte "
        "(high, classified by the unit)"]),
    # square, M = N: A is streamed (M >= N); CI = 3,456 / 864 = 4 exactly, not above CI_HIGH: medium
    ((12, 12, 12, 1), [
        "GEMM C[12,12] = A[12,12] x B[12,12]",
        "streamed operand: A (M rows); 8 of its rows per work-group -> 8 streaming queues of K = 12 elements",
        "other operand: 1 stationary queue of K = 12 elements",
        "work-groups = 1 x ceil(12 / 8) = 2",
        "FLOPs per work-group = 2 x 8 x 12 x 12 = 2,304; output = 8 x 12 x 2 B = 192 B",
        "data movement: 12 passes, one per column of the other operand; the 8 rows pass again each time "
        "(L2 re-reads), each column is read by the 2 work-groups of its product",
        "CI = 2 x 1 x 12 x 12 x 12 / (2 x 1 x (12x12 + 12x12 + 12x12)) = 3,456 / 864 = 4 FLOPs/byte "
        "(medium, classified by the unit)"]),
    # 3 x 3 x 3: fewer rows than 8 (3 queues); CI = 54 / 54 = 1 exactly, not below CI_LOW: medium
    ((3, 3, 3, 1), [
        "GEMM C[3,3] = A[3,3] x B[3,3]",
        "streamed operand: A (M rows); 3 of its rows per work-group -> 3 streaming queues of K = 3 elements",
        "other operand: 1 stationary queue of K = 3 elements",
        "work-groups = 1 x ceil(3 / 3) = 1",
        "FLOPs per work-group = 2 x 3 x 3 x 3 = 54; output = 3 x 3 x 2 B = 18 B",
        "data movement: 3 passes, one per column of the other operand; the 3 rows pass again each time "
        "(L2 re-reads), each column is read by the 1 work-groups of its product",
        "CI = 2 x 1 x 3 x 3 x 3 / (2 x 1 x (3x3 + 3x3 + 3x3)) = 54 / 54 = 1 FLOPs/byte (medium, classified by the unit)"]),
    # one token through a 384 -> 1536 layer: N > M, B^T's 1,536 columns are streamed, a single
    # pass; CI = 1,179,648 / (2 x 591,744 = 1,183,488) = 0.996755 < 1: low
    ((1, 384, 1536, 1), [
        "GEMM C[1,1536] = A[1,384] x B[384,1536]",
        "streamed operand: B^T (N columns of B, the product transposed); 8 of its rows per work-group -> "
        "8 streaming queues of K = 384 elements",
        "other operand: 1 stationary queue of K = 384 elements",
        "work-groups = 1 x ceil(1,536 / 8) = 192",
        "FLOPs per work-group = 2 x 8 x 384 x 1 = 6,144; output = 8 x 1 x 2 B = 16 B",
        "data movement: one pass; the stationary operand is read by the 192 work-groups of its product",
        "CI = 2 x 1 x 1 x 384 x 1536 / (2 x 1 x (1x384 + 384x1536 + 1x1536)) = 1,179,648 / 1,183,488 "
        "= 0.996755 FLOPs/byte (low, classified by the unit)"]),
    # two columns of B: two passes, the smallest count that is more than one;
    # CI = 8,192 / (2 x (2,048 + 64 + 128) = 4,480) = 1.82857
    ((64, 32, 2, 1), [
        "GEMM C[64,2] = A[64,32] x B[32,2]",
        "streamed operand: A (M rows); 8 of its rows per work-group -> 8 streaming queues of K = 32 elements",
        "other operand: 1 stationary queue of K = 32 elements",
        "work-groups = 1 x ceil(64 / 8) = 8",
        "FLOPs per work-group = 2 x 8 x 32 x 2 = 1,024; output = 8 x 2 x 2 B = 32 B",
        "data movement: 2 passes, one per column of the other operand; the 8 rows pass again each time "
        "(L2 re-reads), each column is read by the 8 work-groups of its product",
        "CI = 2 x 1 x 64 x 32 x 2 / (2 x 1 x (64x32 + 32x2 + 64x2)) = 8,192 / 4,480 = 1.82857 FLOPs/byte "
        "(medium, classified by the unit)"]),
]


@pytest.mark.parametrize("shape,expected", GEMM_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else "")
def test_gemm_derivation_states_the_hand_computed_numbers(shape, expected):
    m, k, n, batch = shape
    kernel, lines = derive.gemm("g", m, k, n, batch)
    assert lines == expected
    # the class the text names is the one the unit gives the CI it is launched with
    word = expected[-1].rsplit("(", 1)[1].split(",")[0]
    assert CLASS_WORD[reference.ci_class(reference.f32(kernel.compute_intensity), abi.CI_CLASS_NUMBER)] == word


def test_the_ci_class_word_follows_the_unit_on_both_sides_of_each_threshold():
    # CI of an n x n x n fp16 GEMM is n / 3: 2 n^3 FLOPs over 2 B x 3 n^2
    for n, word in ((2, "low"), (3, "medium"), (4, "medium"), (12, "medium"), (13, "high"), (30, "high")):
        kernel, lines = derive.gemm("g", n, n, n)
        assert kernel.compute_intensity == pytest.approx(n / 3, rel=1e-12)
        assert lines[-1].endswith(f"({word}, classified by the unit)")


# ---------------------------------------------------------------- GEMM kernel fields
def test_the_consumer_wavefronts_reach_the_kernel():
    kernel, _ = derive.gemm("g", 64, 32, 16, wavefronts=3)
    assert kernel.consumer_wavefronts == 3
    kernel, _ = derive.gemm("g", 64, 32, 16)
    assert kernel.consumer_wavefronts == 7    # 512 work-items: 8 wavefronts, one the producer


def test_a_layers_consumer_wavefronts_and_rows_reach_its_kernel(fresh_derivations):
    doc = {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 32, "n": 16},
                                    "consumer_wavefronts": 5, "rows_per_work_group": 4}]}
    kernel = format.parse(doc).layers[0].kernel
    # 4 rows a work-group: 4 streaming queues + 1 stationary, ceil(64 / 4) = 16 work-groups
    assert kernel.consumer_wavefronts == 5
    assert [t for _, t, _ in kernel.queues] == [abi.QUEUE_STREAMING] * 4 + [abi.QUEUE_STATIONARY]
    assert kernel.work_groups == 16


@pytest.mark.parametrize("m,n", [(64, 16), (1, 1536), (12, 12)])
def test_the_streamed_rows_are_one_operand_and_the_stationary_queue_another(m, n):
    """The rows a work-group streams are rows of one matrix (the model moves them as one 2-D
    box and counts one stream for them); the stationary queue carries the other matrix."""
    kernel, _ = derive.gemm("g", m, 32, n)
    work = Work.of(kernel)
    rows = [work.operand(i) for i in range(len(work.queues) - 1)]
    assert len(rows) == min(8, max(m, n)) and len(set(rows)) == 1
    assert work.operand(len(work.queues) - 1) != rows[0]


def test_two_columns_re_read_the_rows_in_the_second_pass():
    # C[64,2]: each work-group's 8 rows of A pass once per column of B, 2 passes; only the first
    # brings data the work-group has not read (the second re-reads the same rows); each column
    # of B is new in its pass and read by the ceil(64 / 8) = 8 work-groups
    kernel, _ = derive.gemm("g", 64, 32, 2)
    work = Work.of(kernel)
    rows, column = work.queues[:-1], work.queues[-1]
    assert [(q.passes, q.fresh_passes) for q in rows] == [(2, 1)] * 8
    assert [q.is_fresh(p) for p in range(2) for q in rows[:1]] == [True, False]
    assert (column.passes, column.fresh_passes, column.sharers) == (2, 2, 8)


# ---------------------------------------------------------------- convolution
def conv(**fields):
    return {"in_channels": 4, "out_channels": 6, "kernel": [3], "input": [10], **fields}


def test_dilation_widens_the_kernels_reach():
    # kernel 3 at dilation 2 reaches 2 x (3 - 1) + 1 = 5 inputs: windows at 0..5 of 10, 6 outputs
    g, lines = derive.conv_gemm(conv(dilation=[2]))
    assert g == {"m": 6, "k": 12, "n": 6, "batch": 1}
    assert lines == ["conv1d 4 -> 6 channels, kernel [3], stride [1], padding [0], input [10] -> output [6]",
                     "im2col: M = 1 x 6 = 6, K = 4 x 3 = 12, N = 6"]
    # 2-D, dilation 3 on the second axis: reach 3 x 2 + 1 = 7 of 12 -> 6; the first axis 10 - 2 = 8
    g, _ = derive.conv_gemm({"in_channels": 2, "out_channels": 2, "kernel": [3, 3], "input": [10, 12],
                             "dilation": [1, 3]})
    assert g["m"] == 8 * 6


def test_a_grouped_conv_derivation_in_whole_numbers():
    # 8 -> 16 channels in 2 groups, 3x3 over 10x12, batch 4: output 8 x 10;
    # M = 4 x 8 x 10 = 320, K = 8 / 2 x 3 x 3 = 36, N = 16 / 2 = 8, 2 products
    g, lines = derive.conv_gemm({"in_channels": 8, "out_channels": 16, "kernel": [3, 3], "input": [10, 12],
                                 "groups": 2, "batch": 4})
    assert g == {"m": 320, "k": 36, "n": 8, "batch": 2}
    assert all(type(v) is int for v in g.values())   # element counts, not 36.0
    assert lines == ["conv2d 8 -> 16 channels, kernel [3, 3], stride [1, 1], padding [0, 0], input [10, 12] "
                     "-> output [8, 10], groups 2",
                     "im2col: M = 4 x 8 x 10 = 320, K = 4 x 3 x 3 = 36, N = 8, 2 products"]
    kernel, _ = derive.gemm("c", **g)
    assert all(type(n) is int for n, _, _ in kernel.queues)
    assert len(kernel.record()) == abi.LAUNCH_SIZE


def test_a_conv_layers_derivation_is_the_im2col_then_the_gemm(fresh_derivations):
    # 1 -> 1 channel, kernel 3 over 3 with stride 1: a single output (the smallest valid conv)
    doc = {"name": "w", "layers": [{"name": "c", "conv": {"in_channels": 1, "out_channels": 1, "kernel": [3],
                                                           "input": [3]}}]}
    layer = format.parse(doc).layers[0]
    assert layer.derivation[:2] == ["conv1d 1 -> 1 channels, kernel [3], stride [1], padding [0], input [3] -> output [1]",
                                    "im2col: M = 1 x 1 = 1, K = 1 x 3 = 3, N = 1"]
    assert layer.derivation[2] == "GEMM C[1,1] = A[1,3] x B[3,1]"
    assert (layer.kernel.work_groups, layer.kernel.flops_per_work_group) == (1, 2 * 1 * 3 * 1)


@pytest.mark.parametrize("fields,out", [
    (dict(kernel=[3], input=[3]), [1]),                        # the kernel covers the input exactly
    (dict(kernel=[3], input=[1], padding=[1]), [1]),           # 1 + 2 x 1 = 3 padded inputs
    (dict(kernel=[2, 5], input=[2, 9], stride=[1, 4]), [1, 2]),  # (9 - 5) // 4 + 1 = 2
])
def test_a_conv_with_an_output_of_one_is_accepted(fields, out):
    g, lines = derive.conv_gemm(conv(**fields))
    assert g["m"] == out[0] * (out[1] if len(out) > 1 else 1)
    assert f"-> output {out}" in lines[0]


def test_a_conv_smaller_than_its_kernel_names_the_input_and_the_reach():
    with pytest.raises(ValueError, match=r"^conv.input\[0\]: 2 is smaller than the kernel's reach 3 after padding 0; "
                                         r"expected an output of at least 1$"):
        derive.conv_gemm(conv(kernel=[3], input=[2]))


@pytest.mark.parametrize("key,value", [("kernel", [3]), ("stride", [2]), ("padding", [1]), ("dilation", [2]),
                                       ("kernel", [3, 3, 3])])
def test_a_per_dimension_list_of_the_wrong_length_is_refused(key, value):
    c = {"in_channels": 4, "out_channels": 4, "kernel": [3, 3], "input": [10, 12], key: value}
    with pytest.raises(ValueError, match=rf"^conv.{key}: {len(value)} entries; expected 2, one per entry of conv.input$"):
        derive.conv_gemm(c)


def test_a_workload_conv_with_a_short_stride_names_its_layer_and_field(fresh_derivations):
    doc = {"name": "w", "layers": [{"name": "c2", "conv": {"in_channels": 4, "out_channels": 4, "kernel": [3, 3],
                                                            "input": [10, 12], "stride": [2]}}]}
    with pytest.raises(format.WorkloadError) as e:
        format.parse(doc)
    assert "conv.stride: 1 entries; expected 2, one per entry of conv.input" in str(e.value)
    assert "c2" in str(e.value)


@pytest.mark.parametrize("ins,outs,groups,key,value", [(6, 8, 4, "in_channels", 6), (8, 6, 4, "out_channels", 6)])
def test_channels_not_a_multiple_of_the_groups_are_refused(ins, outs, groups, key, value):
    with pytest.raises(ValueError, match=rf"^conv.{key}: {value} is not a multiple of conv.groups = {groups}$"):
        derive.conv_gemm(conv(in_channels=ins, out_channels=outs, groups=groups))


# ---------------------------------------------------------------- DVFS traces (workloads/dvfs.py)
BUNDLED_TRACES = ["mi100-decrease-hold", "mi100-decreasing", "mi100-u-shaped"]   # examples/workloads/dvfs/


def test_the_bundled_traces_are_listed_by_name():
    assert dvfs.bundled() == BUNDLED_TRACES
    with pytest.raises(format.WorkloadError) as e:
        dvfs.load_trace("")
    assert e.value.problems == ["no DVFS trace given (an empty name); expected a file or one of "
                                "mi100-decrease-hold, mi100-decreasing, mi100-u-shaped"]


def test_a_missing_trace_names_itself_and_the_bundled_ones(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(format.WorkloadError) as e:
        dvfs.load_trace(path)
    assert e.value.problems == [f"{path}: no such DVFS trace file and no bundled trace of that name "
                                "(bundled: mi100-decrease-hold, mi100-decreasing, mi100-u-shaped)"]


def test_a_file_named_like_a_bundled_trace_is_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mi100-u-shaped").write_text(json.dumps({"name": "mine", "clocks_mhz": [900]}))
    trace = dvfs.load_trace("mi100-u-shaped")
    assert (trace.name, trace.clocks_mhz, trace.path) == ("mine", [900], "mi100-u-shaped")
    bundled = dvfs.load_trace("mi100-decreasing")   # no such file here: the bundled trace
    assert bundled.gpu == "mi100" and bundled.path.endswith("mi100-decreasing.json")


def test_a_traces_fields_and_their_defaults(tmp_path):
    full, bare = tmp_path / "full.json", tmp_path / "bare.json"
    full.write_text(json.dumps({"name": "f", "gpu": "r9-nano", "description": "two steps", "clocks_mhz": [1000, 800]}))
    bare.write_text(json.dumps({"name": "b", "clocks_mhz": [700]}))
    t = dvfs.load_trace(full)
    assert (t.name, t.clocks_mhz, t.gpu, t.description, t.path) == ("f", [1000, 800], "r9-nano", "two steps", str(full))
    t = dvfs.load_trace(bare)
    assert (t.gpu, t.description, t.path) == (None, "", str(bare))


def test_a_trace_file_is_at_most_one_mib(tmp_path):
    body = json.dumps({"name": "big", "clocks_mhz": [1000]})
    path = tmp_path / "big.json"
    path.write_text(body + " " * ((1 << 20) - len(body)))        # exactly 1,048,576 bytes: read
    assert dvfs.load_trace(path).name == "big"
    path.write_text(body + " " * ((1 << 20) + 1 - len(body)))    # one more: refused, unread
    with pytest.raises(format.WorkloadError) as e:
        dvfs.load_trace(path)
    assert e.value.problems == [f"{path}: larger than 1,048,576 bytes; expected a DVFS trace file"]


def test_a_folder_is_no_dvfs_trace_file(tmp_path):
    with pytest.raises(format.WorkloadError) as e:
        dvfs.load_trace(tmp_path)
    assert e.value.problems == [f"{tmp_path}: is a folder; expected a DVFS trace file"]


@pytest.fixture
def boosted(tmp_path):
    """Two Elementwise layers on 32 of the R9 Nano's 64 CUs with 32 KiB of LDS, at the GST's
    1,000 MHz and boosted to 1,200 MHz; the unit clocked at 350 MHz (half the default). Built
    per test, not once per module: mutmut credits the calls a shared fixture makes to the first
    test that used it, and runs only that one on a mutant of dvfs.compare."""
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "d", "layers": [
        {"name": "ew", "kernel_file": str(EXAMPLES_DIR / "elementwise.json"), "repeat": 2}]}))
    w = format.load(path)
    trace = dvfs.Trace("boost", [1000, 1200])
    hw_session = runner.Session("r9-nano", clock_mhz=350)
    hw_steps = runner.run(hw_session, [runner.Tenant(w, 32, 32768, clocks=trace.clocks(2), tell_clock=True)])
    res = dvfs.compare("r9-nano", w, trace, active_cus=32, lds_bytes=32768, hw_run=(hw_session, hw_steps),
                       clock_mhz=350)
    return res, hw_steps


def test_dvfs_reuses_the_given_hw_run_and_runs_sw_with_the_same_options(boosted):
    res, hw_steps = boosted
    assert set(res["steps"]) == {"hw", "sw"} and res["steps"]["hw"] is hw_steps   # QuCo-HW not run twice
    for s in res["steps"]["sw"]:   # the unit at 350 MHz: each cycle 1,000 / 350 ns
        assert s.reconf_cycles > 0 and s.reconf_ns == pytest.approx(s.reconf_cycles * 1000 / 350, rel=1e-12)
        assert (s.active_cus, s.lds_bytes) == (32, 32768)
    assert [r["type"] for r in res["rows"]] == ["ew", "ew"]


def test_the_dvfs_summary_from_its_rows(boosted):
    res, _ = boosted
    rows, summary = res["rows"], res["summary"]
    speedups = [r["sw_ns"] / r["hw_ns"] for r in rows]
    assert summary["hw_speedup_geomean"] == pytest.approx(math.exp(sum(map(math.log, speedups)) / len(rows)))
    assert summary["layers_config_differs"] == sum(r["hw_config"] != r["sw_config"] for r in rows)
    gains = [r["fine_nominal_ns"] / r["fine_ns"] for r in rows]
    top = max(range(len(rows)), key=lambda i: gains[i])
    assert (summary["max_clock_aware_gain"], summary["max_clock_aware_at"]) == (pytest.approx(gains[top]), rows[top]["name"])
    assert summary["clock_aware_gain_total"] == pytest.approx(sum(r["fine_nominal_ns"] for r in rows)
                                                              / sum(r["fine_ns"] for r in rows))


def test_the_clock_aware_oracle_searches_the_layers_partition_and_clock(boosted):
    """fine_ns: the exhaustive best on the layer's partition (32 CUs, 32 KiB) at its clock;
    fine_nominal_ns: the best for the GST's clock, run at the layer's clock."""
    res, _ = boosted
    g = tables.unpack(tables.load("r9-nano"))
    work = Work.of(load_kernel(EXAMPLES_DIR / "elementwise.json"))
    for row, clock in zip(res["rows"], (1000, 1200)):
        here, nominal = machine(g, clock, 32, 32768), machine(g, 0, 32, 32768)
        best = search.exhaustive(here, g, work)[0]
        best_nominal = search.exhaustive(nominal, g, work)[0].config
        assert row["fine_ns"] == pytest.approx(best.outcome.ns, rel=1e-12)
        assert row["fine_config"] == best.config.label(work)
        assert row["fine_nominal_config"] == best_nominal.label(work)
        assert row["fine_nominal_ns"] == pytest.approx(simulate(here, work, best_nominal).ns, rel=1e-12)


# ---------------------------------------------------------------- baselines (workloads/baselines.py)
def semi(first_cfg, first_work, work, lds):
    m = machine(tables.unpack(tables.load("r9-nano")), 0, 0, lds)
    return baselines.semi_config(first_cfg, first_work, m, work)


def test_semi_tuned_halves_the_first_layers_tile_until_it_fits():
    # the first layer's tile 256, 2 slots per streaming queue, 1 stationary, on a GEMM with 9
    # fp16 queues; LDS of tile t: 8 x align128(2 x t x 2 B) + align128(t x 2 B) + 512 B of
    # header and descriptors. t = 256: 8,192 + 512 + 512 = 9,216; t = 128: 4,096 + 256 + 512 = 4,864;
    # t = 64: 2,048 + 128 + 512 = 2,688; t = 32: 1,024 + 128 + 512 = 1,664
    first = Work.of(derive.gemm("a", 64, 32, 16)[0])
    target = Work.of(derive.gemm("b", 64, 4096, 16)[0])
    cfg = Config(256, (2,) * 8 + (1,))
    for lds, tile in ((16384, 256), (8192, 128), (4096, 64), (2048, 32)):
        got, adapted = semi(cfg, first, target, lds)
        assert type(got.tile) is int and (got.tile, got.slots, adapted) == (tile, cfg.slots, tile != 256)


def test_semi_tuned_goes_down_to_a_tile_of_one():
    # 2 fp64 queues of 16 slots (one row a work-group); tile t: 2 x align128(16 x t x 8 B) + 128 B:
    # t = 2: 640 B, t = 1: 384 B. In 512 B only a tile of 1 fits; in 256 B nothing does
    work = Work.of(derive.gemm("b", 64, 4096, 16, elem_size=8, rows=1)[0])
    cfg = Config(4, (16, 16))
    assert semi(cfg, work, work, 640) == (Config(2, (16, 16)), True)
    assert semi(cfg, work, work, 512) == (Config(1, (16, 16)), True)
    assert semi(cfg, work, work, 256) is None


def test_per_type_rows_sum_their_layers(tmp_path):
    """by_type (Fig. 9): one row per layer type, its layers counted and their times summed; a
    type with a layer no baseline fits has no total for that baseline."""
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [
        {"name": "up", "gemm": {"m": 256, "k": 64, "n": 128}, "repeat": 2},
        {"name": "mv", "gemm": {"m": 1, "k": 512, "n": 512}}]}))
    session = runner.Session("r9-nano")
    steps = runner.run(session, [runner.Tenant(format.load(path))])
    baselines.compare(steps, session)
    rows = baselines.by_type(steps)
    assert [(r["type"], r["count"]) for r in rows] == [("up", 2), ("mv", 1)]
    for r, mine in ((rows[0], steps[:2]), (rows[1], steps[2:])):
        assert r["quco_config"] == mine[0].label
        assert (r["semi_config"], r["fine_config"]) == (mine[0].extra["semi_config"], mine[0].extra["fine_config"])
        assert r["quco_ns"] == pytest.approx(sum(s.run_ns for s in mine), rel=1e-12)
        assert r["fine_ns"] == pytest.approx(sum(s.extra["fine_ns"] for s in mine), rel=1e-12)
        assert r["semi_ns"] == pytest.approx(sum(s.extra["semi_ns"] for s in mine), rel=1e-12)
        assert r["quco_vs_fine"] == pytest.approx(r["fine_ns"] / r["quco_ns"], rel=1e-12)
        assert r["quco_vs_semi"] == pytest.approx(r["semi_ns"] / r["quco_ns"], rel=1e-12)
    steps[1].extra["semi_ns"] = None     # one layer of "up" without a Semi-Tuned time
    up = baselines.by_type(steps)[0]
    assert up["semi_ns"] is None and up["quco_vs_semi"] is None and up["fine_ns"] is not None


def geo(values):
    values = [v for v in values if v is not None]
    return math.exp(sum(map(math.log, values)) / len(values))


def test_baseline_columns_and_summary_on_the_model(tmp_path):
    """compare() against the model run here: ATT/Fine-Tuned is each layer's exhaustive best at
    its clock; ATT/Semi-Tuned the first layer's best, its tile halved where it does not fit
    (a) itself, (b) the same queues at 1,200 MHz, (c) 16 fp64 queues: 16 x 7 slots x 2 barriers
    = 224 > the R9 Nano's 128, no tile fits, (d) 9 fp64 queues: 9 x 7 x 512 x 8 B = 258,048 B
    of LDS, 256: 129,024, 128: 9 x 7,168 + 512 = 65,024 <= 65,536: a tile of 128."""
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [
        {"name": "a", "gemm": {"m": 64, "k": 32, "n": 16}},
        {"name": "b", "gemm": {"m": 64, "k": 4096, "n": 16}, "clock_mhz": 1200},
        {"name": "c", "gemm": {"m": 64, "k": 4096, "n": 16}, "rows_per_work_group": 15, "elem_size": 8},
        {"name": "d", "gemm": {"m": 64, "k": 64, "n": 16}, "elem_size": 8}]}))
    session = runner.Session("r9-nano")
    steps = runner.run(session, [runner.Tenant(format.load(path))])
    summary = baselines.compare(steps, session)[0]
    g = tables.unpack(tables.load("r9-nano"))
    ms = [machine(g, s.layer.clock_mhz) for s in steps]
    first = search.exhaustive(ms[0], g, steps[0].work)[0].config
    assert first.label(steps[0].work) == "512 / 7+7"   # the model's pick today; (d)'s arithmetic assumes it
    semi = {"a": first, "b": first, "c": None, "d": Config(128, first.slots)}
    for s, m in zip(steps, ms):
        best = search.exhaustive(m, g, s.work)[0]
        x = s.extra
        assert (x["fine_config"], x["fine_ns"]) == (best.config.label(s.work), pytest.approx(best.outcome.ns, rel=1e-12))
        want = semi[s.layer.name]
        if want is None:
            assert x["semi_config"] is x["semi_ns"] is x["semi_adapted"] is x["quco_vs_semi"] is None
        else:
            assert x["semi_config"] == want.label(s.work) and x["semi_adapted"] == (want.tile != first.tile)
            assert x["semi_ns"] == pytest.approx(simulate(m, s.work, want).ns, rel=1e-9)
            assert x["quco_vs_semi"] == pytest.approx(x["semi_ns"] / s.run_ns, rel=1e-12)
        assert x["quco_vs_fine"] == pytest.approx(x["fine_ns"] / s.run_ns, rel=1e-12)
    ratios = [s.extra["fine_ns"] / s.run_ns for s in steps]
    assert summary == {
        "quco_ns": steps[-1].end, "quco_run_ns": pytest.approx(sum(s.run_ns for s in steps), rel=1e-12),
        "fine_ns": pytest.approx(sum(s.extra["fine_ns"] for s in steps), rel=1e-12), "semi_ns": None,
        "speedup_vs_fine": pytest.approx(sum(s.extra["fine_ns"] for s in steps) / steps[-1].end, rel=1e-12),
        "speedup_vs_semi": None, "geomean_layer_vs_fine": pytest.approx(geo(ratios), rel=1e-12),
        "geomean_layer_vs_semi": pytest.approx(geo(s.extra["quco_vs_semi"] for s in steps), rel=1e-12),
        "worst_layer_vs_fine": steps[ratios.index(min(ratios))].layer.name,
        "layers_semi_adapted": 1, "layers_semi_missing": 1}
    # without (c), Semi-Tuned has a total: the sum of its layers, and a speedup over QuCo's time
    path.write_text(json.dumps({"name": "t", "layers": [{"name": "a", "gemm": {"m": 64, "k": 32, "n": 16}},
                                                        {"name": "d", "gemm": {"m": 64, "k": 64, "n": 16}, "elem_size": 8}]}))
    steps = runner.run(session, [runner.Tenant(format.load(path))])
    summary = baselines.compare(steps, session)[0]
    semi_total = sum(s.extra["semi_ns"] for s in steps)
    assert summary["semi_ns"] == pytest.approx(semi_total, rel=1e-12)
    assert summary["speedup_vs_semi"] == pytest.approx(semi_total / steps[-1].end, rel=1e-12)
    assert (summary["layers_semi_adapted"], summary["layers_semi_missing"]) == (1, 0)


def test_baselines_search_the_tenants_partition(tmp_path):
    # 512 rows: 64 work-groups, more than the 32 CUs of the partition, so the partition's CUs
    # and its 32 KiB of LDS change the exhaustive best (checked: the input tells them apart)
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [{"name": "a", "gemm": {"m": 512, "k": 256, "n": 64}}]}))
    session = runner.Session("r9-nano")
    (step,) = runner.run(session, [runner.Tenant(format.load(path), 32, 32768)])
    baselines.compare([step], session)
    g = tables.unpack(tables.load("r9-nano"))
    part, whole = (search.exhaustive(m, g, step.work)[0] for m in (machine(g, 0, 32, 32768), machine(g, 0, 0, 0)))
    assert part.outcome.ns != pytest.approx(whole.outcome.ns, rel=1e-6)
    assert (step.extra["fine_config"], step.extra["fine_ns"]) == (part.config.label(step.work),
                                                                pytest.approx(part.outcome.ns, rel=1e-12))
    assert step.extra["semi_config"] == step.extra["fine_config"]   # the first layer's own best


# ---------------------------------------------------------------- run --json's layer records (workloads/runner.py)
def test_run_json_layer_records_follow_the_timeline(tmp_path, capsys):
    """Each layer record of `run --json` against a timeline worked out here: the unit (700 MHz)
    answers layer 0 at t = 0, its reconfiguration exposed; the host asks for layer i+1 when layer
    i starts; layer i+1 starts at max(its configuration written, layer i's end); run times are
    the model's (simulate) for the configuration the record names."""
    from quco.cli.main import main
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [
        {"name": "a", "gemm": {"m": 64, "k": 32, "n": 16}},
        {"name": "b", "gemm": {"m": 512, "k": 256, "n": 64}},
        {"name": "c", "gemm": {"m": 512, "k": 256, "n": 64}}]}))
    assert main(["run", str(path), "--gpu", "r9-nano", "--json", "--no-baselines"]) == 0
    doc = json.loads(capsys.readouterr().out)
    records = doc["layers"]
    g = tables.unpack(tables.load("r9-nano"))
    w = format.load(path)
    prev_end, prev_start = 0.0, 0.0
    for i, (r, lay) in enumerate(zip(records, w.layers)):
        work = Work.of(lay.kernel)
        cfg = Config.parse(work, r["config"])
        assert (r["tenant"], r["index"], r["name"], r["type"]) == (0, i, lay.name, lay.name)
        assert (r["clock_mhz"], r["active_cus"], r["lds_bytes"]) == (1000.0, 0, 0)
        assert (r["tile"], r["slots"]) == (cfg.tile, list(cfg.slots))
        assert r["run_ns"] == pytest.approx(simulate(machine(g), work, cfg).ns, rel=1e-9)
        assert r["reconf_cycles"] > 0 and r["reconf_instructions"] > 0
        assert r["reconf_ns"] == pytest.approx(r["reconf_cycles"] * 1000 / 700, rel=1e-12)
        assert r["cache_hit"] == (i == 2)     # c is b again: the unit's cache answers it
        requested = prev_start if i else 0.0
        start = max(requested + r["reconf_ns"], prev_end)
        assert (r["requested_ns"], r["reconf_start_ns"], r["queueing_ns"]) == (
            pytest.approx(requested), pytest.approx(requested), pytest.approx(0.0, abs=1e-9))
        assert r["reconf_end_ns"] == pytest.approx(requested + r["reconf_ns"])
        assert (r["start_ns"], r["end_ns"]) == (pytest.approx(start), pytest.approx(start + r["run_ns"]))
        assert r["exposed_ns"] == pytest.approx(start - prev_end, abs=1e-9)
        assert r["hidden"] == (start <= prev_end)
        prev_end, prev_start = start + r["run_ns"], start
    assert [r["hidden"] for r in records] == [False, True, True]   # b and c: configured while the layer before runs
    totals = doc["tenants"][0]["totals"]
    assert totals["hidden_layers"] == 2 and totals["layers"] == 3 and totals["cache_hits"] == 1
    assert totals["exposed_fraction"] == pytest.approx(sum(r["exposed_ns"] for r in records) / prev_end, rel=1e-12)


def test_a_partitioned_layer_is_configured_and_modelled_on_its_partition(tmp_path):
    """The unit is told the tenant's CUs and LDS (its pick: the reference model's for the kernel
    on that partition; on 8 CUs the stationary slots are CU-stepped to 8, on all 64 they stay 4),
    and the model runs the layer on that partition's CUs and LDS."""
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [{"name": "mv", "gemm": {"m": 4096, "k": 4096, "n": 1}}]}))
    w = format.load(path)
    g = tables.unpack(tables.load("r9-nano"))
    labels = {}
    for cus, lds in ((8, 16384), (0, 16384), (8, 0)):
        session = runner.Session("r9-nano")
        (step,) = runner.run(session, [runner.Tenant(w, cus, lds)])
        ref = reference.configure(session.gst, w.layers[0].kernel.with_fields(active_cus=cus, lds_bytes=lds).record())
        assert step.config == Config(ref.tile, tuple(ref.slots))
        assert step.run_ns == pytest.approx(simulate(machine(g, 0, cus, lds), step.work, step.config).ns, rel=1e-9)
        labels[cus, lds] = step.label
    assert labels[8, 16384] != labels[0, 16384]   # the input tells the partition's CUs apart


def test_a_session_boots_the_firmware_it_is_given(tmp_path):
    with pytest.raises(Exception, match="none.elf: cannot read"):
        runner.Session("r9-nano", firmware=tmp_path / "none.elf")


def test_partition_problems_are_listed_up_to_twenty(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [
        {"name": "a", "gemm": {"m": 64, "k": 32, "n": 16}, "partition": {"active_cus": 100}, "repeat": 25}]}))
    session = runner.Session("r9-nano")
    with pytest.raises(format.WorkloadError) as e:
        session.check([runner.Tenant(format.load(path))])
    assert len(e.value.problems) == 20
    assert [p.split(": ")[1] for p in e.value.problems] == [f"layer {i} (a[{i}], layers[0])" for i in range(20)]
    assert e.value.problems[0].endswith("partition.active_cus: 100 is out of range; expected 0 to 64 "
                                        "(r9-nano's num_cus; 0 = all)")


def test_two_tenants_each_need_their_own_cus(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [{"name": "a", "gemm": {"m": 64, "k": 32, "n": 16}}]}))
    w = format.load(path)
    session = runner.Session("r9-nano")
    for tenants, shares in (((0, 0), "all + all"), ((48, 0), "48 + all"), ((48, 32), "48 + 32")):
        with pytest.raises(format.WorkloadError) as e:
            session.check([runner.Tenant(w, c) for c in tenants])
        assert e.value.problems == [f"tenants: CUs {shares}; expected each tenant's own CUs (WORKLOAD@CUS[:LDS]), "
                                    "64 in total at most on r9-nano"]
    session.check([runner.Tenant(w, 48), runner.Tenant(w, 16)])   # 64 of 64: accepted
    session.check([runner.Tenant(w)])                              # one tenant: the whole GPU


def test_run_reports_progress_over_every_tenants_layers(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"name": "t", "layers": [{"name": "a", "gemm": {"m": 64, "k": 32, "n": 16}, "repeat": 3}]}))
    w = format.load(path)
    seen = []
    runner.run(runner.Session("r9-nano"), [runner.Tenant(w, 32), runner.Tenant(w, 32)], progress=lambda *a: seen.append(a))
    assert seen == [(i, 6) for i in range(1, 7)]   # 2 tenants x 3 layers, one call per layer done


def test_a_work_group_with_more_wavefronts_than_a_cu_holds_has_no_time():
    # 64 consumers + the producer = 65 wavefronts; an R9 Nano CU holds 40 (4 SIMDs x 10): no
    # work-group is resident, whatever the LDS and barriers (which this configuration fits)
    m = machine(tables.unpack(tables.load("r9-nano")))
    assert m.max_waves == 40
    cfg = Config(64, (1,) * 9)
    wide, usual = (Work.of(derive.gemm("g", 64, 32, 16, wavefronts=w)[0]) for w in (64, 7))
    assert runner.model_ns(m, usual, cfg) > 0
    assert runner.model_ns(m, wide, cfg) is None
