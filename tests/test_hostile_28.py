"""Issue #28 part 4 and issue #33's kernel-file and silent-bug items: hostile input, round three.
One test per class, each failing on the bug it pins: `search --config` outside the searched
space, `paper --baseline` files that are not the CSV it writes, kernels the model cannot place
(the unit's fit rule and the model's), sizes the model would take minutes on, runs of many
identical layers (counted in emulated launches, not seconds), `import` of graphs that are no
model, names longer than kernel.json's, split K that describes no kernel, and the LDS a layer's
own partition gives, the DVFS total, `diff`'s LDS comparison."""
import dataclasses
import json

import pytest

from conftest import MM_KERNEL, clean_error
from quco.cli import launch as cli_launch
from quco.cli.fuzz_files import run_cli
from quco.gst import tables
from quco.host import reference
from quco.host.device import Device
from quco.kernel.format import Kernel, KernelError, load_kernel, parse_kernel
from quco.gst import abi
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work
from quco.workloads import dvfs, format, runner

SMALL = {"name": "k", "compute_intensity": 1.0, "queues": [{"type": "streaming", "length": 1024, "elem_size": 2},
                                                            {"type": "stationary", "length": 1024, "elem_size": 2}]}


def write(folder, doc, name="k.json"):
    path = folder / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)




# ---------------------------------------------------------------- search --config
@pytest.mark.parametrize("config,words", [
    ("0/0", ["tile 0 is not one of 64, 128, 256, 512, 1024, 2048, 4096, 8192", "min_tile_elems 64"]),
    ("0/2", ["tile 0 is not one of"]),
    ("1/4", ["tile 1 is not one of"]),                 # ranked "254 of 253" before
    ("500/4", ["tile 500 is not one of"]),             # no unit picks it: not a power of two
    ("16384/2", ["tile 16384 is not one of", "max_tile_elems 8192"]),
    ("512/0", ["0 slots is out of range; expected 1 to 8"]),
    ("512/9", ["9 slots is out of range; expected 1 to 8", "max_slots 8"]),
    ("512/2+0", ["0 slots is out of range"]),
    ("\uff15\uff11\uff12/2", ["in digits 0-9"]),       # full-width digits: int() reads them
    ("\u0665\u0661\u0662/2", ["in digits 0-9"]),       # Arabic-Indic digits
    ("512/2+\u00b2", ["in digits 0-9"]),
    ("512/", ["expected TILE/SLOTS"]),                 # an empty slot list
    ("512/+", ["expected TILE/SLOTS"]),
    ("/2", ["expected TILE/SLOTS"]),
    ("", ["expected TILE/SLOTS"]),
    ("9" * 5000 + "/2", ["expected TILE/SLOTS"]),
    ("512/2+2+2", ["3 slot counts; expected 1, 2"]),
])
def test_search_config_outside_the_searched_space_is_refused(tmp_path, config, words):
    o = run_cli(["search", write(tmp_path, SMALL), "--config", config], timeout=60)
    clean_error(o, 2, "--config", *words)
    assert len(o.err) < 800  # the 5,000 digits are not echoed whole


def test_every_configuration_of_the_space_ranks_within_it(tmp_path):
    """The rank of a named configuration is its place among the configurations search ranks:
    the slowest of them ranks last, never past the count."""
    k = write(tmp_path, SMALL)
    o = run_cli(["search", k, "--json", "--top", "0"], timeout=120)
    assert o.code == 0, o.err
    doc = json.loads(o.out)
    n, slowest = doc["evaluated"], doc["top"][-1]
    slots = "+".join(str(q["slots"]) for q in slowest["queues"])
    o = run_cli(["search", k, "--json", "--top", "1", "--config", f"{slowest['tile']}/{slots}"], timeout=120)
    assert o.code == 0, o.err
    named = json.loads(o.out)["config"]
    assert named["rank"] <= named["of"] == n and named["cycles"] == slowest["cycles"]
    o = run_cli(["search", k, "--top", "1", "--config", f"{slowest['tile']}/{slots}"], timeout=120)
    assert f"of {n}" in o.out and f"of {n + 1}" not in o.out


