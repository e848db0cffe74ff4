"""Workload files: read, check against workload.schema.json, expand into launches.

    w = load("examples/workloads/whisper-tiny.json")
    w.layers[0].kernel, w.layers[0].derivation, w.layers[0].clock_mhz

Every problem is reported at once and names the file, the layer (its index in the file
and its name) and the field, with the value and what is allowed:

    whisper.json: layers[3] (enc0.fc1): gemm.k: 0 is out of range; expected integer 1 to 1073741824

`WorkloadError` is a `KernelError`, so `quco-emu` exits with code 2 (bad input) on it.
"""
from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..util import schema, userinput
from ..util.schema import field_path, value_text
from ..kernel.format import Kernel, KernelError, load_kernel, parse_kernel
from . import derive

SCHEMA_PATH = Path(__file__).with_name("workload.schema.json")
MAX_FILE_BYTES = 16 << 20
MAX_LAYERS = 100_000          # after expanding repeats and groups
MAX_GROUP_DEPTH = 32          # groups inside groups; a model's module tree is a few levels deep,
                              # and the schema check and expansion recurse once per level
KINDS = ("gemm", "conv", "kernel", "kernel_file")
BODY_OPTIONS = ("elem_size", "consumer_wavefronts", "rows_per_work_group")
KERNEL_NAME_MAX = 128         # kernel.json's name (kernel/kernel.schema.json)


class WorkloadError(KernelError):
    """A workload that cannot be run; `problems` lists every reason."""


@dataclass
class Layer:
    index: int                # position in the expanded sequence
    name: str
    type: str                 # unique layer type (layer_types key, else the name)
    kernel: Kernel
    derivation: list[str] = field(default_factory=list)
    clock_mhz: int = 0        # DVFS: 0 = the GST clock
    active_cus: int = 0       # partition: 0 = all
    lds_bytes: int = 0
    where: str = ""           # the file's path to the item, e.g. layers[3].layers[1]


@dataclass
class Workload:
    name: str
    layers: list[Layer]
    description: str = ""
    gpu: str | None = None
    sources: list[str] = field(default_factory=list)
    path: str = ""
    skipped: list[dict] = field(default_factory=list)   # a partial import's left-out nodes (skipped_layers)

    def types(self) -> list[str]:
        """Unique layer types in order of first appearance."""
        return list(dict.fromkeys(layer.type for layer in self.layers))


