"""quco-emu import on real exports: Whisper, T5, ALBERT, GPT-2, ResNet-18, MobileNetV2.

tests/fixtures/onnx/ holds shrunk PyTorch exports of each (bench/onnx_fixtures.py: built from
the published configurations, random weights, the weights' data left out), by both torch
exporters. NAME.expected.json lists the true shape of every Linear / Conv call, recorded by
forward hooks on the torch modules while the export ran: the import must give exactly those,
in order, with the attention products the only MatMuls left out.
"""
import json
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from quco.workloads import format, onnx_graph, onnx_import, runner  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "onnx"
MODELS = sorted(p.stem for p in FIXTURES.glob("*.onnx"))


def expected_body(mod: dict) -> tuple:
    """A torch module call as the workload body the import should give."""
    if mod["kind"] == "linear":
        return "gemm", {"m": mod["m"], "k": mod["k"], "n": mod["n"]}
    body = {k: mod[k] for k in ("in_channels", "out_channels", "kernel", "input", "stride", "padding", "dilation")}
    body.update({"groups": mod["groups"]} if mod["groups"] != 1 else {})
    body.update({"batch": mod["batch"]} if mod["batch"] != 1 else {})
    return "conv", body


def imported(doc) -> list[tuple]:
    return [next((k, v) for k, v in doc["layer_types"][l["type"]].items() if k != "elem_size") for l in doc["layers"]]


def graph_layer_nodes(path) -> int:
    return sum(n.op_type in ("MatMul", "Gemm", "Conv") for n in onnx.load(str(path), load_external_data=False).graph.node)


def test_every_model_and_exporter_is_here_and_small():
    assert set(MODELS) == {f"{m}{e}" for m in ("whisper-tiny", "t5-small", "albert-base-v2", "albert-classifier",
                                               "gpt2", "resnet18", "mobilenet-v2") for e in ("", "-torchscript")}
    assert all((FIXTURES / f"{m}.onnx").stat().st_size < 1 << 20 for m in MODELS)


@pytest.mark.parametrize("name", MODELS)
def test_the_import_is_the_modules_true_shapes(name):
    path = FIXTURES / f"{name}.onnx"
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())["modules"]
    doc, unsupported = onnx_import.convert(path)
    assert imported(doc) == [expected_body(m) for m in expected]
    attention = [u for u in unsupported if u["op_type"] == "MatMul"]
    # every MatMul/Gemm/Conv of the graph is a layer or an attention product; none skipped
    assert len(doc["layers"]) + len(attention) == graph_layer_nodes(path) and "skipped_layers" not in doc
    assert all("attention product" in u["reason"] for u in attention)
    included, _ = onnx_import.convert(path, attention="include")
    assert len(included["layers"]) == graph_layer_nodes(path)
    assert doc["name"] == name       # torch names every graph main_graph: the file's name
    format.parse(doc)


@pytest.mark.parametrize("model", ["whisper-tiny", "t5-small", "albert-classifier", "gpt2", "mobilenet-v2"])
def test_both_exporters_give_the_same_workload(model):
    dynamo, _ = onnx_import.convert(FIXTURES / f"{model}.onnx", attention="include")
    script, _ = onnx_import.convert(FIXTURES / f"{model}-torchscript.onnx", attention="include")
    assert imported(dynamo) == imported(script)
    # module paths from metadata and from node names agree (in MobileNetV2 the dynamo exporter folds
    # each BatchNorm into its Conv and names the node after the BatchNorm: features.0.1, not .0)
    if model == "whisper-tiny":
        assert [l["name"] for l in dynamo["layers"]] == [l["name"] for l in script["layers"]]


def test_onnx_shape_inference_alone_loses_the_torchscript_shapes(monkeypatch):
    """Why ONNX Runtime's pass is there: without it the TorchScript Whisper export is partial."""
    path = FIXTURES / "whisper-tiny-torchscript.onnx"
    monkeypatch.setattr(onnx_graph, "_symbolic", lambda: None)
    with pytest.raises(onnx_import.WorkloadError, match=r"7 of 19 MatMul/Gemm/Conv nodes cannot be imported") as e:
        onnx_import.convert(path)
    assert "symbolic shape inference is not installed" in e.value.problems[-1]
    doc, _ = onnx_import.convert(path, allow_partial=True)
    assert len(doc["layers"]) == 12 and len(doc["skipped_layers"]) == 7