# ---------------------------------------------------------------- paper --baseline
BASE = "id,verdict,ours\n"


@pytest.mark.parametrize("text,words", [
    (BASE + "C1,holds\n", ["line 2: 2 fields; expected 3", "'ours'"]),            # AttributeError before
    (BASE + "C1,holds,1,extra\n", ["line 2: 4 fields; expected 3"]),
    (BASE + "C1,holds,1\nC2,holds,\"" + "x" * 200_000 + "\"\n", ["line 3:", "field larger than field limit"]),
    (BASE + "C1,holds,\"never closed\nC2,holds,2\n", ["line 2:", "unexpected end of data"]),
    ("id,verdict,ours\rC1,holds,1\r", ["line 1: a line ends in a lone CR"]),
    (BASE + "C1,\x1b[2Jholds,1\n", ["line 2: verdict '\\\\x1b[2Jholds' is not one of"]),
    ("name,value\nC1,1\n", ["no column 'id'"]),
])
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_paper_baseline_files_that_are_not_its_csv_are_refused(tmp_path, text, words, json_flag):
    path = tmp_path / "rows.csv"
    path.write_bytes(text.encode())
    o = run_cli(["paper", "--baseline", str(path)] + json_flag, timeout=60)
    clean_error(o, 2, "--baseline", "rows.csv", *words)
    assert len(o.err) < 2000


def test_paper_baseline_values_come_back_escaped(tmp_path):
    from quco.paper.scorecard import read_baseline
    path = tmp_path / "rows.csv"
    path.write_bytes(b'id,verdict,ours\r\nC1,holds,"\x1b[31m1"\r\n')   # CRLF, as csv writes it: fine
    assert read_baseline(path) == {"C1": {"id": "C1", "verdict": "holds", "ours": "\\x1b[31m1"}}


# ---------------------------------------------------------------- what the model can place
@pytest.mark.parametrize("wavefronts", [40, 64])
@pytest.mark.parametrize("argv", [["search", "{k}"], ["launch", "{k}", "--model"],
                                  ["evaluate", "{k}", "--gpu", "r9-nano", "--workers", "1"]],
                         ids=["search", "launch --model", "evaluate"])
def test_a_work_group_larger_than_a_cu_holds_is_named(tmp_path, argv, wavefronts):
    k = write(tmp_path, {**SMALL, "consumer_wavefronts": wavefronts})
    o = run_cli([a.format(k=k) for a in argv], timeout=60)
    clean_error(o, 2, "k.json: consumer_wavefronts:", f"{wavefronts} (+1 producer = {wavefronts + 1} wavefronts",
                "a CU of this GPU holds at once (40: wavefront_pools 4 x 10)", "Expected at most 39")


def test_the_unit_configures_what_the_model_cannot_place(tmp_path):
    """The disagreement the CLI reports: the unit's fit rule (LDS, barriers) takes 64
    consumer wavefronts, the model's (wavefront slots of a CU) does not."""
    assert run_cli(["launch", write(tmp_path, {**SMALL, "consumer_wavefronts": 64})]).code == 0


def test_a_minimal_workload_the_model_cannot_place_is_bad_input_not_a_unit_error(tmp_path):
    w = write(tmp_path, {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 1, "k": 1, "n": 1},
                                                  "consumer_wavefronts": 64}]}, "w.json")
    o = run_cli(["run", w], timeout=60)
    clean_error(o, 2, "w.json: layer 0 (fc, layers[0]): consumer_wavefronts: 64")


