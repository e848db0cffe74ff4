"""quco-emu import: ONNX graphs built in memory with onnx.helper (nothing downloaded).

The real exports (Whisper, T5, ALBERT, GPT-2, ResNet-18, MobileNetV2) are in test_onnx_fixtures.py.
"""
import json

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper  # noqa: E402

from quco.cli.main import main  # noqa: E402
from quco.workloads import format, onnx_graph, onnx_import  # noqa: E402
from quco.workloads.format import WorkloadError  # noqa: E402


def weight(name, dims, kind=T.FLOAT16):
    n = 1
    for d in dims:
        n *= d
    return helper.make_tensor(name, kind, dims, [0] * n if kind != T.FLOAT else [0.0] * n)


def dims_only(name, dims, kind=T.FLOAT):
    """An initializer with its dims and no data (as the fixtures): the importer reads only dims."""
    t = onnx.TensorProto(name=name, data_type=kind, dims=dims)
    return t


def vi(name, dims, kind=T.FLOAT16):
    return helper.make_tensor_value_info(name, kind, dims)


def model(nodes, inputs, inits, outputs=("y",), kind=T.FLOAT16, name="g"):
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info(o, kind, None) for o in outputs],
                          initializer=inits)
    return helper.make_model(g)


def mlp():
    return model([helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
                  helper.make_node("Relu", ["h"], ["r"], name="act"),
                  helper.make_node("Gemm", ["r", "w2"], ["y"], name="fc2", transB=1)],
                 [vi("x", [64, 256])], [weight("w1", [256, 512]), weight("w2", [128, 512])])


def bodies(doc):
    return [doc["layer_types"][l["type"]] for l in doc["layers"]]


def test_matmul_gemm_and_the_unsupported_node_in_order():
    doc, skipped = onnx_import.convert(mlp())
    layers = [(l["name"], doc["layer_types"][l["type"]]) for l in doc["layers"]]
    assert layers == [("fc1", {"gemm": {"m": 64, "k": 256, "n": 512}, "elem_size": 2}),
                      ("fc2", {"gemm": {"m": 64, "k": 512, "n": 128}, "elem_size": 2})]   # transB: w2 is [N, K]
    assert skipped == doc["unsupported"] == [{"name": "act", "op_type": "Relu", "reason": "not a MatMul, Gemm or Conv"}]
    assert "skipped_layers" not in doc
    w = format.parse(doc)
    assert [l.kernel.work_groups for l in w.layers] == [512 // 8, 128 // 8]


def test_a_linear_over_a_batch_is_one_gemm_and_convolutions_keep_their_settings():
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"], name="linear"),
               helper.make_node("Conv", ["img", "k"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
               helper.make_node("Conv", ["img", "k"], ["d"], name="asym", pads=[0, 0, 1, 1])],
              [vi("a", [4, 64, 32], T.FLOAT), vi("img", [1, 3, 32, 32], T.FLOAT)],
              [weight("b", [32, 16], T.FLOAT), weight("k", [16, 3, 3, 3], T.FLOAT)], ("y", "c", "d"), T.FLOAT)
    doc, _ = onnx_import.convert(m)
    got = bodies(doc)
    assert got[0] == {"gemm": {"m": 4 * 64, "k": 32, "n": 16}, "elem_size": 4}   # [4,64,32] x W: 256 rows
    assert got[1]["conv"] == {"in_channels": 3, "out_channels": 16, "kernel": [3, 3], "input": [32, 32],
                              "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1]}
    # padding that differs between the sides: the GEMM of the inferred output, 31 x 31 positions (32 + 1 - 3 + 1)
    assert got[2] == {"gemm": {"m": 31 * 31, "k": 27, "n": 16}, "elem_size": 4}
    assert format.parse(doc).layers[1].kernel.work_groups == 16 * 16 // 8   # 32x32 stride 2 -> 16x16 positions


def test_convolutions_differing_only_in_stride_padding_dilation_or_groups_are_distinct_types():
    base = dict(kernel_shape=[3, 3])
    variants = [dict(pads=[1, 1, 1, 1]), dict(pads=[1, 1, 1, 1], strides=[2, 2]), dict(pads=[2, 2, 2, 2], dilations=[2, 2]),
                dict(pads=[0, 0, 0, 0]), dict(pads=[1, 1, 1, 1], group=8)]
    nodes = [helper.make_node("Conv", ["x", "w8" if v.get("group") else "w"], [f"y{i}"], name=f"c{i}", **base, **v)
             for i, v in enumerate(variants)]
    m = model(nodes, [vi("x", [1, 8, 16, 16])], [dims_only("w", [8, 8, 3, 3], T.FLOAT16),
                                                 dims_only("w8", [8, 1, 3, 3], T.FLOAT16)],
              [f"y{i}" for i in range(len(variants))])
    doc, _ = onnx_import.convert(m)
    assert len(doc["layer_types"]) == len(variants)
    w = format.parse(doc)
    # each layer runs with its own settings: output positions 16x16, 8x8, 16x16, 14x14, 16x16
    assert [l.kernel.work_groups for l in w.layers[:4]] == [16 * 16 // 8, 8 * 8 // 8, 16 * 16 // 8, -(-14 * 14 // 8)]
    dw = bodies(doc)[4]["conv"]
    assert dw["groups"] == 8 and "depthwise" in doc["layers"][4]["type"]
    # depthwise: 8 products of M = 256 positions, K = 1 x 3 x 3, N = 1
    assert w.layers[4].kernel.work_groups == 8 * 256 // 8 and w.layers[4].kernel.queues[0][0] == 9


def test_auto_pad_same_is_the_specs_padding():
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="same", auto_pad="SAME_UPPER", strides=[2, 2]),
               helper.make_node("Conv", ["x", "w"], ["z"], name="valid", auto_pad="VALID")],
              [vi("x", [1, 4, 9, 9])], [dims_only("w", [4, 4, 3, 3], T.FLOAT16)], ("y", "z"))
    got = bodies(onnx_import.convert(m)[0])
    assert got[0]["conv"]["padding"] == [1, 1] and got[0]["conv"]["stride"] == [2, 2]   # 9 -> 5: total pad 2
    assert got[1]["conv"]["padding"] == [0, 0]


