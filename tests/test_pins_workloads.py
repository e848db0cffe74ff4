"""Issue #24 part 6, workloads side: pins for hand-planted bugs `make test` let through. Each
states the right value independently (by hand, or a closed form) on an input where the bug
and the right answer differ:

- GEMM work-groups are ceil(rows / 8), not floor: 13 output rows need 2 work-groups;
- tenants share DRAM in proportion to their CUs, not equally;
- ONNX Gemm's transA transposes A (importer's public `convert`)."""
import dataclasses

import pytest

from quco.perfmodel.params import machine
from quco.workloads import derive, format, runner

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper  # noqa: E402

from quco.workloads import onnx_import  # noqa: E402


@pytest.mark.parametrize("m,n,batch,wgs", [
    (13, 4, 1, 2),      # rows 0-7 and 8-12: two work-groups (floor would give 1)
    (13, 4, 3, 6),      # per batch
    (17, 9, 1, 3),      # 8 + 8 + 1
    (4, 21, 1, 3),      # N > M: B^T's 21 columns are streamed, 8 + 8 + 5
    (16, 4, 1, 2),      # a multiple of 8: floor and ceil agree
    (5, 2, 1, 1),       # fewer rows than 8: one work-group of 5 queues
])
def test_gemm_work_groups_round_up(m, n, batch, wgs):
    kernel, lines = derive.gemm("g", m, 64, n, batch)
    assert kernel.work_groups == wgs
    streamed = max(m, n)
    rows = min(8, streamed)
    assert len(kernel.queues) == rows + 1 and f"= {wgs:,}" in lines[3]
    # every output row is computed by exactly one work-group: rows x work-groups covers them, one fewer does not
    assert rows * wgs >= batch * streamed > rows * (wgs - batch)


def test_tenants_share_dram_by_their_cus(tmp_path):
    """Two tenants on 48 and 16 of the R9 Nano's 64 CUs, the same memory-bound layer: each layer
    runs on a machine with 48/64 and 16/64 of the GST's DRAM bandwidth (not 1/2 each)."""
    doc = {"name": "t", "layers": [{"name": "mv", "gemm": {"m": 4096, "k": 4096, "n": 1}}]}
    path = tmp_path / "w.json"
    path.write_text(__import__("json").dumps(doc))
    w = format.load(path)
    session = runner.Session("r9-nano")
    steps = runner.run(session, [runner.Tenant(w, 48, 0), runner.Tenant(w, 16, 0)])
    full = {cus: machine(session.g, 0, cus, 0) for cus in (48, 16)}
    for s in steps:
        m = full[s.active_cus]
        by_cus = dataclasses.replace(m, dram_bytes_per_cycle=m.dram_bytes_per_cycle * s.active_cus / 64)
        equal = dataclasses.replace(m, dram_bytes_per_cycle=m.dram_bytes_per_cycle / 2)
        right, wrong = runner.model_ns(by_cus, s.work, s.config), runner.model_ns(equal, s.work, s.config)
        assert right != pytest.approx(wrong, rel=1e-3)   # the input tells the two rules apart
        assert s.run_ns == pytest.approx(right, rel=1e-12)


def gemm_model(a_shape, b_shape, **attrs):
    g = helper.make_graph(
        [helper.make_node("Gemm", ["a", "b"], ["y"], name="fc", **attrs)], "g",
        [helper.make_tensor_value_info("a", T.FLOAT16, a_shape)], [helper.make_tensor_value_info("y", T.FLOAT16, None)],
        initializer=[helper.make_tensor("b", T.FLOAT16, b_shape, [0] * (b_shape[0] * b_shape[1]))])
    return helper.make_model(g)


@pytest.mark.parametrize("a,b,attrs,mkn", [
    ([256, 64], [256, 128], {"transA": 1}, (64, 256, 128)),              # A is [K, M]
    ([256, 64], [128, 256], {"transA": 1, "transB": 1}, (64, 256, 128)),
    ([64, 256], [256, 128], {}, (64, 256, 128)),
    ([96, 32], [96, 16], {"transA": 1}, (32, 96, 16)),
])
def test_onnx_gemm_transposes_a(a, b, attrs, mkn):
    doc, skipped = onnx_import.convert(gemm_model(a, b, **attrs))
    assert skipped == []
    (layer,) = doc["layers"]
    gemm = doc["layer_types"][layer["type"]]["gemm"]
    assert (gemm["m"], gemm["k"], gemm["n"]) == mkn
