"""One ONNX node as a workload layer body: the GEMM of a MatMul or Gemm, the convolution of a Conv.

Each function takes the node's input shapes (from onnx_graph) and returns (kind, body), or
raises ValueError with the reason the node cannot be a layer; the importer records that
reason next to the node. `type_key` names a body by everything that changes the work, so
two layers share a layer type only when they are the same launch.
"""
from __future__ import annotations

import math

import numpy as np

# operator -> (input positions of the two operands, element size when the tensors do not say)
LAYER_OPS = {"MatMul": (0, 1), "Gemm": (0, 1), "Conv": (0, 1), "MatMulInteger": (0, 1),
             "QLinearMatMul": (0, 3), "ConvInteger": (0, 1), "QLinearConv": (0, 3),
             "ConvTranspose": (0, 1)}
CONV_OPS = ("Conv", "ConvInteger", "QLinearConv")
MATMUL_OPS = ("MatMul", "MatMulInteger", "QLinearMatMul")


def matmul(a: list, b: list) -> dict:
    """numpy.matmul semantics. A product with a 2-D (or broadcast) weight is one GEMM over all
    the rows of A (a Linear layer over a batch of tokens); batched operands on both sides
    (attention's products) are `batch` products."""
    if not a or not b:
        raise ValueError(f"MatMul of a scalar (shapes {a} and {b}); MatMul takes tensors of rank 1 or more")
    a2, b2 = ([1] + a if len(a) == 1 else a), (b + [1] if len(b) == 1 else b)
    if a2[-1] != b2[-2]:
        raise ValueError(f"shapes {a} x {b} do not multiply")
    try:
        lead = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    except ValueError:
        raise ValueError(f"leading dimensions of {a} and {b} do not broadcast") from None
    if math.prod(b2[:-2]) == 1:
        return {"m": math.prod(lead) * a2[-2], "k": a2[-1], "n": b2[-1]}
    return {"m": a2[-2], "k": a2[-1], "n": b2[-1], "batch": math.prod(lead)}


def gemm(a: list, b: list, at: dict) -> dict:
    if len(a) != 2 or len(b) != 2:
        raise ValueError(f"Gemm takes 2-D inputs, got {a} and {b}")
    m, k = (a[::-1] if at.get("transA") else a)
    k2, n = (b[::-1] if at.get("transB") else b)
    if k != k2:
        raise ValueError(f"shapes {a} x {b} (transA {at.get('transA', 0)}, transB {at.get('transB', 0)}) do not multiply")
    return {"m": m, "k": k, "n": n}


def _auto_pads(mode: str, x: list, w: list, strides: list, dil: list) -> list:
    """The ONNX spec's padding for auto_pad SAME_UPPER / SAME_LOWER / VALID: [begins..., ends...]."""
    dims = len(x)
    if mode == "VALID":
        return [0] * 2 * dims
    total = [max((math.ceil(x[i] / strides[i]) - 1) * strides[i] + (w[i] - 1) * dil[i] + 1 - x[i], 0)
             for i in range(dims)]
    small = [t // 2 for t in total]
    big = [t - s for t, s in zip(total, small)]
    return (small + big) if mode == "SAME_UPPER" else (big + small)


def conv(x: list, w: list, y: list | None, at: dict) -> tuple[str, dict]:
    """A Conv (1-D or 2-D) as the schema's `conv`; padding that is not the same on both sides
    of a dimension as the im2col GEMM of the inferred output."""
    dims = len(x) - 2
    if dims not in (1, 2):
        raise ValueError(f"Conv over {dims} spatial dimensions (input {x}); workloads take 1-D and 2-D convolutions")
    if len(w) != len(x):
        raise ValueError(f"weight {w} has rank {len(w)}; a Conv over input {x} needs rank {len(x)} "
                         "(out_channels, in_channels / group, kernel...)")
    group = at.get("group", 1)
    if not isinstance(group, int) or group < 1:
        raise ValueError(f"group {group}; expected a whole number >= 1")
    if x[1] != w[1] * group or w[0] % group:
        raise ValueError(f"input {x} and weight {w} do not fit group {group}: input channels must be "
                         "weight[1] x group and output channels a multiple of group")
    strides, dil = list(at.get("strides", [1] * dims)), list(at.get("dilations", [1] * dims))
    kernel = list(w[2:])
    if len(strides) != dims or len(dil) != dims:
        raise ValueError(f"strides {strides} / dilations {dil}: expected {dims} entries")
    mode = at.get("auto_pad", "NOTSET")
    mode = mode.decode("utf-8", "backslashreplace") if isinstance(mode, bytes) else mode
    if mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        pads = _auto_pads(mode, x[2:], kernel, strides, dil)
    elif mode == "NOTSET":
        pads = list(at.get("pads", [0] * 2 * dims))
    else:
        raise ValueError(f"auto_pad {mode!r}; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    if len(pads) != 2 * dims:
        raise ValueError(f"pads {pads}: expected {2 * dims} entries")
    if pads[:dims] != pads[dims:]:     # the schema's padding is the same on both sides
        if y is None or len(y) != len(x):
            raise ValueError(f"padding {pads} differs between the sides and the output shape is unknown")
        body = {"m": x[0] * math.prod(y[2:]), "k": w[1] * math.prod(kernel), "n": w[0] // group}
        return "gemm", {**body, "batch": group} if group > 1 else body
    body = {"in_channels": x[1], "out_channels": w[0], "kernel": kernel, "input": list(x[2:]),
            "stride": strides, "padding": pads[:dims], "dilation": dil}
    if group != 1:
        body["groups"] = group
    if x[0] != 1:
        body["batch"] = x[0]
    return "conv", body


def type_key(kind: str, body: dict, elem_size: int) -> str:
    """A readable name with every field of the body in it (two bodies, two names): `GEMM MxKxN`
    whichever operator it came from, `Conv2d depthwise 32->32 k3x3 s2x2 p1x1 d1x1 in112x112`."""
    def dims(v):
        return "x".join(map(str, v))
    if kind == "gemm":
        key = f"GEMM {dims([body['m'], body['k'], body['n']])}"
    else:
        g = body.get("groups", 1)
        what = "depthwise " if g > 1 and g == body["in_channels"] else f"g{g} " if g > 1 else ""
        key = (f"Conv{len(body['input'])}d {what}{body['in_channels']}->{body['out_channels']} "
               f"k{dims(body['kernel'])} s{dims(body['stride'])} p{dims(body['padding'])} d{dims(body['dilation'])} "
               f"in{dims(body['input'])}")
    if body.get("batch", 1) > 1:
        key += f" batch {body['batch']}"
    return f"{key} ({elem_size} B)"


def layer_body(op: str, shapes: list, out: list | None, attrs: dict) -> tuple[str, dict]:
    """(kind, body) of a node whose two operands have the given shapes; ValueError if not a layer."""
    a, b = shapes
    if op == "ConvTranspose":
        raise ValueError("a transposed convolution; the workload format has no such layer (gemm or conv)")
    if op in MATMUL_OPS:
        return "gemm", matmul(a, b)
    if op == "Gemm":
        return "gemm", gemm(a, b, attrs)
    return conv(a, b, out, attrs)
