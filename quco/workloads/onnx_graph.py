"""An ONNX file read for its shapes: weights left out, shapes inferred by ONNX and ONNX Runtime.

`read(path)` parses the file, turns every large weight (initializer or Constant node) into a
graph input of its shape without data (dims are all an import needs: a 231 MB model costs
about twice its size in memory for a moment, then a few MB; and no inference pass reads a
weight's values) and infers shapes in two passes:

1. `onnx.shape_inference.infer_shapes` (the standard's own rules, one operator at a time);
2. ONNX Runtime's symbolic shape inference (`onnxruntime.tools.symbolic_shape_infer`), which
   also follows the small integer tensors that exports compute shapes with (Shape, Gather,
   ConstantOfShape, Expand, Where...): PyTorch exports build attention masks and positions
   that way, and pass 1 loses every shape downstream of them.

The importer writes no shape rules of its own. A pass that fails (an operator it does not
know, a malformed node) is noted and the other pass's shapes are kept.
"""
from __future__ import annotations

import logging
import math

from ..util import userinput
from .format import WorkloadError

MAX_MODEL_BYTES = (2 << 30) - 1     # protobuf's own limit for one message
KEEP_ELEMENTS = 1024                # tensors this small keep their data: shapes, axes, scalars
EXPORTER_GRAPH_NAMES = ("", "main_graph", "torch_jit", "torch-jit-export", "tf2onnx", "model")


def onnx_module():
    try:
        import onnx
    except ImportError:
        raise WorkloadError(["quco-emu import needs the onnx package: pip install 'quco-emu[onnx]'"]) from None
    return onnx


def text(value) -> str:
    """A protobuf string field as text: upb hands back bytes when they are not UTF-8."""
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value


def _large(tensor) -> bool:
    """More than KEEP_ELEMENTS elements, data in an external file (never read), or no data at all
    (dims only, as the test fixtures)."""
    if tensor.external_data or tensor.data_location == 1:      # TensorProto.EXTERNAL
        return True
    has_data = tensor.raw_data or any(
        len(getattr(tensor, f)) for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                                          "string_data"))
    return math.prod(tensor.dims) > KEEP_ELEMENTS or (not has_data and math.prod(tensor.dims) > 0)


def _strip(tensor) -> None:
    for f in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
              "string_data", "external_data", "data_location"):
        tensor.ClearField(f)


def _weights_as_inputs(onnx, graph) -> set:
    """Large initializers and Constant nodes become graph inputs of their shape, without data:
    neither inference pass then reads (or trips over) a weight's values. Returns the names of
    every constant tensor (weights, small or large)."""
    weights, declared, keep = set(), {i.name for i in graph.input}, []
    for init in graph.initializer:
        weights.add(init.name)
        if not _large(init):
            keep.append(init)
        elif isinstance(init.name, bytes):      # not UTF-8: no input can carry that name; dims only
            _strip(init)
            keep.append(init)
        elif init.name not in declared:
            graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    del graph.initializer[:]
    graph.initializer.extend(keep)
    nodes = []
    for node in graph.node:
        big = [a.t for a in node.attribute if a.name == "value" and a.HasField("t") and _large(a.t)]
        if big and isinstance(node.output[0] if node.output else "", bytes):
            _strip(big[0])
            big = []
        if node.op_type == "Constant" and big and len(node.output) == 1:
            weights.add(node.output[0])
            graph.input.append(onnx.helper.make_tensor_value_info(node.output[0], big[0].data_type, list(big[0].dims)))
        else:
            nodes.append(node)
            for a in node.attribute:      # If / Loop / Scan bodies: their weights keep dims only
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    _strip_graph(g)
    if len(nodes) != len(graph.node):
        del graph.node[:]
        graph.node.extend(nodes)
    return weights


def _strip_graph(graph) -> None:
    for init in graph.initializer:
        if _large(init):
            _strip(init)
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t") and _large(a.t):
                _strip(a.t)
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _strip_graph(g)


