"""kernel.json: a kernel launch described for people, checked, and packed for the unit.

    k = load_kernel("examples/kernels/matrix-matrix.json")   # or parse_kernel(doc)
    k.record()                                               # abi.LAUNCH_SIZE bytes

The format is kernel.schema.json (next to this file); docs/kernel-format.md explains it.
Every problem found is reported at once, each naming the JSON path, the value and what
is allowed, e.g. `kernel.json: queues[2].elem_size: 3 is not one of 1, 2, 4, 8`.
"""
from __future__ import annotations

import difflib
import functools
import json
import math
import os
import stat
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from jsonschema import Draft202012Validator

from quco.gst import abi

SCHEMA_PATH = Path(files(__package__) / "kernel.schema.json")  # package data
QUEUE_TYPES = {"streaming": abi.QUEUE_STREAMING, "stationary": abi.QUEUE_STATIONARY}
ABLATION_FLAGS = {"ci_scaling": abi.FLAG_NO_CI_SCALING, "littles_law": abi.FLAG_NO_LITTLE,
                  "cu_aware": abi.FLAG_NO_CU_AWARE, "cache": abi.FLAG_NO_CACHE}
DEFAULT_WAVEFRONTS = 7  # QuCo's 512-work-item work-group: 8 wavefronts, one of them the producer
MAX_FILE_BYTES = 1 << 20  # a kernel.json is a few hundred bytes; /dev/zero is not one


class KernelError(Exception):
    """A kernel description that cannot be launched; `problems` lists every reason."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass
class Kernel:
    name: str
    compute_intensity: float  # 0.0 when the file gives a class
    ci_class: str | None = None  # "low", "medium", "high" when the file gives a class
    consumer_wavefronts: int = DEFAULT_WAVEFRONTS
    queues: list[tuple[int, int, int]] = field(default_factory=list)  # (length, type code, elem_size)
    queue_names: list[str] = field(default_factory=list)
    flags: int = 0
    core_clock_mhz: int = 0
    active_cus: int = 0
    lds_bytes: int = 0
    gpu: str | None = None
    description: str = ""
    work_groups: int = 0   # grid size for the performance model; 0 = one per active CU
    output_bytes: int = 0  # bytes one work-group writes to global memory
    flops_per_work_group: int = 0  # for the performance model; 0 = CI x the bytes the queues carry

    def header(self) -> dict:
        return dict(magic=abi.LAUNCH_MAGIC, flags=self.flags, compute_intensity=self.compute_intensity,
                    ci_class=abi.CI_CLASSES[self.ci_class] if self.ci_class else abi.CI_CLASS_NUMBER,
                    consumer_wavefronts=self.consumer_wavefronts, core_clock_mhz=self.core_clock_mhz,
                    active_cus=self.active_cus, lds_bytes=self.lds_bytes, num_queues=len(self.queues))

    def record(self) -> bytes:
        """The packed launch record: header, the queues, zeros for the unused queue slots."""
        body = abi.LAUNCH_HEADER.pack(self.header())
        body += b"".join(abi.QUEUE.pack(dict(length=n, type=t, elem_size=e)) for n, t, e in self.queues)
        return body + bytes(abi.LAUNCH_SIZE - len(body))


def schema() -> dict:
    """The shipped JSON Schema of kernel.json."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    s = schema()
    Draft202012Validator.check_schema(s)
    return Draft202012Validator(s)