def attention_block():
    """q = x Wq, k = x Wk; scores = q k^T: one product of two activations."""
    return model([helper.make_node("MatMul", ["x", "wq"], ["q"], name="/enc/q_proj/MatMul"),
                  helper.make_node("MatMul", ["x", "wk"], ["k"], name="/enc/k_proj/MatMul"),
                  helper.make_node("Transpose", ["k"], ["kt"], name="/enc/Transpose"),
                  helper.make_node("MatMul", ["q", "kt"], ["y"], name="/enc/MatMul")],
                 [vi("x", [10, 64])], [dims_only("wq", [64, 64], T.FLOAT16), dims_only("wk", [64, 64], T.FLOAT16)],
                 name="main_graph")


def test_attention_products_are_left_out_by_default_and_included_on_request(tmp_path, capsys):
    doc, unsupported = onnx_import.convert(attention_block())
    assert [l["name"] for l in doc["layers"]] == ["enc.q_proj", "enc.k_proj"]    # module paths, the op cut
    assert [u["name"] for u in unsupported if u["op_type"] == "MatMul"] == ["enc"]
    doc, _ = onnx_import.convert(attention_block(), attention="include")
    assert [l["name"] for l in doc["layers"]] == ["enc.q_proj", "enc.k_proj", "enc"]
    assert bodies(doc)[2] == {"gemm": {"m": 10, "k": 64, "n": 10}, "elem_size": 2}
    src = tmp_path / "bert-ish.onnx"
    onnx.save(attention_block(), src)
    assert main(["import", str(src), "-o", str(tmp_path / "w.json")]) == 0
    printed = capsys.readouterr().out
    assert "left out: 1 attention products" in printed and "--attention include" in printed
    assert json.loads((tmp_path / "w.json").read_text())["name"] == "bert-ish"     # main_graph: the file's name