def test_a_kernel_at_the_schemas_maximum_sizes_is_refused_cleanly(tmp_path):
    k = write(tmp_path, {"name": "k" * 128, "compute_intensity": 1000000, "consumer_wavefronts": 64,
                         "queues": [{"type": "streaming", "length": 2**32 - 1, "elem_size": 8, "count": 16,
                                     "passes": 1048576, "fresh_passes": 1, "shared_by": 2**32 - 1}],
                         "grid": {"work_groups": 2**32 - 1, "phases": 65536, "output_bytes": 2**32 - 1,
                                  "flops_per_work_group": 10**15}})
    for argv in (["launch", k, "--model"], ["search", k], ["evaluate", k, "--gpu", "r9-nano"]):
        clean_error(run_cli(argv, timeout=30), 2, "k.json: consumer_wavefronts: 64")


# ---------------------------------------------------------------- sizes the model takes minutes on
@pytest.mark.parametrize("queue,grid,argv,words", [
    ({"length": 4194304}, {}, ["search"], ["65,536 tiles of 64 elements a pass", "at most 4,096"]),
    ({"length": 4194304}, {}, ["evaluate", "--gpu", "r9-nano"], ["65,536 tiles of 64 elements a pass"]),
    ({"length": 4096, "passes": 1048576}, {"work_groups": 64, "phases": 65536}, ["evaluate", "--gpu", "r9-nano"],
     ["64 a pass x 1,048,576 passes: evaluate's Ideal case simulates every pass", "at most 16,384"]),
    ({"length": 4096, "passes": 1048576, "fresh_passes": 2}, {"work_groups": 64}, ["search"],
     ["the loop nest repeats only every 524,288 passes", "at most 65,536"]),
    ({"length": 4096, "passes": 1048576, "fresh_passes": 2}, {"work_groups": 64}, ["launch", "--model"],
     ["the loop nest repeats only every 524,288 passes"]),
])
def test_long_queues_and_loop_nests_are_refused_at_once(tmp_path, queue, grid, argv, words):
    doc = {"name": "k", "compute_intensity": 1.0, "queues": [{"type": "streaming", "elem_size": 2, **queue}]}
    if grid:
        doc["grid"] = grid
    k = write(tmp_path, doc)
    o = run_cli([argv[0], k] + argv[1:], timeout=30)
    clean_error(o, 2, "k.json: the performance model", *words)


def test_many_passes_with_a_short_period_still_run(tmp_path):
    """The bound counts the passes the model simulates, not all of them: 65,536 passes that
    repeat every pass are a few periods on the model."""
    k = write(tmp_path, {"name": "k", "compute_intensity": 1.0, "grid": {"work_groups": 64},
                         "queues": [{"type": "streaming", "length": 4096, "elem_size": 2, "passes": 65536}]})
    o = run_cli(["launch", k, "--model", "--json"], timeout=120)
    assert o.code == 0, o.err
    assert json.loads(o.out)["model"]["extrapolated"]


# ---------------------------------------------------------------- runs of identical layers
def _count_launches(monkeypatch):
    calls = []
    real = Device.launch

    def counted(self, kernel, check=False):
        calls.append(1)
        return real(self, kernel, check)
    monkeypatch.setattr(Device, "launch", counted)
    return calls