# ---------------------------------------------------------------- messages
def _loc(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _val(v) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _num(v) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _allowed(sub: dict) -> str:
    """What a (sub)schema accepts, in words: `integer 1 to 64`, `one of 1, 2, 4, 8`."""
    if "anyOf" in sub:
        return " or ".join(_allowed(s) for s in sub["anyOf"])
    if "enum" in sub:
        return "one of " + ", ".join(json.dumps(v) for v in sub["enum"])
    t = sub.get("type", "value")
    if t == "array":
        return f"array of {sub.get('minItems', 0)} to {sub.get('maxItems', 'any number of')} entries"
    if t == "string":
        return "non-empty string" if sub.get("minLength") else "string"
    if t == "boolean":
        return "true or false"
    if t == "object":
        return "object with " + ", ".join(sub["required"]) if sub.get("required") else "object"
    if t in ("integer", "number"):
        lo, hi = sub.get("minimum"), sub.get("maximum")
        text = t if lo is None else (f"{t} >= {_num(lo)}" if hi is None else f"{t} {_num(lo)} to {_num(hi)}")
        return text + (f", multiple of {_num(sub['multipleOf'])}" if "multipleOf" in sub else "")
    return t


def _resolve(sub: dict) -> dict:
    ref = sub.get("$ref", "")
    return _validator().schema["$defs"][ref.rsplit("/", 1)[1]] if ref.startswith("#/$defs/") else sub


def _schema_at(path) -> dict:
    sub = _validator().schema
    for p in path:
        sub = _resolve(sub)
        sub = sub.get("items", {}) if isinstance(p, int) else sub.get("properties", {}).get(p, {})
    return _resolve(sub)


def _what(v, expected: str) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if v is None:
        return "null"
    if isinstance(v, float) and expected == "integer":
        return "not a whole number"
    return {str: "a string", list: "an array", dict: "an object"}.get(type(v), "a number")


def _messages(err) -> list[tuple[list, str]]:
    """(path, message) pairs for one jsonschema error."""
    path, v, kind, sub = list(err.absolute_path), err.instance, err.validator, err.schema
    loc, allowed = _loc(path), _allowed(sub)
    if kind == "required":
        missing = [k for k in sub["required"] if k not in v]
        return [(path + [k], f"{_loc(path + [k])}: missing (required {_allowed(_resolve(sub['properties'][k]))})")
                for k in missing]
    if kind == "additionalProperties":
        known = list(sub.get("properties", {}))
        out = []
        for k in (k for k in v if k not in known):
            hint = difflib.get_close_matches(k, known, n=1)
            msg = f"{_loc(path + [k])}: unknown field (allowed: {', '.join(known)})"
            out.append((path + [k], msg + (f"; did you mean {json.dumps(hint[0])}?" if hint else "")))
        return out
    if kind == "type":
        return [(path, f"{loc}: {_val(v)} is {_what(v, sub.get('type'))}; expected {allowed}")]
    if kind == "anyOf":  # a number or a name (compute_intensity): say which rule it broke
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        if numeric:
            return [(path, f"{loc}: {_val(v)} is out of range; expected {allowed}")]
        if isinstance(v, str):
            return [(path, f"{loc}: {_val(v)} is not an allowed name; expected {allowed}")]
        return [(path, f"{loc}: {_val(v)} is {_what(v, 'number')}; expected {allowed}")]
    if kind == "enum":
        return [(path, f"{loc}: {_val(v)} is not {allowed}")]
    if kind in ("minimum", "maximum"):
        return [(path, f"{loc}: {_val(v)} is out of range; expected {allowed}")]
    if kind == "multipleOf":
        return [(path, f"{loc}: {_val(v)} is not a multiple of {_num(sub['multipleOf'])}; expected {allowed}")]
    if kind in ("minItems", "maxItems"):
        return [(path, f"{loc}: {len(v)} entries; expected {allowed}")]
    if kind == "minLength":
        return [(path, f"{loc}: {_val(v)} is empty; expected {allowed}")]
    return [(path, f"{loc or '(top level)'}: {err.message}")]


def _non_finite(v, path=()):
    """Paths of NaN / Infinity anywhere in the document (Python's json accepts them)."""
    if isinstance(v, float) and not math.isfinite(v):
        yield list(path), v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _non_finite(x, (*path, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _non_finite(x, (*path, i))


def _problems(doc: dict) -> list[str]:
    found = []
    bad = list(_non_finite(doc))
    for p, v in bad:
        found.append((p, f"{_loc(p)}: {_val(v)} is not a finite number; expected {_allowed(_schema_at(p))}"))
    for err in _validator().iter_errors(doc):
        if all(list(err.absolute_path) != p for p, _ in bad):
            found.extend(_messages(err))
    queues = doc.get("queues")
    if isinstance(queues, list) and len(queues) <= abi.MAX_QUEUES:
        counts = [_count(q) for q in queues]
        if sum(counts) > abi.MAX_QUEUES:
            found.append((["queues"], f"queues: {sum(counts)} queues after expanding count "
                                      f"({' + '.join(map(str, counts))}); expected at most {abi.MAX_QUEUES} in total"))
    return [msg for _, msg in sorted(found, key=lambda pm: [(isinstance(p, str), p) for p in pm[0]])]


def _count(q) -> int:
    c = q.get("count", 1) if isinstance(q, dict) else 1
    return c if isinstance(c, int) and not isinstance(c, bool) and c >= 1 else 1


# ---------------------------------------------------------------- entry points
def parse_kernel(doc, where: str = "kernel") -> Kernel:
    """Check a decoded kernel.json document and build the Kernel; raises KernelError."""
    if not isinstance(doc, dict):
        raise KernelError([f"{where}: the top level is {_what(doc, 'object')}; expected an object"])
    problems = _problems(doc)
    if problems:
        raise KernelError([f"{where}: {p}" for p in problems])
    queues, names = [], []
    for q in doc["queues"]:
        n = _count(q)
        for i in range(n):
            queues.append((int(q["length"]), QUEUE_TYPES[q["type"]], int(q["elem_size"])))
            name = q.get("name", "")
            names.append(f"{name}[{i}]" if name and n > 1 else name)
    part, abl, grid = doc.get("partition", {}), doc.get("ablation", {}), doc.get("grid", {})
    flags = sum(bit for key, bit in ABLATION_FLAGS.items() if not abl.get(key, True))
    ci = doc["compute_intensity"]
    cls = ci if isinstance(ci, str) else None
    return Kernel(name=doc["name"], compute_intensity=0.0 if cls else float(ci), ci_class=cls,
                  consumer_wavefronts=int(doc.get("consumer_wavefronts", DEFAULT_WAVEFRONTS)),
                  queues=queues, queue_names=names, flags=flags,
                  core_clock_mhz=int(part.get("core_clock_mhz", 0)), active_cus=int(part.get("active_cus", 0)),
                  lds_bytes=int(part.get("lds_bytes", 0)), gpu=doc.get("gpu"),
                  description=doc.get("description", ""), work_groups=int(grid.get("work_groups", 0)),
                  output_bytes=int(grid.get("output_bytes", 0)),
                  flops_per_work_group=int(grid.get("flops_per_work_group", 0)))


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    for k in (k for k in keys if keys.count(k) > 1):
        raise ValueError(f"duplicate field {json.dumps(k)}")
    return dict(pairs)


def load_kernel(path) -> Kernel:
    """Read, decode and check a kernel.json file; raises KernelError."""
    where = str(path)
    try:
        mode = os.stat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a FIFO or /dev/zero would block or never end
            raise KernelError([f"{where}: not a regular file"])
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise KernelError([f"{where}: larger than {MAX_FILE_BYTES:,} bytes; a kernel.json is a few hundred"])
        text = data.decode("utf-8")
    except OSError as e:
        raise KernelError([f"{where}: cannot read: {e.strerror or e}"]) from None
    except UnicodeDecodeError as e:
        raise KernelError([f"{where}: not UTF-8 text: byte {e.start}"]) from None
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
        return parse_kernel(doc, where)
    except json.JSONDecodeError as e:
        raise KernelError([f"{where}: not JSON: {e.msg} at line {e.lineno} column {e.colno}"]) from None
    except RecursionError:
        raise KernelError([f"{where}: nested too deeply to be a kernel.json"]) from None
    except ValueError as e:
        raise KernelError([f"{where}: not JSON: {e}"]) from None