@functools.lru_cache(maxsize=1)
def _checker() -> schema.Checker:
    """workload.schema.json with kernel.json's rules and words (util/schema.py)."""
    return schema.Checker(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def _where(doc, path: list) -> tuple[str, list]:
    """Split a JSON path into the deepest layer item, named, and the field inside it."""
    cut, node, label = 0, doc, ""
    for i, p in enumerate(path):
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(p, int) and i and path[i - 1] == "layers":
            cut = i + 1
            label = f" ({shown(node['name'])})" if isinstance(node, dict) and isinstance(node.get("name"), str) else ""
    return (field_path(path[:cut]) + label if cut else ""), path[cut:]


def _messages(doc) -> list[str]:
    """Every schema problem, prefixed with the layer it is in (its index and name)."""
    out = []
    for path, message in _checker().problems(doc):
        item, rest = _where(doc, path)
        text = message.removeprefix(field_path(path) + ": ")  # Checker's messages start with the path
        field = field_path(rest) or "(top level)"
        out.append(f"{item}: {field}: {text}" if item else f"{field}: {text}")
    return out


# ---------------------------------------------------------------- expansion
def _kernel_of(body: dict, defaults: dict, name: str, base: Path, where: str) -> tuple[Kernel, list[str]]:
    kinds = [k for k in KINDS if k in body]
    if len(kinds) != 1:
        raise ValueError(f"{'; '.join(kinds) + ': ' if kinds else ''}give exactly one of {', '.join(KINDS)} "
                         "(or a type from layer_types)")
    opt = {**defaults, **{k: body[k] for k in ("elem_size", "consumer_wavefronts", "rows_per_work_group") if k in body}}
    shape = dict(elem_size=opt.get("elem_size", derive.DEFAULT_ELEM_SIZE),
                 wavefronts=opt.get("consumer_wavefronts", derive.DEFAULT_WAVEFRONTS),
                 rows=opt.get("rows_per_work_group", derive.ROWS_PER_WORK_GROUP))
    if "gemm" in body:
        g = body["gemm"]
        return derive.gemm(name, g["m"], g["k"], g["n"], g.get("batch", 1), **shape)
    if "conv" in body:
        g, lines = derive.conv_gemm(body["conv"])
        kernel, more = derive.gemm(name, **g, **shape)
        return kernel, lines + more
    if "kernel" in body:
        return parse_kernel(body["kernel"], f"{where}: kernel"), ["kernel given as kernel.json (inline)"]
    path = base / body["kernel_file"]
    return load_kernel(path), [f"kernel given as kernel.json ({body['kernel_file']})"]


def shown(name: str, most: int = 60) -> str:
    """A name the user wrote, for a message: printable and at most `most` characters (a
    10,000-character name is the schema's error, not ten thousand characters of echo)."""
    name = userinput.printable(name)
    return name if len(name) <= most else name[:most - 3] + "..."


def kernel_name(name: str) -> str:
    """The layer's kernel's name: the layer's full name (group prefixes and [i] included, any
    length the schema's 256 characters a level allow), cut to kernel.json's 128 characters;
    reports show Layer.name whole."""
    return name if len(name) <= KERNEL_NAME_MAX else name[:KERNEL_NAME_MAX - 3] + "..."


def _derived(body: dict, defaults: dict, name: str, base: Path, where: str) -> tuple[Kernel, list[str]]:
    """_kernel_of, remembered across workloads by the body alone (a kernel file excepted: it can
    change on disk): `import` loads each new layer type on its own and then the whole file, and
    checking a kernel costs milliseconds, 20,000 types a minute. A body that fails is derived
    again with its own `where`, so the messages name the layer."""
    if "kernel_file" in body:
        return _kernel_of(body, defaults, name, base, where)
    try:
        own = {k: v for k, v in body.items() if k in KINDS or k in BODY_OPTIONS}   # what _kernel_of reads
        kernel, lines = _derived_by_body(json.dumps(own, sort_keys=True), json.dumps(defaults, sort_keys=True))
    except (KernelError, ValueError):
        return _kernel_of(body, defaults, name, base, where)
    return kernel.with_fields(name=name), lines


@functools.lru_cache(maxsize=1 << 16)
def _derived_by_body(body: str, defaults: str) -> tuple[Kernel, list[str]]:
    return _kernel_of(json.loads(body), json.loads(defaults), "layer", Path("."), "")


def _kernel_problems(problems: list[str], body: dict, where: str) -> list[str]:
    """A layer's kernel errors, naming what the user wrote: the inline kernel's own messages,
    the kernel file's, or for gemm/conv the sizes whose derived kernel breaks a rule (not the
    Python object's fields the user never saw)."""
    if "kernel" in body:
        return problems
    if "kernel_file" in body:
        return [f"{where}: kernel_file: {p}" for p in problems]
    kind = "gemm" if "gemm" in body else "conv"
    sizes = ", ".join(f"{k} = {v}" for k, v in body[kind].items() if isinstance(v, int))
    return [f"{where}: {kind}: {sizes}: the kernel these sizes give breaks a kernel.json rule: "
            f"{re.sub(r'^Kernel[(].*?[)]: ', '', p)}" for p in problems]


def _expand(doc: dict, base: Path, file: str) -> list[Layer]:
    types, defaults = doc.get("layer_types", {}), doc.get("defaults", {})
    built: dict = {}  # (type, body's JSON) -> (kernel, derivation): a type is derived once
    layers: list[Layer] = []
    problems: list[str] = []

    def walk(items, prefix: str, tprefix: str, path: str):
        for i, it in enumerate(items):
            where = f"{path}[{i}]"
            label = f"{where} ({shown(it['name'])})" if "name" in it else where
            own = it.get("name", it.get("type", f"layer{len(layers)}"))
            name, tname = prefix + own, tprefix + own
            reps = it.get("repeat", 1)
            if "layers" in it:
                extra = [k for k in it if k not in ("name", "repeat", "layers")]
                if extra:
                    problems.append(f"{file}: {label}: {', '.join(extra)}: a group (with layers) takes only "
                                    "name, repeat and layers")
                    continue
                for r in range(reps):
                    walk(it["layers"], f"{name}[{r}]." if reps > 1 else f"{name}.", f"{tname}.", f"{where}.layers")
                    if problems or len(layers) > MAX_LAYERS:
                        return
                continue
            body = dict(it)
            if "type" in it:
                if it["type"] not in types:
                    known = ", ".join(types) or "none defined"
                    problems.append(f"{file}: {label}: type: {value_text(it['type'])} is not in layer_types ({known})")
                    continue
                if any(k in it for k in KINDS):
                    problems.append(f"{file}: {label}: type and {next(k for k in KINDS if k in it)}: give one, not both")
                    continue
                body = {**types[it["type"]], **{k: v for k, v in it.items() if k in ("elem_size", "consumer_wavefronts",
                                                                                   "rows_per_work_group")}}
            key = (it.get("type"), json.dumps(body, sort_keys=True))
            try:
                if key not in built:
                    built[key] = _derived(body, defaults, kernel_name(it.get("type", tname)), base, f"{file}: {label}")
            except KernelError as e:
                problems.extend(_kernel_problems(e.problems, body, f"{file}: {label}"))
                continue
            except ValueError as e:
                problems.append(f"{file}: {label}: {e}")
                continue
            kernel, lines = built[key]
            part = it.get("partition", {})
            for r in range(reps):
                full = f"{name}[{r}]" if reps > 1 else name
                k = kernel.with_fields(name=kernel_name(full))
                layers.append(Layer(len(layers), full, it.get("type", tname), k, lines,
                                    it.get("clock_mhz", k.core_clock_mhz), part.get("active_cus", k.active_cus),
                                    part.get("lds_bytes", k.lds_bytes), where))
            if len(layers) > MAX_LAYERS:
                problems.append(f"{file}: {label}: more than {MAX_LAYERS:,} layers after expanding repeat")
                return

    walk(doc["layers"], "", "", "layers")
    if problems:
        raise WorkloadError(problems)
    return layers


# ---------------------------------------------------------------- entry points
def _too_deep(doc: dict) -> str:
    """The path of the first group nested deeper than MAX_GROUP_DEPTH ("" if none), found
    without recursion (the schema check would recurse past Python's limit first)."""
    stack = [(doc.get("layers"), "layers", 0)]
    while stack:
        items, path, depth = stack.pop()
        if not isinstance(items, list):
            continue
        for i, it in enumerate(items):
            if isinstance(it, dict) and "layers" in it:
                if depth + 1 > MAX_GROUP_DEPTH:
                    return f"{path}[{i}]" if len(path) < 200 else f"layers[...{depth} levels...][{i}]"
                stack.append((it["layers"], f"{path}[{i}].layers", depth + 1))
    return ""


def parse(doc, file: str = "workload", base: Path | None = None) -> Workload:
    """Check a decoded workload document and expand it; raises WorkloadError."""
    if not isinstance(doc, dict):
        raise WorkloadError([schema.not_an_object(doc, file)])
    deep = _too_deep(doc)
    if deep:
        raise WorkloadError([f"{file}: {deep}: groups nested more than {MAX_GROUP_DEPTH} deep; "
                             f"expected at most {MAX_GROUP_DEPTH} levels of layers inside layers"])
    problems = [f"{file}: {m}" for m in _messages(doc)]
    if problems:
        raise WorkloadError(sorted(set(problems), key=problems.index))
    layers = _expand(copy.deepcopy(doc), base or Path("."), file)
    return Workload(doc["name"], layers, doc.get("description", ""), doc.get("gpu"), doc.get("sources", []), file,
                    doc.get("skipped_layers", []))


def read_json(path, what: str = "workload", limit: int = MAX_FILE_BYTES):
    """A JSON file decoded, or WorkloadError naming the file and what is wrong with it."""
    try:
        return userinput.read_json(path, limit, f"{what} file")
    except userinput.UserFileError as e:
        raise WorkloadError([str(e)]) from None


def load(path) -> Workload:
    """Read, decode, check and expand a workload file; raises WorkloadError."""
    doc = read_json(path)
    return parse(doc, str(path), Path(path).parent)