def test_identical_layers_cost_three_emulated_launches(tmp_path, monkeypatch):
    calls = _count_launches(monkeypatch)
    evaluated = []
    real_ns = runner.model_ns
    monkeypatch.setattr(runner, "model_ns", lambda *a: evaluated.append(1) or real_ns(*a))
    w = format.parse({"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64}, "repeat": 5000}]})
    session = runner.Session("r9-nano")
    steps = runner.run(session, [runner.Tenant(w)])
    assert len(steps) == 5000 and len(calls) == 3 and session.reused == 4997 and len(evaluated) == 1
    assert [s.cache_hit for s in steps[:3]] == [False, True, True] and all(s.cache_hit for s in steps[1:])


MIXED = {"name": "w", "layers": [
    {"name": "a", "gemm": {"m": 64, "k": 64, "n": 64}, "repeat": 4},
    {"name": "b", "repeat": 3, "layers": [{"name": "x", "gemm": {"m": 128, "k": 64, "n": 32}},
                                          {"name": "y", "gemm": {"m": 128, "k": 64, "n": 32}, "clock_mhz": 500},
                                          {"name": "z", "gemm": {"m": 128, "k": 64, "n": 32}, "repeat": 5}]},
    {"name": "c", "gemm": {"m": 64, "k": 64, "n": 64}, "repeat": 6, "partition": {"lds_bytes": 16384}},
    {"name": "d", "kernel": {"name": "nc", "compute_intensity": 1.0, "ablation": {"cache": False},
                             "queues": [{"type": "streaming", "length": 4096, "elem_size": 2}]}, "repeat": 5}]}


def test_answers_reused_are_the_answers_the_unit_gives(monkeypatch):
    """Every step with reuse equals the step of a run that launches every layer on the
    emulator (cache hits and misses, a clock change, a partition, the cache switched off)."""
    w = format.parse(MIXED)
    fast = runner.run(runner.Session("r9-nano"), [runner.Tenant(w)])
    slow_session = runner.Session("r9-nano")
    monkeypatch.setattr(slow_session, "_unit", slow_session.dev.launch)
    slow = runner.run(slow_session, [runner.Tenant(w)])

    def facts(s):
        return (s.layer.name, s.clock_mhz, s.lds_bytes, s.config, s.cache_hit, s.instructions, s.reconf_cycles,
                s.reconf_ns, s.run_ns, s.start, s.end, s.exposed_ns)
    assert [facts(s) for s in fast] == [facts(s) for s in slow]
    assert any(not s.cache_hit for s in fast[1:])


@pytest.mark.slow  # 4 s: 100,000 layers are expanded, checked and run one by one (docs/testing.md, Tiers)
def test_100000_layers_by_repeat_run_in_few_launches(tmp_path, monkeypatch):
    calls = _count_launches(monkeypatch)
    w = write(tmp_path, {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64},
                                                  "repeat": 100_000}]}, "w.json")
    o = run_cli(["run", w], timeout=600)
    assert o.code == 0, o.err
    assert "100000 layers" in o.out and len(calls) == 3


