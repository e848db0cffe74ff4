"""A GEMM or a convolution as the unit sees it: queues, compute intensity and grid.

The mapping follows the bundled Table III kernels (examples/kernels/matrix-*.json), so a
GEMM of Matrix-Matrix's shape gives Matrix-Matrix's launch record:

- A work-group computes `rows` (default 8) rows of the output. Each of those rows is one
  streaming queue carrying a row of the streamed operand (K elements); the other operand
  is one stationary queue of K elements.
- The streamed operand is the one with more rows: A (M rows) when M >= N, else the
  transposed product C^T = B^T A^T streams B's N columns (a decoder's one-token GEMM is a
  matrix-vector product over the weight's rows, like Table III's Matrix-Vector).
- Grid: batch x ceil(rows of the streamed operand / rows) work-groups; each computes
  2 x rows x K x (the other dimension) FLOPs and writes rows x (the other dimension) elements.
- Data movement (read by the performance model only): the work-group takes the other
  dimension one column at a time, so its rows pass through their queues once per column
  (re-reads of the same rows: `passes` = the other dimension, `fresh_passes` 1) together with
  that column of the other operand (new each pass, read by every work-group of its product:
  `shared_by`). A matrix-vector product (the other dimension 1) is a single pass.
- CI = 2 batch M K N FLOPs / (elem x batch x (MK + KN + MN)) bytes: inputs read once and the
  output written once, without ATT (the paper's definition). It is passed as a number and
  the unit classifies it (low < 1, high > 4).

A convolution is lowered to its im2col GEMM: M = batch x output positions, K = in_channels /
groups x kernel elements, N = out_channels / groups, `groups` products.

`derive()` returns the Kernel and the derivation as lines of text (`quco-emu run --explain`
prints them; `--json` carries them per layer).
"""
from __future__ import annotations

import math

from ..kernel.format import Kernel
from ..gst import abi

ROWS_PER_WORK_GROUP = 8   # the Table III matrix kernels: 8 streaming queues + 1 stationary
DEFAULT_ELEM_SIZE = 2     # fp16, as the bundled examples
DEFAULT_WAVEFRONTS = 7    # QuCo's 512-work-item work-group: 8 wavefronts, one the producer


def gemm(name: str, m: int, k: int, n: int, batch: int = 1, elem_size: int = DEFAULT_ELEM_SIZE,
         wavefronts: int = DEFAULT_WAVEFRONTS, rows: int = ROWS_PER_WORK_GROUP) -> tuple[Kernel, list[str]]:
    streamed, other, which = (m, n, "A (M rows)") if m >= n else (n, m, "B^T (N columns of B, the product transposed)")
    r = min(rows, streamed)
    wgs = batch * math.ceil(streamed / r)
    flops = 2 * r * k * other
    traffic = elem_size * batch * (m * k + k * n + m * n)
    ci = 2 * batch * m * k * n / traffic
    out_bytes = r * other * elem_size
    per_product = math.ceil(streamed / r)
    lines = [
        f"GEMM C[{m},{n}] = A[{m},{k}] x B[{k},{n}]" + (f", batch {batch}" if batch > 1 else ""),
        f"streamed operand: {which}; {r} of its rows per work-group -> {r} streaming queues of K = {k:,} elements",
        f"other operand: 1 stationary queue of K = {k:,} elements",
        f"work-groups = {batch} x ceil({streamed:,} / {r}) = {wgs:,}",
        f"FLOPs per work-group = 2 x {r} x {k:,} x {other:,} = {flops:,}; output = {r} x {other:,} x {elem_size} B = {out_bytes:,} B",
        (f"data movement: {other:,} passes, one per column of the other operand; the {r} rows pass again each time "
         f"(L2 re-reads), each column is read by the {per_product:,} work-groups of its product") if other > 1 else
        f"data movement: one pass; the stationary operand is read by the {per_product:,} work-groups of its product",
        f"CI = 2 x {batch} x {m} x {k} x {n} / ({elem_size} x {batch} x ({m}x{k} + {k}x{n} + {m}x{n})) "
        f"= {2 * batch * m * k * n:,} / {traffic:,} = {ci:.6g} FLOPs/byte ({_class(ci)}, classified by the unit)",
    ]
    kernel = Kernel(name=name, compute_intensity=float(ci), consumer_wavefronts=wavefronts,
                    queues=[(k, abi.QUEUE_STREAMING, elem_size)] * r + [(k, abi.QUEUE_STATIONARY, elem_size)],
                    queue_names=[f"{which.split()[0]} row[{i}]" for i in range(r)] + ["stationary"],
                    work_groups=wgs, output_bytes=out_bytes, flops_per_work_group=flops,
                    movement=[(other, 1 if other > 1 else 0, 0)] * r + [(other, 0, per_product)])
    return kernel, lines


def conv_gemm(c: dict) -> tuple[dict, list[str]]:
    """The im2col GEMM of a convolution description (the schema's `conv` object)."""
    dims = len(c["input"])
    def per_dim(key, default):
        v = c.get(key, [default] * dims)
        return v if len(v) == dims else None
    kern, stride, pad, dil = (per_dim("kernel", 1), per_dim("stride", 1), per_dim("padding", 0),
                              per_dim("dilation", 1))
    for key, v in (("kernel", kern), ("stride", stride), ("padding", pad), ("dilation", dil)):
        if v is None:
            raise ValueError(f"conv.{key}: {len(c[key])} entries; expected {dims}, one per entry of conv.input")
    groups, batch = c.get("groups", 1), c.get("batch", 1)
    for key in ("in_channels", "out_channels"):
        if c[key] % groups:
            raise ValueError(f"conv.{key}: {c[key]} is not a multiple of conv.groups = {groups}")
    out = []
    for i in range(dims):
        o = (c["input"][i] + 2 * pad[i] - dil[i] * (kern[i] - 1) - 1) // stride[i] + 1
        if o < 1:
            raise ValueError(f"conv.input[{i}]: {c['input'][i]} is smaller than the kernel's reach "
                             f"{dil[i] * (kern[i] - 1) + 1} after padding {pad[i]}; expected an output of at least 1")
        out.append(o)
    m = batch * math.prod(out)
    k = c["in_channels"] // groups * math.prod(kern)
    n = c["out_channels"] // groups
    lines = [f"conv{dims}d {c['in_channels']} -> {c['out_channels']} channels, kernel {kern}, stride {stride}, "
             f"padding {pad}, input {c['input']} -> output {out}" + (f", groups {groups}" if groups > 1 else ""),
             f"im2col: M = {batch} x {' x '.join(map(str, out))} = {m:,}, K = {c['in_channels'] // groups} x "
             f"{' x '.join(map(str, kern))} = {k:,}, N = {n:,}" + (f", {groups} products" if groups > 1 else "")]
    return dict(m=m, k=k, n=n, batch=groups), lines


def _class(ci: float) -> str:
    lo, hi = abi.const("CI_LOW"), abi.const("CI_HIGH")
    return "low" if ci < lo else "high" if ci > hi else "medium"
