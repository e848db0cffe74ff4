"""An ONNX model as a workload: its MatMul, Gemm and Conv nodes become layers, in graph order.

    doc, unsupported = convert("model.onnx", attention="exclude", allow_partial=False)

- Shapes: onnx_graph (ONNX shape inference, then ONNX Runtime's symbolic shape inference),
  read without the weights' data.
- Layers: MatMul (numpy broadcasting), Gemm (transA/transB), Conv (1-D, 2-D; groups and
  depthwise as such) and their quantized forms (MatMulInteger, QLinearMatMul, ConvInteger,
  QLinearConv); onnx_layers turns each into a `gemm` or `conv` body. Layers of the same body
  share one layer type, named by every field of the body.
- Attention products (a MatMul whose two operands both depend on the model's inputs: QK^T
  and AV) are left out by default, as the paper's layer counts leave them out (AlbertV2 74,
  T5-Small 96); `attention="include"` imports them.
- A MatMul/Gemm/Conv that cannot be imported (shape unknown, a 3-D convolution, a node the
  format cannot hold) makes the import fail with the count and the first few nodes, unless
  `allow_partial`: then the workload lists them under "skipped_layers" and `quco-emu run`
  says so in its totals. Every other node is listed under "unsupported" with the reason.

`onnx` and `onnxruntime` are optional dependencies (pip install 'quco-emu[onnx]').
"""
from __future__ import annotations

from pathlib import Path

from ..util import userinput
from . import derive, format
from .format import WorkloadError
from .onnx_graph import EXPORTER_GRAPH_NAMES, onnx_module, read, text
from .onnx_layers import LAYER_OPS, MATMUL_OPS, layer_body, type_key
from .onnx_names import layer_names

ATTENTION = ("exclude", "include")
SHOWN_SKIPPED = 5       # nodes named in the partial-import error
MAX_LAYER_TYPES = 2_000  # distinct layer types: each costs a few ms to derive and check (2,000: about 10 s)
MAX_LISTED = 10_000     # "unsupported" lists nodes one by one up to this many (~130 bytes each), then
                        # one entry per operator: a workload file may have 16 MB (format.MAX_FILE_BYTES)
WHAT = "MatMul/Gemm/Conv"


def _elem_size(onnx, elem_type: int) -> int:
    try:
        size = onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize
    except (KeyError, TypeError, ValueError):
        return derive.DEFAULT_ELEM_SIZE
    return size if size in (1, 2, 4, 8) else derive.DEFAULT_ELEM_SIZE


def _inner_layers(node, where: str) -> list[dict]:
    """MatMul/Gemm/Conv nodes inside an If/Loop/Scan body: run a data-dependent number of times."""
    found = []
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for inner in g.node:
                op = text(inner.op_type)
                if op in LAYER_OPS:
                    found.append({"name": userinput.printable(text(inner.name) or op)[:128], "op_type": op,
                                  "reason": f"inside the body of {where}: runs a data-dependent number of times"})
                found += _inner_layers(inner, where)
    return found


def _type_problem(entry: dict) -> str | None:
    """What the workload loader says about a layer of this body, or None when it loads."""
    try:
        format.parse({"name": "import", "layers": [{"name": "layer", **entry}]}, "import")
    except WorkloadError as e:
        return "; ".join(p.removeprefix("import: ").removeprefix("layers[0] (layer): ") for p in e.problems)
    return None


def _title(name, graph_name: str, where: str) -> str:
    if name:
        return userinput.printable(name)
    if graph_name not in EXPORTER_GRAPH_NAMES:
        return userinput.printable(graph_name)
    return userinput.printable(Path(where).stem) if where != "model" else "model"


def _layer(onnx, g, node, op: str, elem_size: int | None, attention: str) -> tuple[str, dict] | None:
    """(type key, layer type) of a MatMul/Gemm/Conv node; None for an attention product left out;
    ValueError with the reason when the node cannot be a layer."""
    need = LAYER_OPS[op]
    if len(node.input) <= max(need) or not all(node.input[p] for p in need):
        raise ValueError(f"{op} with inputs {[userinput.printable(text(n)) for n in node.input]}; expected at least "
                         f"{max(need) + 1}, operands at positions {', '.join(map(str, need))}")
    ins = [node.input[p] for p in need]
    if attention == "exclude" and op in MATMUL_OPS + ("Gemm",) and not any(n in g.constant for n in ins):
        return None     # whatever its shapes
    shapes = [g.dims(n) for n in ins]
    unknown = [userinput.printable(text(n)) for n, d in zip(ins, shapes) if d is None]
    if unknown:
        raise ValueError(f"shape of {', '.join(unknown)} unknown after shape inference (ONNX and ONNX Runtime's symbolic)")
    attrs = {text(a.name): onnx.helper.get_attribute_value(a) for a in node.attribute}
    kind, body = layer_body(op, shapes, g.dims(node.output[0]) if node.output else None, attrs)
    size = elem_size or _elem_size(onnx, g.elem_type(ins[0]))
    return type_key(kind, body, size), {kind: body, "elem_size": size}