class Graph:
    """The model's top graph with every tensor's known shape."""

    def __init__(self, model, weights: set, nodes: int, notes: list[str]):
        self.model, self.graph, self.notes, self.nodes = model, model.graph, notes, nodes
        self.shapes: dict = {}          # tensor name -> (dims, or None when any is unknown; element type)
        self.constant: set = set(weights)   # tensors computed from weights and constants only
        self._collect()

    def _collect(self) -> None:
        g = self.graph
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            t = vi.type.tensor_type
            dims = ([d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in t.shape.dim]
                    if t.HasField("shape") else [None])
            if None not in dims or self.shapes.get(vi.name, (None,))[0] is None:  # a shapeless declared
                self.shapes[vi.name] = (None if None in dims else dims, t.elem_type)  # output hides nothing
        for init in g.initializer:
            self.shapes[init.name] = (list(init.dims), init.data_type)
            self.constant.add(init.name)
        # forward over the (topologically ordered) nodes: an output is constant when every input is
        for node in g.node:
            ins = [i for i in node.input if i]
            if not any(a.HasField("g") or a.graphs for a in node.attribute) and all(i in self.constant for i in ins):
                self.constant.update(node.output)

    def dims(self, name):
        return self.shapes.get(name, (None, 0))[0]

    def elem_type(self, name) -> int:
        return self.shapes.get(name, (None, 0))[1]


def _symbolic():
    """ONNX Runtime's SymbolicShapeInference, or None when onnxruntime (or sympy) is missing."""
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:
        return None
    return SymbolicShapeInference


def _infer(onnx, model, notes: list[str]):
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception as e:      # InferenceError, ValidationError...: keep the graph, note why
        notes.append(f"onnx.shape_inference failed: {userinput.printable(str(e).splitlines()[0] if str(e) else type(e).__name__)[:200]}")
    symbolic = _symbolic()
    if symbolic is None:
        notes.append("ONNX Runtime's symbolic shape inference is not installed (pip install 'quco-emu[onnx]'): "
                     "shapes computed at run time stay unknown")
        return model
    log = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")   # quiet: a failure becomes a note
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        # auto_merge: a symbolic and a fixed dimension that meet in a broadcast are the same
        # (what the exporter traced); guess_output_rank: an unknown operator keeps its input's rank
        out = symbolic.infer_shapes(model, auto_merge=True, guess_output_rank=True)
        if out is not None:
            return out
        notes.append("ONNX Runtime's symbolic shape inference gave up (an operator it cannot follow)")
    except Exception as e:
        notes.append(f"ONNX Runtime's symbolic shape inference failed: "
                     f"{userinput.printable(str(e).splitlines()[0] if str(e) else type(e).__name__)[:200]}")
    finally:
        log.setLevel(level)
    return model


def _opset_problems(onnx, model, where: str) -> list[str]:
    """An operator set of the standard domain that this onnx does not know (opset 999): its
    operators' shape rules are unknown, so shapes would be guessed."""
    known = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if text(o.domain) in ("", "ai.onnx") and not 1 <= o.version <= known:
            return [f"{where}: opset_import: ai.onnx version {o.version}; this onnx ({onnx.__version__}) knows "
                    f"versions 1 to {known}"]
    return []


def _order_problems(graph, where: str) -> list[str]:
    """A node that reads a tensor only a later node (or itself) writes: ONNX requires the nodes
    in topological order, so the graph has a cycle or is out of order (either way no model)."""
    writer = {}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if o:
                writer.setdefault(o, i)
    for i, node in enumerate(graph.node):
        for t in node.input:
            if t and writer.get(t, -1) >= i:
                later = graph.node[writer[t]]
                return [f"{where}: node {userinput.printable(text(node.name) or text(node.op_type))[:80]!r} (#{i}) reads "
                        f"{userinput.printable(text(t))[:80]!r}, written by node "
                        f"{userinput.printable(text(later.name) or text(later.op_type))[:80]!r} (#{writer[t]}), not "
                        "before it: the graph has a cycle or is not in topological order, as ONNX requires"]
    return []


def read(path) -> Graph:
    """Parse (a path or a ModelProto), strip the weights' data, infer shapes; WorkloadError
    naming the file when it is not a model."""
    onnx = onnx_module()
    where = "model" if isinstance(path, onnx.ModelProto) else str(path)
    if isinstance(path, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(path)
    else:
        try:    # a regular file of at most 2 GiB: /dev/zero would never end
            data = userinput.read_bytes(path, MAX_MODEL_BYTES, "model file (.onnx)")
        except userinput.UserFileError as e:
            raise WorkloadError([str(e)]) from None
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except Exception as e:  # DecodeError
            raise WorkloadError([f"{where}: not a readable ONNX model: "
                                 f"{userinput.printable(str(e)) or type(e).__name__}"]) from None
        del data
    if not model.HasField("graph"):
        raise WorkloadError([f"{where}: not a readable ONNX model: it has no graph"])
    problems = _opset_problems(onnx, model, where) + _order_problems(model.graph, where)
    if problems:
        raise WorkloadError(problems)
    nodes = len(model.graph.node)
    weights = _weights_as_inputs(onnx, model.graph)
    notes: list[str] = []
    return Graph(_infer(onnx, model, notes), weights, nodes, notes)
