"""quco-emu import: ONNX graphs built in memory with onnx.helper (nothing downloaded)."""
import json

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper  # noqa: E402

from quco.host.cli import main  # noqa: E402
from quco.workloads import format, onnx_import  # noqa: E402
from quco.workloads.format import WorkloadError  # noqa: E402


def weight(name, dims, kind=T.FLOAT16):
    n = 1
    for d in dims:
        n *= d
    return helper.make_tensor(name, kind, dims, [0] * n if kind != T.FLOAT else [0.0] * n)


def model(nodes, inputs, inits, outputs=("y",), kind=T.FLOAT16):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, kind, None) for o in outputs],
                          initializer=inits)
    return helper.make_model(g)


def mlp():
    return model([helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
                  helper.make_node("Relu", ["h"], ["r"], name="act"),
                  helper.make_node("Gemm", ["r", "w2"], ["y"], name="fc2", transB=1)],
                 [helper.make_tensor_value_info("x", T.FLOAT16, [64, 256])],
                 [weight("w1", [256, 512]), weight("w2", [128, 512])])


def test_matmul_gemm_and_the_unsupported_node_in_order():
    doc, skipped = onnx_import.convert(mlp())
    layers = [(l["name"], doc["layer_types"][l["type"]]) for l in doc["layers"]]
    assert layers == [("fc1", {"gemm": {"m": 64, "k": 256, "n": 512}, "elem_size": 2}),
                      ("fc2", {"gemm": {"m": 64, "k": 512, "n": 128}, "elem_size": 2})]   # transB: w2 is [N, K]
    assert skipped == doc["unsupported"] == [{"name": "act", "op_type": "Relu", "reason": "not a MatMul, Gemm or Conv"}]
    w = format.parse(doc)
    assert [l.kernel.work_groups for l in w.layers] == [512 // 8, 128 // 8]


def test_batched_matmul_and_conv():
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"], name="bmm"),
               helper.make_node("Conv", ["img", "k"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
               helper.make_node("Conv", ["img", "k"], ["d"], name="asym", pads=[0, 0, 1, 1])],
              [helper.make_tensor_value_info("a", T.FLOAT, [4, 64, 32]),
               helper.make_tensor_value_info("img", T.FLOAT, [1, 3, 32, 32])],
              [weight("b", [32, 16], T.FLOAT), weight("k", [16, 3, 3, 3], T.FLOAT)], ("y", "c", "d"), T.FLOAT)
    doc, skipped = onnx_import.convert(m)
    bodies = [doc["layer_types"][l["type"]] for l in doc["layers"]]
    assert bodies[0] == {"gemm": {"m": 64, "k": 32, "n": 16, "batch": 4}, "elem_size": 4}
    assert bodies[1]["conv"]["stride"] == [2, 2] and bodies[1]["conv"]["input"] == [32, 32]
    # asymmetric padding: the GEMM of the inferred output, 31 x 31 positions (32 + 1 - 3 + 1)
    assert bodies[2] == {"gemm": {"m": 31 * 31, "k": 27, "n": 16}, "elem_size": 4}
    assert not skipped
    w = format.parse(doc)
    assert w.layers[1].kernel.work_groups == 16 * 16 // 8       # 32x32 stride 2 -> 16x16 positions


def test_symbolic_shapes_are_listed_not_dropped():
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc"),
               helper.make_node("MatMul", ["z", "w"], ["v"], name="fixed")],
              [helper.make_tensor_value_info("x", T.FLOAT16, ["batch", 256]),
               helper.make_tensor_value_info("z", T.FLOAT16, [8, 256])],
              [weight("w", [256, 64])], ("y", "v"))
    doc, skipped = onnx_import.convert(m)
    assert [l["name"] for l in doc["layers"]] == ["fixed"]
    assert skipped[0]["name"] == "fc" and "x" in skipped[0]["reason"] and "unknown" in skipped[0]["reason"]
    with pytest.raises(WorkloadError, match="no MatMul, Gemm or Conv node with known shapes"):
        onnx_import.convert(model([helper.make_node("Relu", ["x"], ["y"])],
                                  [helper.make_tensor_value_info("x", T.FLOAT16, [4])], []))


def test_cli_import_writes_a_workload_that_runs(tmp_path, capsys):
    src, out = tmp_path / "mlp.onnx", tmp_path / "mlp.json"
    onnx.save(mlp(), src)
    assert main(["import", str(src), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 layers" in printed and "Relu x1" in printed
    assert json.loads(out.read_text())["unsupported"][0]["op_type"] == "Relu"
    assert main(["run", str(out), "--no-baselines", "--json"]) == 0
    assert [l["name"] for l in json.loads(capsys.readouterr().out)["layers"]] == ["fc1", "fc2"]
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    assert main(["import", str(bad), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: not a readable ONNX model" in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()
