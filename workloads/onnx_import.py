"""An ONNX model as a workload: MatMul, Gemm and Conv nodes become layers, in graph order.

Shapes come from ONNX shape inference (`onnx.shape_inference.infer_shapes`). Every other
node, and any of these three whose shapes are not known as whole numbers (a symbolic batch
dimension, say), is listed under the workload's "unsupported" with the reason: nothing is
dropped silently. Layers of the same shape share one entry of "layer_types".

`onnx` is an optional dependency (pip install 'quco-emu[onnx]').
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from quco.workloads.format import WorkloadError

SUPPORTED = ("MatMul", "Gemm", "Conv")


def _onnx():
    try:
        import onnx
    except ImportError:
        raise WorkloadError(["quco-emu import needs the onnx package: pip install 'quco-emu[onnx]'"]) from None
    return onnx


def _shapes(graph) -> dict:
    """name -> (dims or None if any is symbolic, element type)."""
    out = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else [None]
        if None not in dims or out.get(vi.name, (None,))[0] is None:   # a declared output without a shape
            out[vi.name] = (None if None in dims else dims, t.elem_type)  # does not hide the inferred one
    for init in graph.initializer:
        out[init.name] = (list(init.dims), init.data_type)
    return out


def _attrs(node) -> dict:
    onnx = _onnx()
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _matmul(a, b):
    """numpy.matmul semantics: 1-D operands gain a dimension, leading dimensions broadcast."""
    a2, b2 = ([1] + a if len(a) == 1 else a), (b + [1] if len(b) == 1 else b)
    if a2[-1] != b2[-2]:
        raise ValueError(f"shapes {a} x {b} do not multiply")
    try:
        lead = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    except ValueError:
        raise ValueError(f"leading dimensions of {a} and {b} do not broadcast") from None
    return {"m": a2[-2], "k": a2[-1], "n": b2[-1], "batch": math.prod(lead)}


def _gemm(a, b, at: dict):
    if len(a) != 2 or len(b) != 2:
        raise ValueError(f"Gemm takes 2-D inputs, got {a} and {b}")
    m, k = (a[::-1] if at.get("transA") else a)
    k2, n = (b[::-1] if at.get("transB") else b)
    if k != k2:
        raise ValueError(f"shapes {a} x {b} (transA {at.get('transA', 0)}, transB {at.get('transB', 0)}) do not multiply")
    return {"m": m, "k": k, "n": n}


def _conv(x, w, y, at: dict):
    dims = len(x) - 2
    if dims not in (1, 2):
        raise ValueError(f"Conv over {dims} spatial dimensions; workloads take 1-D and 2-D")
    pads = at.get("pads", [0] * 2 * dims)
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or pads[:dims] != pads[dims:]:
        # asymmetric or automatic padding: the GEMM from the inferred output shape
        if y is None:
            raise ValueError("padding is not symmetric and the output shape is unknown")
        g = at.get("group", 1)
        return "gemm", {"m": x[0] * math.prod(y[2:]), "k": w[1] * math.prod(w[2:]), "n": w[0] // g, "batch": g}
    conv = {"in_channels": x[1], "out_channels": w[0], "kernel": list(w[2:]), "input": list(x[2:]),
            "stride": list(at.get("strides", [1] * dims)), "padding": list(pads[:dims]),
            "dilation": list(at.get("dilations", [1] * dims))}
    if at.get("group", 1) != 1:
        conv["groups"] = at["group"]
    if x[0] != 1:
        conv["batch"] = x[0]
    return "conv", conv


def convert(path, name: str | None = None, elem_size: int | None = None) -> tuple[dict, list[dict]]:
    """(workload document, unsupported nodes) for an ONNX file or ModelProto."""
    onnx = _onnx()
    where = "model" if isinstance(path, onnx.ModelProto) else str(path)
    try:
        model = path if isinstance(path, onnx.ModelProto) else onnx.load(str(path))
        model = onnx.shape_inference.infer_shapes(model)
    except FileNotFoundError:
        raise WorkloadError([f"{where}: cannot read: no such file"]) from None
    except Exception as e:  # onnx raises DecodeError, ValidationError, InferenceError...
        raise WorkloadError([f"{where}: not a readable ONNX model: {str(e).splitlines()[0] if str(e) else type(e).__name__}"]) from None
    sizes = {onnx.TensorProto.FLOAT16: 2, onnx.TensorProto.BFLOAT16: 2, onnx.TensorProto.FLOAT: 4,
             onnx.TensorProto.DOUBLE: 8, onnx.TensorProto.INT8: 1, onnx.TensorProto.UINT8: 1,
             onnx.TensorProto.INT32: 4, onnx.TensorProto.INT64: 8}
    shapes = _shapes(model.graph)
    types, layers, skipped = {}, [], []
    for i, node in enumerate(model.graph.node):
        label = node.name or f"{node.op_type}_{i}"
        if node.op_type not in SUPPORTED:
            skipped.append({"name": label, "op_type": node.op_type, "reason": "not a MatMul, Gemm or Conv"})
            continue
        ins = [shapes.get(n, (None, 0)) for n in node.input[:2]]
        unknown = [n for n, (dims, _) in zip(node.input[:2], ins) if dims is None]
        if unknown:
            skipped.append({"name": label, "op_type": node.op_type,
                            "reason": f"shape of {', '.join(unknown)} unknown after shape inference (symbolic or missing)"})
            continue
        (a, ta), (b, _) = ins
        try:
            if node.op_type == "MatMul":
                kind, body = "gemm", _matmul(a, b)
            elif node.op_type == "Gemm":
                kind, body = "gemm", _gemm(a, b, _attrs(node))
            else:
                kind, body = _conv(a, b, shapes.get(node.output[0], (None, 0))[0], _attrs(node))
        except ValueError as e:
            skipped.append({"name": label, "op_type": node.op_type, "reason": str(e)})
            continue
        if kind == "gemm" and body.get("batch", 1) == 1:
            body.pop("batch", None)
        size = elem_size or sizes.get(ta, 2)
        key = f"{node.op_type} " + ("x".join(str(body[d]) for d in "mkn") if kind == "gemm" else
                                    f"{body['in_channels']}->{body['out_channels']} k{body['kernel']} in{body['input']}")
        key += f" batch {body['batch']}" if body.get("batch", 1) > 1 else ""
        key += f" ({size} B)"
        types.setdefault(key, {kind: body, "elem_size": size})
        layers.append({"name": label, "type": key})
    if not layers:
        raise WorkloadError([f"{where}: no MatMul, Gemm or Conv node with known shapes "
                             f"({len(skipped)} nodes not imported: {', '.join(sorted({s['op_type'] for s in skipped})) or 'none'})"])
    title = name or model.graph.name or Path(where).stem
    doc = {"name": title, "description": f"Imported from {Path(where).name} by quco-emu import: "
           f"{len(layers)} MatMul/Gemm/Conv nodes of {len(model.graph.node)}; shapes from ONNX shape inference.",
           "layer_types": types, "layers": layers}
    if skipped:
        doc["unsupported"] = skipped
    return doc, skipped
