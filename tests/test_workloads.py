"""Workloads: the format and its errors, the GEMM/conv derivation, the runner's timeline and
cache behaviour, the baselines, DVFS and tenants, checked against hand-computed values,
closed forms and the reference model."""
import json

import pytest

from conftest import EXAMPLES_DIR, MM_KERNEL, ROOT
from quco.gst import tables
from quco.host import reference
from quco.cli.main import main
from quco.kernel.format import load_kernel
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work
from quco.workloads import baselines, derive, dvfs, format, runner

WORKLOADS = ROOT / "quco" / "examples" / "workloads"
MM = {"gemm": {"m": 1024, "k": 2048, "n": 128}}   # Table III Matrix-Matrix


def write(tmp_path, doc, name="w.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def run(doc, tmp_path, gpu="r9-nano", **tenant):
    w = format.load(write(tmp_path, doc))
    session = runner.Session(gpu)
    return session, runner.run(session, [runner.Tenant(w, **tenant)])


# ---------------------------------------------------------------- derivation
def test_gemm_of_matrix_matrix_shape_is_the_table_iii_kernel():
    example = load_kernel(MM_KERNEL)
    k, lines = derive.gemm("mm", 1024, 2048, 128)
    assert k.queues == example.queues
    assert (k.work_groups, k.output_bytes, k.flops_per_work_group) == (
        example.work_groups, example.output_bytes, example.flops_per_work_group)
    # the same data movement: B one column per pass, the rows of A again with each
    assert Work.of(k).queues == Work.of(example).queues and k.movement == example.movement
    assert k.compute_intensity == pytest.approx(536_870_912 / 4_980_736)   # the example's stated CI
    assert reference.ci_class(k.compute_intensity, 0) == 3                 # class high, as the example
    assert any("work-groups = 1 x ceil(1,024 / 8) = 128" in line for line in lines)


def test_one_token_gemm_streams_the_weight_rows_like_matrix_vector():
    k, _ = derive.gemm("fc1", 1, 384, 1536)
    assert k.queues == [(384, 0, 2)] * 8 + [(384, 1, 2)]
    assert Work.of(k).passes == 1 and Work.of(k).sharers(8) == 1536 // 8  # one pass; x read by every WG
    assert (k.work_groups, k.flops_per_work_group, k.output_bytes) == (1536 // 8, 2 * 8 * 384, 16)


def test_conv_lowers_to_its_im2col_gemm():
    g, _ = derive.conv_gemm({"in_channels": 384, "out_channels": 384, "kernel": [3], "input": [3000],
                             "stride": [2], "padding": [1]})
    assert g == {"m": 1500, "k": 1152, "n": 384, "batch": 1}        # Whisper's conv2 by hand
    g, _ = derive.conv_gemm({"in_channels": 8, "out_channels": 16, "kernel": [3, 3], "input": [10, 12],
                             "groups": 2, "batch": 4})
    assert g == {"m": 4 * 8 * 10, "k": 4 * 9, "n": 8, "batch": 2}


# ---------------------------------------------------------------- runner
def test_two_layer_workload_configurations_and_cache(tmp_path):
    session, steps = run({"name": "two", "layers": [{"name": "a", **MM}, {"name": "b", **MM}]}, tmp_path)
    ref = reference.configure(session.gst, load_kernel(MM_KERNEL).record())
    expected = Config(ref.tile, tuple(ref.slots))
    assert [s.config for s in steps] == [expected, expected]
    assert [s.cache_hit for s in steps] == [False, True]          # an identical relaunch hits
    assert steps[1].instructions < steps[0].instructions
    # timeline in closed form: the first reconfiguration is exposed, the second hides
    a, b = steps
    assert a.exposed_ns == a.reconf_ns and a.start == a.reconf_ns
    assert b.reconf_ns < a.run_ns and b.hidden and b.start == a.end
    assert b.end == pytest.approx(a.reconf_ns + a.run_ns + b.run_ns)
    # the layer time is the model's for that configuration
    g = tables.unpack(session.gst)
    assert a.run_ns == simulate(machine(g), Work.of(load_kernel(MM_KERNEL)), expected).ns
    tot = runner.totals(steps)
    assert tot["cache_hit_rate"] == 0.5 and tot["exposed_fraction"] == pytest.approx(a.reconf_ns / b.end)


def test_reconfiguration_longer_than_the_layer_is_exposed_by_the_difference(tmp_path):
    tiny = {"gemm": {"m": 8, "k": 64, "n": 1}}
    _, steps = run({"name": "t", "layers": [{"name": "a", **tiny}, {"name": "b", **MM}]}, tmp_path)
    a, b = steps
    assert b.reconf_ns > a.run_ns                   # 8 x 64 GEMV: shorter than a cold launch
    assert b.exposed_ns == pytest.approx(b.reconf_ns - a.run_ns) and not b.hidden


def test_a_group_repeats_and_names_its_layers(tmp_path):
    doc = {"name": "g", "layer_types": {"T": MM},
           "layers": [{"name": "blk", "repeat": 2, "layers": [{"name": "x", "type": "T"}, {"name": "y", **MM}]}]}
    w = format.load(write(tmp_path, doc))
    assert [(l.name, l.type) for l in w.layers] == [("blk[0].x", "T"), ("blk[0].y", "blk.y"),
                                                    ("blk[1].x", "T"), ("blk[1].y", "blk.y")]


def test_bundled_workloads_load_with_the_papers_layer_counts():
    counts = {"whisper-tiny.json": 827, "t5-small.json": 96, "albert-v2.json": 74, "norm-project.json": 2,
              "attention-score.json": 2, "residual-mlp.json": 2, "whisper-tiny-types.json": 9}
    for name, n in counts.items():
        assert len(format.load(WORKLOADS / name).layers) == n, name
    assert format.load(WORKLOADS / "whisper-tiny.json").types() == list(
        format.load(WORKLOADS / "whisper-tiny-types.json").types())


# ---------------------------------------------------------------- baselines
def test_fine_tuned_is_never_slower_than_quco_and_semi_starts_from_it(tmp_path):
    doc = {"name": "b", "layers": [{"name": "mv", "gemm": {"m": 1, "k": 1024, "n": 1024}}, {"name": "mm", **MM}]}
    session, steps = run(doc, tmp_path)
    summary = baselines.compare(steps, session)[0]
    for s in steps:   # QuCo's configuration is in the exhaustive space
        assert s.extra["fine_ns"] <= s.run_ns
    assert steps[0].extra["semi_config"] == steps[0].extra["fine_config"]
    assert summary["fine_ns"] == pytest.approx(sum(s.extra["fine_ns"] for s in steps))
    assert summary["speedup_vs_fine"] == pytest.approx(summary["fine_ns"] / steps[-1].end)


# ---------------------------------------------------------------- DVFS and tenants
def test_dvfs_at_the_nominal_clock_changes_nothing(tmp_path):
    w = format.load(write(tmp_path, {"name": "d", "layers": [{"name": "mm", **MM}]}))
    res = dvfs.compare("r9-nano", w, dvfs.Trace("flat", [1000]))
    row = res["rows"][0]
    assert row["same_config"] and row["hw_speedup"] == 1.0
    assert row["fine_config"] == row["fine_nominal_config"] and row["clock_aware_gain"] == 1.0


def test_the_bundled_traces_pass_through_the_papers_named_points():
    """QuCo Sec. V: decreasing 1500 -> 900 MHz with FC-5 (the 5th linear layer of Whisper-Tiny
    in order, layer 7) at 1300; U-shaped down to 950 at layer 7 and back to 1500; decreasing
    to 1000 by layer 6, then holding."""
    layers = format.load(WORKLOADS / "whisper-tiny.json").layers
    fc5 = [i for i, lay in enumerate(layers) if lay.type.startswith("FC")][4]
    assert fc5 == 6 and layers[fc5].name == "encoder.layers[0].fc1"
    dec, u, hold = (dvfs.load_trace(n).clocks(len(layers)) for n in ("mi100-decreasing", "mi100-u-shaped", "mi100-decrease-hold"))
    assert dec[0] == 1500 and dec[fc5] == 1300 and dec[-1] == 900 and dec == sorted(dec, reverse=True)
    assert u[0] == u[-1] == 1500 and min(u) == u[6] == 950
    assert hold[5] == hold[-1] == 1000 and hold[:6] == sorted(hold[:6], reverse=True)


def test_dvfs_sign_on_a_constructed_case(tmp_path):
    # the R9 Nano boosted to 1200 MHz: the firmware told the clock picks another configuration
    # (Elementwise 4096 / 2) than the one for 1,000 MHz (2048 / 4); the model, run independently
    # here, says which is faster. (Issue 30: with the latencies in core cycles at the GST's
    # clock, the MI100's picks no longer change between 900 and 1,500 MHz.)
    path = EXAMPLES_DIR / "elementwise.json"
    kernel = load_kernel(path)
    doc = {"name": "d", "layers": [{"name": "ew", "kernel_file": str(path), "repeat": 2}]}
    w = format.load(write(tmp_path, doc))
    res = dvfs.compare("r9-nano", w, dvfs.Trace("boost", [1000, 1200]))
    nominal, low = res["rows"]
    assert nominal["same_config"] and nominal["hw_speedup"] == 1.0
    assert not low["same_config"]
    g = tables.unpack(tables.load("r9-nano"))
    work, m = Work.of(kernel), machine(g, 1200)
    hw, sw = (res["steps"][v][1].config for v in ("hw", "sw"))
    independent = simulate(m, work, sw).ns / simulate(m, work, hw).ns
    assert low["hw_speedup"] == pytest.approx(independent)
    assert independent > 1.0    # today's firmware: QuCo-HW wins here, by 0.1%; see docs/workloads.md
    # what knowing the clock is worth at all: the exhaustive best for the GST's 1,000 MHz, run at
    # 1,200, against the exhaustive best for 1,200 (never below 1: that one is the best at 1,200)
    best = {c: search.exhaustive(machine(g, c), g, work)[0].config for c in (1000, 1200)}
    oracle = simulate(m, work, best[1000]).ns / simulate(m, work, best[1200]).ns
    assert low["clock_aware_gain"] == pytest.approx(oracle) and oracle >= 1.0
    assert nominal["clock_aware_gain"] == 1.0


def test_a_long_dvfs_run_shows_the_traces_layers_and_sums_up_the_rest(capsys):
    """Whisper-Tiny's 827 layers on a 6-clock trace: 6 rows, the other 821 layers in the caption."""
    assert main(["run", str(WORKLOADS / "whisper-tiny.json"), "--dvfs", "mi100-decrease-hold", "--no-baselines"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    table = text[text.index("DVFS trace mi100-decrease-hold"):]
    assert "layers 6-826 hold 1000 MHz" in table and "configurations differ on 0" in table
    assert "encoder.layers[0].out_proj" in table and "encoder.layers[0].fc1" not in table
    assert "knowing the clock" not in table     # --no-baselines: no exhaustive searches


def test_tenants_share_the_unit_first_come_first_served(tmp_path):
    path = write(tmp_path, {"name": "t", "layers": [{"name": "mm", **MM}, {"name": "mv", "gemm": {"m": 1, "k": 2048, "n": 2048}}]})
    w = format.load(path)
    session = runner.Session("r9-nano")
    steps = runner.run(session, [runner.Tenant(w, 32, 32768), runner.Tenant(w, 32, 32768)])
    first = {s.tenant: s for s in steps if s.layer.index == 0}
    assert first[0].queueing_ns == 0
    assert first[1].queueing_ns == pytest.approx(first[0].reconf_ns)   # waited for tenant 0's launch
    assert first[1].cache_hit and not first[0].cache_hit                 # same record, same partition
    assert all(s.active_cus == 32 and s.lds_bytes == 32768 for s in steps)


# ---------------------------------------------------------------- errors (exit 2, named)
BAD = [
    ({"name": "x", "layers": [{"name": "ok", **MM}, {"name": "fc", "gemm": {"m": 1, "k": 0, "n": 4}}]},
     "layers[1] (fc): gemm.k: 0 is out of range; expected integer 1 to 1073741824"),
    ({"name": "x", "layers": [{"name": "fc", **MM, "clock_mhz": 20000}]},
     "layers[0] (fc): clock_mhz: 20000 is out of range; expected integer 0 to 10000"),
    ({"name": "x", "layers": [{"name": "fc", "type": "FC-9"}]}, "layers[0] (fc): type: \"FC-9\" is not in layer_types"),
    ({"name": "x", "layers": [{"name": "fc", **MM, "kernel_file": "k.json"}]}, "layers[0] (fc): gemm; kernel_file: give exactly one"),
    ({"name": "x", "layers": [{"name": "blk", "layers": [{"name": "q", "gemm": {"m": 1, "n": 2}}]}]},
     "layers[0].layers[0] (q): gemm.k: missing (required integer 1 to 1073741824)"),
    ({"name": "x", "layers": [{"name": "k", "kernel": {"name": "k", "compute_intensity": 1,
                                                       "queues": [{"type": "streaming", "length": 8, "elem_size": 3}]}}]},
     "layers[0] (k): kernel: queues[0].elem_size: 3 is not one of 1, 2, 4, 8"),
    ({"name": "x", "layers": [{"name": "c", "conv": {"in_channels": 4, "out_channels": 4, "kernel": [5], "input": [2]}}]},
     "layers[0] (c): conv.input[0]: 2 is smaller than the kernel's reach 5"),
    ({"name": "x", "layers": [{"name": "big", **MM, "partition": {"active_cus": 100}}]},
     "layer 0 (big, layers[0]): partition.active_cus: 100 is out of range; expected 0 to 64 (r9-nano's num_cus; 0 = all)"),
    ({"name": "x", "layers": [{"name": "fc", "gemm": {"m": 8.0, "k": 2, "n": 4}}]},  # JSON Schema's integer takes 8.0
     "layers[0] (fc): gemm.m: 8.0 is written with a decimal point; expected integer 1 to 1073741824"),
]


@pytest.mark.parametrize("doc,message", BAD, ids=range(len(BAD)))
def test_bad_workloads_exit_2_naming_layer_and_field(doc, message, tmp_path, capsys):
    path = write(tmp_path, doc, "bad.json")
    assert main(["run", str(path), "--gpu", "r9-nano", "--no-baselines"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err and "Traceback" not in err


def test_not_json_and_a_missing_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x",')
    assert main(["run", str(bad)]) == 2
    assert f"{bad}: not JSON" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


# ---------------------------------------------------------------- CLI
def test_run_json_trace_and_plot(tmp_path, capsys):
    trace, plots = tmp_path / "t.json", tmp_path / "plots"
    assert main(["run", str(WORKLOADS / "residual-mlp.json"), "--gpu", "r9-nano", "--json",
                 "--trace", str(trace), "--plot", str(plots)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [l["name"] for l in doc["layers"]] == ["mlp", "residual"]
    assert doc["tenants"][0]["totals"]["layers"] == 2 and doc["tenants"][0]["baselines"]["fine_ns"] > 0
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["name"] for e in spans if e["pid"] == 2 and e["tid"] == 1} == {"mlp", "residual"}
    assert sum(e["pid"] == 1 and e["tid"] == 1 for e in spans) == 2        # two reconfigurations
    assert sorted(p.name for p in plots.iterdir()) == ["fig9-residual-mlp.png", "fig9-residual-mlp.svg"]


def test_a_bad_dvfs_trace_names_each_clock_and_its_range(tmp_path, capsys):
    """Trace files use kernel.json's rules: 1500.0 is no integer, 0 MHz is out of range."""
    trace = write(tmp_path, {"name": "t", "clocks_mhz": [1500.0, 0]}, "trace.json")
    workload = ROOT / "quco" / "examples" / "workloads" / "whisper-tiny-types.json"
    assert main(["run", str(workload), "--gpu", "mi100", "--dvfs", str(trace), "--no-baselines"]) == 2
    err = capsys.readouterr().err
    assert "clocks_mhz[0]: 1500.0 is written with a decimal point; expected integer 1 to 10000" in err
    assert "clocks_mhz[1]: 0 is out of range; expected integer 1 to 10000" in err
    assert "Traceback" not in err


def test_dvfs_runs_on_the_tenants_partition(tmp_path, capsys):
    """`run W@CUS:LDS --dvfs T`: QuCo-HW's and QuCo-SW's configurations are the partition's (the
    CU step on 16 of the R9 Nano's 64 CUs leaves Matrix-Matrix more slots than on all 64)."""
    w = write(tmp_path, {"name": "d", "layers": [{"name": "mm", **MM}]})
    trace = write(tmp_path, {"name": "t", "clocks_mhz": [1000]}, "t.json")
    assert main(["run", f"{w}@16:32768", "--gpu", "r9-nano", "--dvfs", str(trace), "--json", "--no-baselines"]) == 0
    doc = json.loads(capsys.readouterr().out)
    partition = doc["layers"][0]["config"]
    assert doc["dvfs"]["rows"][0]["hw_config"] == doc["dvfs"]["rows"][0]["sw_config"] == partition
    assert main(["run", str(w), "--gpu", "r9-nano", "--json", "--no-baselines"]) == 0
    assert json.loads(capsys.readouterr().out)["layers"][0]["config"] != partition


# ---------------------------------------------------------------- issue 28: the batch of a GEMM
# Planted by hand, each failed here and nowhere else in the quick tests (docs/testing.md):
# the batch left out of the FLOPs (CI 1/batch of the truth), and the stationary operand shared
# by the batch's work-groups instead of those of its own product.
def test_a_batched_gemm_counts_every_products_flops():
    # C[64,16] = A[64,32] x B[32,16], 3 products, fp16: A streams (M >= N), 8 rows a work-group
    # work-groups = 3 x ceil(64 / 8) = 24; FLOPs per work-group 2 x 8 x 32 x 16 = 8,192
    # all work-groups: 24 x 8,192 = 196,608 = 2 x 3 x 64 x 32 x 16 (every product's FLOPs)
    # CI = 196,608 / (2 B x 3 x (64x32 + 32x16 + 64x16) = 21,504 B) = 9.142857..., as with batch 1
    k3, lines = derive.gemm("b3", 64, 32, 16, batch=3)
    k1, _ = derive.gemm("b1", 64, 32, 16)
    assert (k3.work_groups, k3.flops_per_work_group) == (24, 8192) and k3.work_groups * k3.flops_per_work_group == 196_608
    assert k3.compute_intensity == pytest.approx(196_608 / 21_504, rel=1e-12) == k1.compute_intensity
    assert (k1.work_groups, k1.flops_per_work_group) == (8, 8192)
    assert any("= 196,608 / 21,504" in line for line in lines)


def test_a_batched_gemms_stationary_operand_is_shared_within_its_product():
    # each product has its own B: its columns are read by the ceil(64 / 8) = 8 work-groups of
    # that product, not by all 24 of the batch; each of the 16 columns is one pass
    k, _ = derive.gemm("b3", 64, 32, 16, batch=3)
    streaming, stationary = k.movement[:-1], k.movement[-1]
    assert stationary == (16, 0, 8)
    assert streaming == [(16, 1, 0)] * 8
    # a workload layer with a batch takes the same path (format -> derive)
    w = format.parse({"name": "w", "layers": [{"name": "bmm", "gemm": {"m": 64, "k": 32, "n": 16, "batch": 3}}]})
    assert w.layers[0].kernel.movement[-1] == (16, 0, 8) and w.layers[0].kernel.work_groups == 24