def test_a_partial_import_is_an_error_unless_allowed_and_run_says_so(tmp_path, capsys):
    m = model([helper.make_node("MatMul", ["x", "w"], ["h"], name="fixed"),
               helper.make_node("MatMul", ["z", "w"], ["v"], name="symbolic")],
              [vi("x", [8, 256]), vi("z", ["batch", 256])], [dims_only("w", [256, 64], T.FLOAT16)], ("h", "v"))
    src, out = tmp_path / "m.onnx", tmp_path / "m.json"
    onnx.save(m, src)
    assert main(["import", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}: 1 of 2 MatMul/Gemm/Conv nodes cannot be imported" in err and "--allow-partial" in err
    assert "node symbolic (MatMul): shape of z unknown" in err and not out.exists()
    assert main(["import", str(src), "-o", str(out), "--allow-partial"]) == 0
    assert "partial import" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert [l["name"] for l in doc["layers"]] == ["fixed"]
    assert doc["skipped_layers"] == [{"name": "symbolic", "op_type": "MatMul", "reason": doc["skipped_layers"][0]["reason"]}]
    assert format.load(out).skipped == doc["skipped_layers"]
    assert main(["run", str(out), "--no-baselines"]) == 0
    assert "partial import: 1 MatMul/Gemm/Conv nodes of the model are not in it" in capsys.readouterr().out
    assert main(["run", str(out), "--no-baselines", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tenants"][0]["totals"]["skipped_layers"] == 1


def test_a_long_list_of_other_nodes_is_summed_up_per_operator(monkeypatch):
    monkeypatch.setattr(onnx_import, "MAX_LISTED", 2)
    doc, unsupported = onnx_import.convert(mlp())
    assert doc["unsupported"] == unsupported                       # one node: listed as it is
    m = model([helper.make_node("MatMul", ["x", "w"], ["h0"], name="fc")] +
              [helper.make_node("Relu", [f"h{i}"], [f"h{i + 1}"], name=f"r{i}") for i in range(3)] +
              [helper.make_node("Neg", ["h3"], ["y"], name="neg")],
              [vi("x", [4, 8])], [dims_only("w", [8, 8], T.FLOAT16)])
    doc, unsupported = onnx_import.convert(m)
    assert len(unsupported) == 4 and doc["unsupported"] == [
        {"name": "3 nodes, the first r0", "op_type": "Relu", "reason": "not a MatMul, Gemm or Conv"},
        {"name": "1 nodes, the first neg", "op_type": "Neg", "reason": "not a MatMul, Gemm or Conv"}]


def test_nothing_to_import_says_why():
    with pytest.raises(WorkloadError, match="nothing to import: 1 nodes, none a MatMul/Gemm/Conv: Relu"):
        onnx_import.convert(model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], []))
    with pytest.raises(WorkloadError, match="nothing to import: 1 attention products"):
        onnx_import.convert(model([helper.make_node("MatMul", ["x", "z"], ["y"])], [vi("x", [4, 4]), vi("z", [4, 4])], []))
    # a 3-D convolution (or a transposed one) is named with its reason, not "unknown shapes"
    conv3d = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c3")], [vi("x", [1, 2, 4, 4, 4])],
                   [dims_only("w", [2, 2, 3, 3, 3], T.FLOAT16)])
    with pytest.raises(WorkloadError, match="node c3 .Conv.: Conv over 3 spatial dimensions"):
        onnx_import.convert(conv3d)
    tconv = model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up")], [vi("x", [1, 2, 4, 4])],
                  [dims_only("w", [2, 2, 3, 3], T.FLOAT16)])
    with pytest.raises(WorkloadError, match="node up .ConvTranspose.: a transposed convolution"):
        onnx_import.convert(tconv)


def test_quantized_matmuls_are_gemms_of_one_byte_elements():
    m = model([helper.make_node("MatMulInteger", ["x", "w"], ["y"], name="qfc")], [vi("x", [16, 32], T.UINT8)],
              [dims_only("w", [32, 8], T.INT8)], kind=T.INT32)
    assert bodies(onnx_import.convert(m)[0]) == [{"gemm": {"m": 16, "k": 32, "n": 8}, "elem_size": 1}]
    scale = [helper.make_tensor(n, T.FLOAT, [], [0.1]) for n in ("xs", "ws", "ys")]
    zero = [helper.make_tensor(n, T.UINT8, [], [0]) for n in ("xz", "yz")] + [helper.make_tensor("wz", T.INT8, [], [0])]
    q = model([helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["h"], name="qlm"),
               helper.make_node("QLinearConv", ["img", "xs", "xz", "k", "ws", "wz", "ys", "yz"], ["y"], name="qconv",
                                pads=[1, 1, 1, 1], group=4)],
              [vi("x", [16, 32], T.UINT8), vi("img", [1, 4, 8, 8], T.UINT8)],
              [dims_only("w", [32, 8], T.INT8), dims_only("k", [4, 1, 3, 3], T.INT8)] + scale + zero, ("h", "y"), T.UINT8)
    got = bodies(onnx_import.convert(q)[0])
    assert got[0] == {"gemm": {"m": 16, "k": 32, "n": 8}, "elem_size": 1}
    assert got[1]["conv"]["groups"] == 4 and got[1]["elem_size"] == 1