# ---------------------------------------------------------------- import
def _onnx_model(nodes_spec, opset=17):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    inits, nodes = [], []
    for i, (a, out, n) in enumerate(nodes_spec):
        t = TensorProto()
        t.name, t.data_type = f"w{i}", TensorProto.FLOAT
        t.dims.extend([64, n])
        inits.append(t)
        nodes.append(helper.make_node("MatMul", [a, t.name], [out], name=f"mm{i}"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                          [helper.make_tensor_value_info(nodes_spec[-1][1], TensorProto.FLOAT, None)],
                          initializer=inits)
    return onnx, helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_import_refuses_a_graph_with_a_cycle(tmp_path):
    onnx, m = _onnx_model([("y1", "y0", 64), ("y0", "y1", 64)])
    onnx.save(m, tmp_path / "c.onnx")
    o = run_cli(["import", str(tmp_path / "c.onnx"), "-o", str(tmp_path / "c.json")], timeout=60)
    clean_error(o, 2, "c.onnx: node 'mm0' (#0) reads 'y1', written by node 'mm1' (#1)", "cycle")
    assert not (tmp_path / "c.json").exists()


def test_import_refuses_an_opset_onnx_does_not_know(tmp_path):
    onnx, m = _onnx_model([("x", "y0", 64)], opset=999)
    onnx.save(m, tmp_path / "o.onnx")
    o = run_cli(["import", str(tmp_path / "o.onnx"), "-o", str(tmp_path / "o.json")], timeout=60)
    clean_error(o, 2, "o.onnx: opset_import: ai.onnx version 999", f"versions 1 to {onnx.defs.onnx_opset_version()}")


@pytest.mark.parametrize("how", ["same", "link"])
def test_import_never_writes_over_its_model(tmp_path, how):
    onnx, m = _onnx_model([("x", "y0", 64)])
    onnx.save(m, tmp_path / "m.onnx")
    before = (tmp_path / "m.onnx").read_bytes()
    target = tmp_path / "m.onnx"
    if how == "link":
        (tmp_path / "l.json").symlink_to(tmp_path / "m.onnx")
        target = tmp_path / "l.json"
    o = run_cli(["import", str(tmp_path / "m.onnx"), "-o", str(target)], timeout=60)
    clean_error(o, 2, "is the input model", "would overwrite the .onnx")
    assert (tmp_path / "m.onnx").read_bytes() == before


def test_import_refuses_more_layer_types_than_it_can_check_before_checking_any(tmp_path, monkeypatch):
    from quco.workloads import onnx_import
    monkeypatch.setattr(onnx_import, "MAX_LAYER_TYPES", 3)
    checked = []
    monkeypatch.setattr(onnx_import, "_type_problem", lambda entry: checked.append(entry))
    onnx, m = _onnx_model([("x", f"y{i}", 8 + i) for i in range(4)])
    onnx.save(m, tmp_path / "m.onnx")
    o = run_cli(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.json")], timeout=60)
    clean_error(o, 2, "m.onnx: 4 distinct layer types", "at most 3")
    assert checked == []


# ---------------------------------------------------------------- names
@pytest.mark.parametrize("length", [129, 130, 256])
def test_layer_names_the_schema_allows_run_whole(tmp_path, length):
    name = "n" * length
    w = write(tmp_path, {"name": "w", "layers": [{"name": "g", "repeat": 2, "layers": [
        {"name": name, "gemm": {"m": 64, "k": 64, "n": 64}}]}]}, "w.json")
    o = run_cli(["run", w, "--json", "--no-baselines"], timeout=60)
    assert o.code == 0, o.err
    assert [r["name"] for r in json.loads(o.out)["layers"]] == [f"g[0].{name}", f"g[1].{name}"]


@pytest.mark.parametrize("length", [257, 10_000])
def test_longer_names_are_the_schemas_error_and_not_echoed_whole(tmp_path, length):
    w = write(tmp_path, {"name": "w", "layers": [{"name": "y" * length, "gemm": {"m": 64, "k": 64, "n": 64}}]},
              "w.json")
    o = run_cli(["run", w], timeout=60)
    clean_error(o, 2, "w.json: layers[0] (yyy", "...): name:", f"{length:,} characters", "1 to 256 characters")
    assert len(o.err) < 600


def test_the_schema_and_the_loader_agree_on_names():
    schema = json.loads(format.SCHEMA_PATH.read_text())
    item = schema["$defs"]["item"]["properties"]
    assert item["name"]["maxLength"] == item["type"]["maxLength"] == schema["properties"]["name"]["maxLength"] == 256
    name = "q" * 256
    w = format.parse({"name": name, "layer_types": {name: {"gemm": {"m": 8, "k": 64, "n": 8}}},
                      "layers": [{"name": name, "type": name}]})
    assert w.layers[0].name == name and len(w.layers[0].kernel.name) == 128


def test_a_workload_file_named_with_an_at_sign_is_given_alone(tmp_path):
    w = write(tmp_path, {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64}}]}, "a@b.json")
    o = run_cli(["run", w, "--no-baselines"], timeout=60)
    assert o.code == 0, o.err
    o = run_cli(["run", w + "@8", str(tmp_path / "a@b.json@8"), "--no-baselines"], timeout=60)
    assert o.code == 0 and "@8" in o.out, o.err    # WORKLOAD@CUS still splits at the last '@'


