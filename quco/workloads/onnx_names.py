"""Readable layer names for imported nodes.

Exporters name nodes by the module that made them, in one of two ways:
- PyTorch's TorchScript exporter: `/model/encoder/layers.0/self_attn/q_proj/MatMul`, a scope
  per module (a Sequential's children repeat their parent's path: `/features/features.0/features.0.0/Conv`);
- PyTorch's dynamo exporter: `node_MatMul_6`, with the module path in the node's metadata
  (`pkg.torch.onnx.name_scopes`: `['', 'model', 'model.encoder', ..., 'linear']`); a convolution
  with a BatchNorm fused into it has the BatchNorm's scopes, and is named after its weight instead.

A layer's name is its module path in dots (`model.encoder.layers.0.self_attn.q_proj`) without
the part every layer shares (`model.` when a wrapper holds the whole model), else the node's
own name, else `OP_i`. Two layers of one module (attention's two products) get their
call number: `self_attn`, `self_attn#2` (ALBERT's one shared layer, called 12 times: `query` to `query#12`). Names are printable (control characters written
as escapes: they never reach a terminal) and at most 128 characters (kernel.json's limit),
the head cut: the tail says which layer it is.
"""
from __future__ import annotations

import ast
import re

from ..util import userinput

MAX_NAME = 128
CUT = "..."


def _fused_conv_path(node, text) -> list[str]:
    """A convolution the exporter fused a BatchNorm into carries the BatchNorm's metadata
    (`layer1.0.bn1`); its weight keeps the convolution's parameter name (`layer1.0.conv1.weight`),
    which names the layer after the module that does the product."""
    fused = any(text(p.key) == "pkg.onnxscript.rewriter.rule_name" and "FuseBatchNorm" in text(p.value)
                for p in node.metadata_props)
    weight = text(node.input[1]) if fused and len(node.input) > 1 else ""
    return weight[:-len(".weight")].split(".") if weight.endswith(".weight") and len(weight) > 7 else []


def _module_path(node, op: str, text) -> list[str]:
    """The module path's components, from the metadata or the node name ([] if neither has one)."""
    fused = _fused_conv_path(node, text)
    if fused:
        return fused
    for p in node.metadata_props:
        if text(p.key) == "pkg.torch.onnx.name_scopes":
            try:
                scopes = [s for s in ast.literal_eval(text(p.value)) if isinstance(s, str) and s]
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                break
            if len(scopes) >= 2:        # the last scope is the function (linear, conv1d, ...)
                return scopes[-2].split(".")
            break
    name = text(node.name)
    parts = [p for p in name.split("/") if p]
    if len(parts) < 2:
        return []
    if re.fullmatch(re.escape(op) + r"(_\d+)?", parts[-1]):
        parts.pop()
    path: list[str] = []
    for p in parts:     # /features/features.0/features.0.0 -> features.0.0
        if path and p.startswith(path[-1] + "."):
            path[-1] = p
        else:
            path.append(p)
    return ".".join(path).split(".")


def _clean(name: str, suffix: str = "") -> str:
    """Printable, and with `suffix` at most MAX_NAME characters (the head cut)."""
    name, room = userinput.printable(name), MAX_NAME - len(suffix)
    return (name if len(name) <= room else CUT + name[-(room - len(CUT)):]) + suffix


def layer_names(nodes: list, text) -> list[str]:
    """One readable, unique name per (index, node, op) of the imported layers."""
    paths = [_module_path(node, op, text) for _, node, op in nodes]
    shared = 0
    full = [p for p in paths if p]
    if full and len(full) == len(paths):
        while all(len(p) > shared + 1 and p[shared] == full[0][shared] for p in full):
            shared += 1
    names = []
    for (i, node, op), path in zip(nodes, paths):
        names.append(".".join(path[shared:]) if path else text(node.name) or f"{op}_{i}")
    out, seen, calls = [], set(), {}
    for base in names:
        n = _clean(base)
        while n in seen:        # the k-th call of the same module
            calls[base] = calls.get(base, 1) + 1
            n = _clean(base, f"#{calls[base]}")
        seen.add(n)
        out.append(n)
    return out