def test_weights_are_read_for_their_dims_only():
    big = helper.make_tensor("w", T.FLOAT, [512, 512], [0.5] * (512 * 512))   # 1 MB of data
    g = onnx_graph.read(model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [4, 512], T.FLOAT)], [big],
                              kind=T.FLOAT))
    assert "w" not in {i.name for i in g.graph.initializer} and g.dims("w") == [512, 512] and "w" in g.constant
    assert g.model.ByteSize() < 10_000


def test_weights_in_an_external_file_are_never_read(tmp_path):
    """A model saved with its weights beside it (> 2 GB models must be): the import needs no data file."""
    np = pytest.importorskip("numpy")
    small = onnx.numpy_helper.from_array(np.ones(384, np.float32), "ln")   # 1.5 KB: external, yet few elements
    big = onnx.numpy_helper.from_array(np.ones((384, 384), np.float32), "w")
    m = model([helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"), helper.make_node("Mul", ["h", "ln"], ["y"])],
              [vi("x", [4, 384], T.FLOAT)], [big, small], kind=T.FLOAT)
    onnx.save(m, tmp_path / "m.onnx", save_as_external_data=True, location="m.data", size_threshold=1024)
    (tmp_path / "m.data").unlink()
    doc, _ = onnx_import.convert(tmp_path / "m.onnx")
    assert bodies(doc) == [{"gemm": {"m": 4, "k": 384, "n": 384}, "elem_size": 4}] and "failed" not in doc["description"]


# ---------------------------------------------------------------- hostile inputs (issue 24, part 5)
def hostile(node, inputs, inits, tmp_path, capsys, extra=()):
    """Import a graph with one bad node (and a good fc): exit 2 naming the .onnx file and the node."""
    good = helper.make_node("MatMul", ["g", "gw"], ["gy"], name="good")
    src, out = tmp_path / "bad.onnx", tmp_path / "out.json"
    onnx.save(model([good, node], [vi("g", [4, 8])] + inputs, [dims_only("gw", [8, 8], T.FLOAT16)] + inits,
                    ("gy", node.output[0])), src)
    code = main(["import", str(src), "-o", str(out), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.err, out


@pytest.mark.parametrize("node, inputs, inits, reason", [
    (helper.make_node("MatMul", ["x"], ["y"], name="one_input"), [vi("x", [4, 8])], [], "expected at least 2"),
    (helper.make_node("MatMul", ["x", "s"], ["y"], name="scalar"), [vi("x", [4, 8])], [dims_only("s", [], T.FLOAT16)],
     "MatMul of a scalar"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="group0", group=0), [vi("x", [1, 4, 8, 8])],
     [dims_only("w", [4, 4, 3, 3], T.FLOAT16)], "group 0; expected a whole number >= 1"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="rank1", auto_pad="SAME_UPPER"), [vi("x", [1, 4, 8, 8])],
     [dims_only("w", [4], T.FLOAT16)], "weight [4] has rank 1"),
    (helper.make_node("MatMul", ["x", "w"], ["y"], name="huge"), [vi("x", [2, 4])],
     [dims_only("w", [4, 1 << 31], T.FLOAT16)], "gemm.n: 2147483648 is out of range"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="stride0", strides=[0, 0]), [vi("x", [1, 4, 8, 8])],
     [dims_only("w", [4, 4, 3, 3], T.FLOAT16)], "conv.stride[0]: 0 is out of range; expected integer 1 to 4096"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="wide"), [vi("x", [1, 4, 2, 2])],
     [dims_only("w", [4, 4, 5, 5], T.FLOAT16)], "conv.input[0]: 2 is smaller than the kernel's reach 5"),
])
def test_a_bad_node_is_named_with_the_model_file_never_a_traceback(node, inputs, inits, reason, tmp_path, capsys):
    code, err, out = hostile(node, inputs, inits, tmp_path, capsys)
    assert code == 2 and not out.exists()
    assert f"{tmp_path / 'bad.onnx'}: node {node.name} ({node.op_type}): " in err and reason in err
    assert str(out) not in err
    code, err, out = hostile(node, inputs, inits, tmp_path, capsys, ["--allow-partial"])
    assert code == 0 and json.loads(out.read_text())["skipped_layers"][0]["name"] == node.name