# ---------------------------------------------------------------- kernel files: the data-movement fields
@pytest.mark.parametrize("argv", [["check"], ["launch", "--model"], ["search"]])
@pytest.mark.parametrize("field,value", [("fresh_passes", 2.5), ("passes", 4.5), ("shared_by", 1.5)])
def test_a_fraction_where_an_integer_belongs_is_refused_at_once(tmp_path, argv, field, value):
    q = {"type": "streaming", "length": 1024, "elem_size": 2, "passes": 5, field: value}
    k = write(tmp_path, {"name": "k", "compute_intensity": 1.0, "queues": [q], "grid": {"work_groups": 64}})
    o = run_cli([argv[0], k] + argv[1:], timeout=20)
    clean_error(o, 2, f"k.json: queues[0].{field}: {value} is not a whole number")


def test_a_kernel_built_in_python_with_a_fraction_is_refused():
    with pytest.raises(KernelError, match=r"queues\[0\]\.fresh_passes: 2\.5 is not a whole number"):
        Kernel("k", 1.0, queues=[(64, abi.QUEUE_STREAMING, 2)], movement=[(5, 2.5, 0)])


@pytest.mark.parametrize("length,split,groups,words", [
    (2048, 65536, 65536, ["grid.split_k: 65536 is more than queues[0].length (2048)", "expected at most 2048"]),
    (2048, 128, 64, ["grid.split_k: 128 does not divide grid.work_groups (64)"]),
    (2048, 3, 64, ["grid.split_k: 3 does not divide grid.work_groups (64)"]),
    (1, 65536, 65536, ["grid.split_k: 65536 is more than queues[0].length (1)"]),
])
@pytest.mark.parametrize("argv", [["check"], ["launch", "--model"], ["search"],
                                  ["evaluate", "--gpu", "r9-nano"]], ids=lambda a: a[0])
def test_a_split_k_that_describes_no_kernel_is_refused(tmp_path, argv, length, split, groups, words):
    k = write(tmp_path, {"name": "k", "compute_intensity": 1.0, "grid": {"work_groups": groups, "split_k": split},
                         "queues": [{"type": "streaming", "length": length, "elem_size": 2}]})
    o = run_cli([argv[0], k] + argv[1:], timeout=20)
    clean_error(o, 2, f"k.json: {words[0]}", *words[1:])


def test_a_split_k_the_grid_and_queues_allow_is_fine():
    doc = json.loads((MM_KERNEL.parent / "matrix-matrix-reduction.json").read_text())
    assert parse_kernel(doc).split_k == 2
    doc["grid"]["split_k"] = doc["grid"]["work_groups"]    # every work-group its own slice: still a kernel
    assert parse_kernel(doc).split_k == doc["grid"]["work_groups"]
    with pytest.raises(KernelError, match="split_k: 4 does not divide grid.work_groups"):
        Kernel("k", 1.0, queues=[(64, abi.QUEUE_STREAMING, 2)], work_groups=6, split_k=4)


# ---------------------------------------------------------------- silent bugs
def test_a_layers_own_lds_partition_configures_its_launch_and_its_model(tmp_path):
    """A layer with partition.lds_bytes gets the configuration the unit gives in that LDS,
    and the model runs it on a CU of that LDS (not the GPU's whole LDS)."""
    lds = 16384
    w = format.parse({"name": "w", "layers": [
        {"name": "whole", "kernel_file": str(MM_KERNEL)},
        {"name": "part", "kernel_file": str(MM_KERNEL), "partition": {"lds_bytes": lds}}]})
    session = runner.Session("r9-nano")
    whole, part = runner.run(session, [runner.Tenant(w)])
    k = load_kernel(MM_KERNEL)
    gst = tables.load("r9-nano")
    own = Device(gst).launch(dataclasses.replace(k, lds_bytes=lds))
    expect = Config(own.tile, tuple(q.slots for q in own.queues))
    assert own.used_bytes <= lds and part.config == expect != whole.config and part.lds_bytes == lds
    work = dataclasses.replace(Work.of(k), name="")
    assert part.run_ns == runner.model_ns(machine(tables.unpack(gst), 0, 0, lds), work, expect)