def test_whisper_has_the_published_shapes():
    doc, _ = onnx_import.convert(FIXTURES / "whisper-tiny.onnx")
    layers = {l["name"]: doc["layer_types"][l["type"]] for l in doc["layers"]}
    conv1, conv2 = layers["model.encoder.conv1"]["conv"], layers["model.encoder.conv2"]["conv"]
    assert (conv1["in_channels"], conv1["out_channels"], conv1["kernel"], conv1["input"]) == (80, 384, [3], [3000])
    assert conv2["stride"] == [2] and conv2["input"] == [3000] and conv2["padding"] == [1]
    assert layers["model.encoder.layers.0.fc1"]["gemm"] == {"m": 1500, "k": 384, "n": 1536}    # over the frames
    assert layers["model.decoder.layers.0.fc1"]["gemm"] == {"m": 1, "k": 384, "n": 1536}      # one token
    assert layers["proj_out"]["gemm"] == {"m": 1, "k": 384, "n": 51865}


def test_mobilenet_stride_two_depthwise_convolutions_keep_their_stride():
    doc, _ = onnx_import.convert(FIXTURES / "mobilenet-v2.onnx")
    depthwise = [doc["layer_types"][l["type"]]["conv"] for l in doc["layers"] if "depthwise" in l["type"]]
    assert len(depthwise) == 17                         # one per inverted residual block (Table 2: 1+2+3+4+3+3+1)
    assert sorted(c["stride"][0] for c in depthwise).count(2) == 4   # the blocks that start with s = 2
    assert len({json.dumps(c, sort_keys=True) for c in depthwise}) == len({l["type"] for l in doc["layers"]
                                                                           if "depthwise" in l["type"]})


def _run(w, gpu="mi100"):
    session = runner.Session(gpu)
    return runner.totals(runner.run(session, [runner.Tenant(w)]))


@pytest.mark.firmware
def test_imported_whisper_types_run_as_the_bundled_types(elf_path):
    """The whisper-tiny fixture has the real dimensions: its unique layer types, fp16, one layer
    each in order of first appearance, are examples/workloads/whisper-tiny-types.json."""
    doc, _ = onnx_import.convert(FIXTURES / "whisper-tiny.onnx", elem_size=2)
    first = list(dict.fromkeys(l["type"] for l in doc["layers"]))
    types_doc = {"name": "imported types", "layer_types": doc["layer_types"],
                 "layers": [{"name": t, "type": t} for t in first]}
    ours = format.parse(types_doc)
    bundled = format.load(ROOT / "quco" / "examples" / "workloads" / "whisper-tiny-types.json")
    assert [l.kernel.queues for l in ours.layers] == [l.kernel.queues for l in bundled.layers]
    mine, theirs = _run(ours), _run(bundled)
    assert mine["cache_hit_rate"] == theirs["cache_hit_rate"]
    for key in ("layers", "makespan_ns", "run_ns", "reconf_cycles", "reconf_instructions", "exposed_ns"):
        assert mine[key] == theirs[key], key


def test_the_kv_cache_whisper_is_what_a_generation_loop_launches():
    """whisper-tiny-kv-cache.json: the encoder (2 + 4 x 6), the first step (4 x 10 + proj_out), 19
    steps with cross-attention k and v from the cache (4 x 8 + proj_out); whisper-tiny.json's types."""
    w = format.load(ROOT / "quco" / "examples" / "workloads" / "whisper-tiny-kv-cache.json")
    paper = format.load(ROOT / "quco" / "examples" / "workloads" / "whisper-tiny.json")
    assert len(w.layers) == 2 + 4 * 6 + (4 * 10 + 1) + 19 * (4 * 8 + 1) == 694
    assert w.types() == paper.types()
    count = {t: sum(l.type == t for l in w.layers) for t in w.types()}
    assert count["FC-1"] == 4 * 4 + 4 * 2           # encoder q, k, v, out; cross k, v once per decoder layer
    assert count["FC-7"] == 20                       # the output projection at every step
    assert count["FC-4"] == 20 * 4 * 6               # self q, k, v, out; cross q, out