def test_a_layer_inside_a_loop_body_is_named_as_skipped():
    body = helper.make_graph([helper.make_node("MatMul", ["a", "bw"], ["c"], name="inner")], "body",
                             [vi("i", [], T.INT64), vi("cond", [], T.BOOL), vi("a", [2, 4])],
                             [vi("cond", [], T.BOOL), vi("c", [2, 4])], [dims_only("bw", [4, 4], T.FLOAT16)])
    m = model([helper.make_node("Loop", ["n", "c0", "x"], ["y"], name="loop", body=body),
               helper.make_node("MatMul", ["x", "w"], ["z"], name="outer")],
              [vi("n", [], T.INT64), vi("c0", [], T.BOOL), vi("x", [2, 4])], [dims_only("w", [4, 4], T.FLOAT16)],
              ("y", "z"))
    with pytest.raises(WorkloadError, match="node inner .MatMul.: inside the body of Loop node loop"):
        onnx_import.convert(m)
    doc, _ = onnx_import.convert(m, allow_partial=True)
    assert [l["name"] for l in doc["layers"]] == ["outer"] and doc["skipped_layers"][0]["name"] == "inner"


def test_non_utf8_names_and_terminal_escapes_never_reach_the_terminal(tmp_path, capsys):
    m = model([helper.make_node("MatMul", ["xQQ", "wQQ"], ["h"], name="fcQQ"),     # node and tensor names
               helper.make_node("Relu", ["h"], ["y"], name="\x1b[31mred\x1b]0;title\x07"),
               helper.make_node("Evil\x1b[2J", ["h"], ["z"], name="custom", domain="x.evil")],
              [vi("xQQ", [4, 8])], [dims_only("wQQ", [8, 8], T.FLOAT16)], ("y", "z"), name="gQQ")
    src, out = tmp_path / "m.onnx", tmp_path / "m.json"
    src.write_bytes(m.SerializeToString().replace(b"QQ", b"\xff\xfe"))     # not UTF-8
    assert main(["import", str(src), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out + captured.err and "\\x1b[2J" in captured.out
    doc = json.loads(out.read_text())
    assert doc["layers"][0]["name"] == "fc\\xff\\xfe" and doc["name"] == "g\\xff\\xfe"
    assert doc["layer_types"][doc["layers"][0]["type"]]["gemm"] == {"m": 4, "k": 8, "n": 8}
    assert {u["name"] for u in doc["unsupported"]} >= {"\\x1b[31mred\\x1b]0;title\\x07"}
    assert main(["run", str(out), "--no-baselines", "--layers"]) == 0
    assert "\x1b[31m" not in capsys.readouterr().out


def test_long_node_names_are_shortened_to_their_tail_and_stay_unique(tmp_path, capsys):
    long = "/" + "/".join(f"block{i}" for i in range(60))
    m = model([helper.make_node("MatMul", ["x", "w"], ["h"], name=long + "/a/MatMul"),
               helper.make_node("MatMul", ["h", "w"], ["y"], name=long + "/b/MatMul"),
               helper.make_node("MatMul", ["y", "w"], ["z"], name=long + "/b/MatMul_1"),
               helper.make_node("MatMul", ["z", "w"], ["o"], name="/head/MatMul")],
              [vi("x", [4, 8])], [dims_only("w", [8, 8], T.FLOAT16)], ("o",))
    src, out = tmp_path / "m.onnx", tmp_path / "m.json"
    onnx.save(m, src)
    assert main(["import", str(src), "-o", str(out)]) == 0
    names = [l["name"] for l in json.loads(out.read_text())["layers"]]
    assert names[3] == "head" and all(len(n) == 128 and n.startswith("...") for n in names[:3])
    assert names[0].endswith("block59.a") and names[1].endswith("block59.b") and names[2].endswith("block59.b#2")
    assert main(["run", str(out), "--no-baselines"]) == 0


@pytest.mark.parametrize("args, message", [(["-o", ""], "-o/--output: empty"), (["-o", "x.json", "--name", ""], "--name: empty")])
def test_empty_output_or_name_is_refused(args, message, tmp_path, capsys, monkeypatch):
    src = tmp_path / "mlp.onnx"
    onnx.save(mlp(), src)
    monkeypatch.chdir(tmp_path)
    assert main(["import", str(src), *args]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_cli_import_writes_a_workload_that_runs(tmp_path, capsys):
    src, out = tmp_path / "mlp.onnx", tmp_path / "mlp.json"
    onnx.save(mlp(), src)
    assert main(["import", str(src), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 layers" in printed and "Relu x1" in printed
    assert json.loads(out.read_text())["unsupported"][0]["op_type"] == "Relu"
    assert main(["run", str(out), "--no-baselines", "--json"]) == 0
    assert [l["name"] for l in json.loads(capsys.readouterr().out)["layers"]] == ["fc1", "fc2"]
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(src.read_bytes()[:len(src.read_bytes()) // 2])
    assert main(["import", str(cut), "-o", str(tmp_path / "x.json")]) == 2
    assert f"{cut}: not a readable ONNX model" in capsys.readouterr().err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    assert main(["import", str(bad), "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: not a readable ONNX model" in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------- issue 28: planted-bug classes
# Each planted by hand and caught here (docs/testing.md): a weight with leading 1 dimensions
# taken as a batched product, and a convolution with asymmetric padding losing its batch in M.
@pytest.mark.parametrize("w_dims", [[64, 32], [1, 64, 32], [1, 1, 64, 32]], ids=["[K,N]", "[1,K,N]", "[1,1,K,N]"])
def test_a_weight_with_leading_ones_is_one_gemm_over_every_row(w_dims):
    # x [4, 16, 64] x w [.., 64, 32]: one weight for all 4 x 16 = 64 rows, a single GEMM
    # (M 64, K 64, N 32), however many leading 1s the weight carries
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], [vi("x", [4, 16, 64])], [weight("w", w_dims)])
    doc, _ = onnx_import.convert(m)
    assert bodies(doc) == [{"gemm": {"m": 64, "k": 64, "n": 32}, "elem_size": 2}]


def test_a_weight_with_a_real_batch_is_a_batched_product():
    # w [4, 64, 32]: four weights, one per leading index: 4 products of M 16
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="bmm")], [vi("x", [4, 16, 64])], [weight("w", [4, 64, 32])])
    doc, _ = onnx_import.convert(m)
    assert bodies(doc) == [{"gemm": {"m": 16, "k": 64, "n": 32, "batch": 4}, "elem_size": 2}]


def test_asymmetric_padding_keeps_the_batch_in_m():
    # x [2, 3, 8, 8], w [4, 3, 3, 3], pads [top 1, left 1, bottom 1, right 0]: output 8 x 7
    # (H: 8 + 1 + 1 - 3 + 1 = 8, W: 8 + 1 + 0 - 3 + 1 = 7); im2col M = 2 images x 8 x 7 = 112,
    # K = 3 x 3 x 3 = 27, N = 4
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 0])],
              [vi("x", [2, 3, 8, 8])], [weight("w", [4, 3, 3, 3])])
    doc, _ = onnx_import.convert(m)
    assert bodies(doc) == [{"gemm": {"m": 112, "k": 27, "n": 4}, "elem_size": 2}]
    # the same padding on both sides stays a conv with its batch
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
              [vi("x", [2, 3, 8, 8])], [weight("w", [4, 3, 3, 3])])
    (body,) = bodies(onnx_import.convert(m)[0])
    assert body["conv"]["batch"] == 2 and format.parse(
        {"name": "w", "layers": [{"name": "c", **body}]}).layers[0].kernel.work_groups == 2 * 8 * 8 // 8