def test_the_dvfs_total_speedup_is_sw_time_over_hw_time():
    w = format.load(MM_KERNEL.parent.parent / "workloads" / "whisper-tiny-types.json")
    trace = dvfs.load_trace("mi100-u-shaped")
    c = dvfs.compare("mi100", w, trace, clock_aware_best=False)
    hw_total = max(s.end for s in c["steps"]["hw"])
    sw_total = max(s.end for s in c["steps"]["sw"])
    s = c["summary"]
    assert (s["hw_ns"], s["sw_ns"]) == (hw_total, sw_total) and hw_total != sw_total
    assert s["hw_speedup_total"] == pytest.approx(sw_total / hw_total)
    # per layer the same reading: > 1 where QuCo-HW's run is shorter
    assert all((r["hw_speedup"] > 1) == (r["hw_ns"] < r["sw_ns"]) for r in c["rows"])


def test_diff_compares_the_lds_bytes(monkeypatch):
    """A layout that differs in one LDS byte while status and detail agree is a disagreement."""
    real = reference.configure

    def off_by_one_byte(gst, record, generation=1):
        r = real(gst, record, generation)
        lds = bytearray(r.lds)
        lds[-1] ^= 1
        return dataclasses.replace(r, lds=bytes(lds))
    monkeypatch.setattr(cli_launch.reference, "configure", off_by_one_byte)
    o = run_cli(["diff", str(MM_KERNEL), "--gpu", "r9-nano"], timeout=60)
    assert o.code == 1 and "NO" in o.out, (o.code, o.err)
    monkeypatch.setattr(cli_launch.reference, "configure", real)
    assert run_cli(["diff", str(MM_KERNEL), "--gpu", "r9-nano"], timeout=60).code == 0


def test_a_fit_disagreement_between_unit_and_model_is_exit_1_not_a_traceback(tmp_path, monkeypatch):
    """Should the unit's fit rule (LDS, barriers) and the model's ever part again, the commands
    say so (exit 1: they disagree), not with the model's ValueError or as the unit's error (3)."""
    from quco.cli import perf
    monkeypatch.setattr(perf, "occupancy", lambda *a, **k: 0)
    o = run_cli(["launch", write(tmp_path, SMALL), "--model"], timeout=60)
    assert o.kind == "error" and o.code == 1 and "Traceback" not in o.err, (o.code, o.err, o.trace)
    assert "does not fit one work-group on a CU of the performance model" in o.err and "disagree" in o.err
    monkeypatch.setattr(runner, "model_ns", lambda *a: None)
    w = write(tmp_path, {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64}}]}, "w.json")
    o = run_cli(["run", w, "--no-baselines"], timeout=60)
    assert o.code == 1 and "w.json: layer 0 (fc): the unit's configuration" in o.err and "disagree" in o.err, o.err


def test_a_workload_of_many_types_prints_the_longest_of_them(tmp_path, monkeypatch):
    """Every layer named and no "type": each its own type. The table shows the types with the
    most time (rendering 100,000 rows took minutes), --json keeps every one."""
    from quco.cli import run as cli_run
    monkeypatch.setattr(cli_run, "PER_LAYER_MAX", 2)
    sizes = [16, 64, 32, 128]
    w = write(tmp_path, {"name": "w", "layers": [{"name": f"l{n}", "gemm": {"m": 64, "k": n * 8, "n": 64}}
                                                 for n in sizes]}, "w.json")
    o = run_cli(["run", w, "--no-baselines"], timeout=120)
    assert o.code == 0, o.err
    text = " ".join(o.out.split())   # the caption wraps at the table's width
    assert "the 2 types with the most QuCo time of 4" in text
    shown = [n for n in sizes if f" l{n} " in text]
    assert shown == [64, 128]      # the two longest (K largest), in workload order
    o = run_cli(["run", w, "--no-baselines", "--json"], timeout=120)
    assert len(json.loads(o.out)["types"]) == 4