def _summary(unsupported: list[dict]) -> list[dict]:
    """One entry per (operator, reason) when there are too many nodes to list one by one."""
    groups: dict = {}
    for u in unsupported:
        groups.setdefault((u["op_type"], u["reason"]), []).append(u["name"])
    return [{"name": f"{len(names):,} nodes, the first {names[0]}"[:256], "op_type": op, "reason": reason}
            for (op, reason), names in groups.items()]


def _partial(where: str, layers: list, skipped: list, notes: list) -> WorkloadError:
    lines = [f"{where}: {len(skipped)} of {len(layers) + len(skipped)} {WHAT} nodes cannot be imported" +
             (f"; --allow-partial writes the other {len(layers)} and lists these under \"skipped_layers\""
              if layers else "") + (":" if len(skipped) <= SHOWN_SKIPPED else f"; the first {SHOWN_SKIPPED}:")]
    lines += [f"{where}: node {s['name']} ({s['op_type']}): {s['reason']}" for s in skipped[:SHOWN_SKIPPED]]
    return WorkloadError(lines + notes)


def convert(path, name: str | None = None, elem_size: int | None = None, attention: str = "exclude",
            allow_partial: bool = False) -> tuple[dict, list[dict]]:
    """(workload document, nodes that are not layers) for an ONNX file or ModelProto."""
    if attention not in ATTENTION:
        raise ValueError(f"attention: {attention!r}; expected one of {ATTENTION}")
    onnx = onnx_module()
    where = "model" if isinstance(path, onnx.ModelProto) else str(path)
    g = read(path)
    unsupported, skipped, candidates = [], [], []
    for i, node in enumerate(g.graph.node):
        op = text(node.op_type)
        if op in LAYER_OPS:
            candidates.append((i, node, op))
            continue
        label = userinput.printable(text(node.name) or f"{op}_{i}")[:128]
        unsupported.append({"name": label, "op_type": userinput.printable(op)[:128],
                            "reason": "not a MatMul, Gemm or Conv"})
        skipped += _inner_layers(node, f"{userinput.printable(op)[:64]} node {label}")
    types, layers, attention_left = {}, [], 0
    made_of = []  # each candidate's (type key, body), None, or the ValueError: types counted first
    for i, node, op in candidates:
        try:
            made_of.append(_layer(onnx, g, node, op, elem_size, attention))
        except ValueError as e:
            made_of.append(e)
    distinct = len({m[0] for m in made_of if isinstance(m, tuple)})
    if distinct > MAX_LAYER_TYPES:
        raise WorkloadError([f"{where}: {distinct:,} distinct layer types (MatMul/Gemm/Conv shapes); import takes at "
                             f"most {MAX_LAYER_TYPES:,} (each is derived and checked on its own, milliseconds each; "
                             "a model's layers repeat a few dozen shapes: Whisper-Tiny 9, ALBERT and T5 a few more)"])
    for (i, node, op), label, made in zip(candidates, layer_names(candidates, text), made_of):
        try:
            if isinstance(made, ValueError):
                raise made
            if made is None:
                attention_left += 1
                unsupported.append({"name": label, "op_type": op, "reason": "attention product (both operands "
                                    "depend on the model's inputs): left out by --attention exclude, as the "
                                    "paper's layer counts"})
                continue
            key, entry = made
            if key not in types:
                problem = _type_problem(entry)
                if problem:
                    raise ValueError(problem)
                types[key] = entry
        except ValueError as e:
            skipped.append({"name": label, "op_type": op, "reason": userinput.printable(str(e))})
            continue
        layers.append({"name": label, "type": key})
    if skipped and not (allow_partial and layers):
        raise _partial(where, layers, skipped, g.notes)
    if not layers:
        ops = ", ".join(sorted({s["op_type"] for s in unsupported})) or "none"
        why = (f"{attention_left} attention products, left out by --attention exclude (--attention include "
               "imports them)" if attention_left else f"{len(unsupported)} nodes, none a {WHAT}: {ops}")
        raise WorkloadError([f"{where}: nothing to import: {why}"])
    notes = "; ".join(g.notes)
    doc = {"name": _title(name, text(g.graph.name), where),
           "description": f"Imported from {userinput.printable(Path(where).name)} by quco-emu import: {len(layers)} "
           f"{WHAT} nodes as layers ({len(types)} types) of {g.nodes} nodes; shapes from ONNX shape "
           f"inference and ONNX Runtime's symbolic shape inference; attention products "
           + (f"left out ({attention_left}), as the paper's layer counts" if attention == "exclude" else "included")
           + (f"; {notes}" if notes else "") + "."
           + (f" {len(skipped)} {WHAT} nodes could not be imported (skipped_layers)." if skipped else ""),
           "layer_types": types, "layers": layers}
    if unsupported:
        doc["unsupported"] = unsupported if len(unsupported) <= MAX_LISTED else _summary(unsupported)
    if skipped:
        doc["skipped_layers"] = skipped
    return doc, unsupported
