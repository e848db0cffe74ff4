"""kernel.json: a kernel launch described for people, checked, and packed for the unit.

    k = load_kernel("examples/kernels/matrix-matrix.json")   # or parse_kernel(doc)
    k.record()                                               # abi.LAUNCH_SIZE bytes

The format is kernel.schema.json (next to this file); docs/kernel-format.md explains it.
Every problem found is reported at once, each naming the JSON path, the value and what
is allowed, e.g. `kernel.json: queues[2].elem_size: 3 is not one of 1, 2, 4, 8`.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
import numbers
import re
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from ..gst import abi
from ..util.schema import Checker, not_an_object, path_order, report
from ..util.userinput import UserFileError, printable, read_json

SCHEMA_PATH = Path(files(__package__) / "kernel.schema.json")  # package data
QUEUE_TYPES = {"streaming": abi.QUEUE_STREAMING, "stationary": abi.QUEUE_STATIONARY}
ABLATION_FLAGS = {"ci_scaling": abi.FLAG_NO_CI_SCALING, "littles_law": abi.FLAG_NO_LITTLE,
                  "cu_aware": abi.FLAG_NO_CU_AWARE, "cache": abi.FLAG_NO_CACHE}
DEFAULT_WAVEFRONTS = 7  # QuCo's 512-work-item work-group: 8 wavefronts, one of them the producer
MAX_FILE_BYTES = 1 << 20  # a kernel.json is a few hundred bytes; /dev/zero is not one


class KernelError(ValueError):
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
    # How the data moves, for the performance model (the launch record carries only the passes,
    # which the paper's rules ignore and quco+ reads):
    # per queue (passes, fresh_passes, shared_by), 0 = the default; empty = all defaults.
    movement: list[tuple[int, int, int]] = field(default_factory=list)
    phases: int = 1    # the work-group's passes fall into this many phases, each ended by a drain
    split_k: int = 1   # work-groups that share one queue length (split K), reduced after the grid

    def __post_init__(self):
        """A Kernel built in Python obeys kernel.json's rules, with the same messages."""
        problems = [msg for _, msg in _checker().problems(self.document())] + _flag_problems(self.flags)
        if not problems and self.movement:
            problems = movement_problems(self.movement, self.phases)
        if not problems:
            problems = split_problems(self.split_k, self.work_groups, [q[0] for q in self.queues])
        if problems:
            raise KernelError([f"Kernel({printable(str(self.name))[:40]!r}): {p}" for p in report(problems)])

    def document(self) -> dict:
        """This kernel as a kernel.json document: one entry per queue, no queue names."""
        types = {code: name for name, code in QUEUE_TYPES.items()}

        def whole(v):  # numpy integers count as integers; anything else is left to the schema
            return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v

        def number(v):
            return float(v) if isinstance(v, numbers.Real) and not isinstance(v, bool) else v

        doc = {"name": self.name, "compute_intensity": self.ci_class or number(self.compute_intensity),
               "consumer_wavefronts": whole(self.consumer_wavefronts),
               "queues": [{"type": types.get(q[1], q[1]), "length": whole(q[0]), "elem_size": whole(q[2]),
                           **_movement_doc(self.movement, i)}
                          if isinstance(q, (tuple, list)) and len(q) == 3 else q for i, q in enumerate(self.queues)],
               "partition": {"core_clock_mhz": whole(self.core_clock_mhz), "active_cus": whole(self.active_cus),
                             "lds_bytes": whole(self.lds_bytes)},
               "description": self.description}
        if self.gpu is not None:
            doc["gpu"] = self.gpu
        if self.work_groups or self.output_bytes or self.flops_per_work_group or self.phases != 1 or self.split_k != 1:
            doc["grid"] = {"work_groups": whole(self.work_groups) or 1, "output_bytes": whole(self.output_bytes),
                           "flops_per_work_group": whole(self.flops_per_work_group)}
            doc["grid"].update({k: whole(v) for k, v in (("phases", self.phases), ("split_k", self.split_k)) if v != 1})
        return doc

    def with_fields(self, **changes) -> "Kernel":
        """dataclasses.replace for this checked kernel that checks only the fields that change
        (a workload's layers: a new name, clock or partition per layer); the full check of
        __post_init__ costs about 10 ms, which 100,000 layers would pay twice."""
        if not changes.keys() <= _FIELD_PATHS.keys():
            return dataclasses.replace(self, **changes)
        problems = [msg for key, v in changes.items() if not _fine(key, v)
                    for _, msg in _checker().problems(v, at=_FIELD_PATHS[key])]
        if problems:
            raise KernelError([f"Kernel({printable(str(self.name))[:40]!r}): {p}" for p in report(problems)])
        new = copy.copy(self)
        for key, v in changes.items():
            setattr(new, key, v)
        return new

    def header(self) -> dict:
        return dict(magic=abi.LAUNCH_MAGIC, flags=self.flags, compute_intensity=self.compute_intensity,
                    ci_class=abi.CI_CLASSES[self.ci_class] if self.ci_class else abi.CI_CLASS_NUMBER,
                    consumer_wavefronts=self.consumer_wavefronts, core_clock_mhz=self.core_clock_mhz,
                    active_cus=self.active_cus, lds_bytes=self.lds_bytes, num_queues=len(self.queues))

    def record(self) -> bytes:
        """The packed launch record: header, the queues, zeros for the unused queue slots. A
        queue's passes (the data movement's) go in its `passes` field: 0 for one pass, so a
        single-pass kernel's record is the bytes it always was; clamped to what the field holds
        (quco+ reads passes against at most 16 slots and a tile of at most 65,536 elements, so a
        larger count picks the same but for a one-element queue)."""
        top = int(abi.QUEUE.field("passes").hi)
        passes = [min(m[0], top) if m[0] > 1 else 0 for m in self.movement] or [0] * len(self.queues)
        return pack_record(self.header(), [dict(length=n, type=t, elem_size=e, passes=p)
                                           for (n, t, e), p in zip(self.queues, passes)])


def pack_record(header: dict, queues: list[dict]) -> bytes:
    """A launch record from field dictionaries (header fields, one dict per queue), zeros for
    the unused queue slots; num_queues defaults to the queues given."""
    body = abi.LAUNCH_HEADER.pack({**header, "num_queues": header.get("num_queues", len(queues))})
    body += b"".join(abi.QUEUE.pack(q) for q in queues)
    return body + bytes(abi.LAUNCH_SIZE - len(body))


MOVEMENT_FIELDS = ("passes", "fresh_passes", "shared_by")
# Kernel fields that with_fields checks on their own, and their kernel.json paths
_FIELD_PATHS = {"name": ("name",), "core_clock_mhz": ("partition", "core_clock_mhz"),
                "active_cus": ("partition", "active_cus"), "lds_bytes": ("partition", "lds_bytes")}


def _movement_doc(movement, i: int) -> dict:
    """queues[i]'s data-movement fields that differ from their defaults."""
    if i >= len(movement) or not isinstance(movement[i], (tuple, list)) or len(movement[i]) != 3:
        return {}
    passes, fresh, shared = movement[i]
    return {k: v for k, v in zip(MOVEMENT_FIELDS, (passes, fresh, shared)) if v not in (0, None) and not (k == "passes" and v == 1)}


def _fine(key: str, value) -> bool:
    """Whether a with_fields value passes its schema rule, without jsonschema for the common
    cases (a printable name of the right length, an integer in range): the schema check
    itself gives the message when it does not."""
    rule = _checker().at(_FIELD_PATHS[key])
    if key == "name":
        return (isinstance(value, str) and rule["minLength"] <= len(value) <= rule["maxLength"]
                and _name_pattern().match(value) is not None)
    return (type(value) is int and rule["minimum"] <= value <= rule["maximum"]
            and value % rule.get("multipleOf", 1) == 0)


@functools.lru_cache(maxsize=1)
def _name_pattern():
    return re.compile(_checker().at(("name",))["pattern"])


def movement_problems(movement, phases: int = 1) -> list[str]:
    """The loop nest's consistency, per queue (passes, fresh_passes, shared_by; 0 = default):
    every queue's passes divide the work-group's (the most of any queue), its fresh passes
    divide its passes, the phases divide the work-group's passes."""
    out = []
    total = max((p or 1 for p, _, _ in movement), default=1)
    for i, (passes, fresh, _) in enumerate(movement):
        passes = passes or 1
        if total % passes:
            out.append(f"queues[{i}].passes: {passes} does not divide the work-group's {total} passes "
                       "(the most of any queue); expected a divisor")
        if fresh and passes % fresh:
            out.append(f"queues[{i}].fresh_passes: {fresh} does not divide its passes ({passes})")
    if total % phases:
        out.append(f"grid.phases: {phases} does not divide the work-group's {total} passes")
    return out


def split_problems(split_k: int, work_groups: int, lengths: list[int]) -> list[str]:
    """A split K that cannot describe a kernel: split_k work-groups share one queue length, so
    the grid is whole groups of them, and each moves at least one element of every queue a pass."""
    if split_k == 1:
        return []
    out = []
    if work_groups < split_k or work_groups % split_k:  # 0: no grid given
        out.append(f"grid.split_k: {split_k} does not divide grid.work_groups ({work_groups or 'not given'}): "
                   f"{split_k} work-groups share each queue length; expected a divisor of the work-groups")
    if lengths and split_k > min(lengths):
        i = lengths.index(min(lengths))
        out.append(f"grid.split_k: {split_k} is more than queues[{i}].length ({lengths[i]}): each of the "
                   f"{split_k} work-groups would move less than one element a pass; expected at most {min(lengths)}")
    return out


def schema() -> dict:
    """The shipped JSON Schema of kernel.json."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _checker() -> Checker:
    return Checker(schema())


def _problems(doc: dict) -> list[str]:
    found = _checker().problems(doc)
    queues = doc.get("queues")
    if isinstance(queues, list) and len(queues) <= abi.MAX_QUEUES:
        counts = [_count(q) for q in queues]
        if None not in counts and sum(counts) > abi.MAX_QUEUES:
            found.append((["queues"], f"queues: {sum(counts)} queues after expanding count "
                                      f"({' + '.join(map(str, counts))}); expected at most {abi.MAX_QUEUES} in total"))
    return report([msg for _, msg in sorted(found, key=path_order)])


def partition_problems(active_cus: int, lds_bytes: int, g: dict, gpu: str) -> list[str]:
    """A partition the GPU cannot give (GST fields `g`), in kernel.json's words; checked
    before any launch by every command (the unit would answer with an error status). The
    rules are the launch record's fields' (gst/abi.py: at most the GST's value, 0 = all)."""
    problems = []
    for name, value in (("active_cus", active_cus), ("lds_bytes", lds_bytes)):
        f = abi.LAUNCH_HEADER.field(name)
        if value > g[f.at_most]:
            per_cu = " per CU" * ("per CU" in abi.GST.field(f.at_most).doc)
            problems.append(f"partition.{name}: {value} is out of range; expected 0 to {g[f.at_most]} "
                            f"({printable(gpu)}'s {f.at_most}{per_cu}; 0 = all)"
                            + f", a multiple of {f.multiple}" * (f.multiple > 1))
    return problems


def _flag_problems(flags) -> list[str]:
    if isinstance(flags, numbers.Integral) and not isinstance(flags, bool) and not flags & ~abi.FLAGS_ALL:
        return []
    return [f"flags: {printable(repr(flags))[:40]}: expected a combination of the FLAG_* bits (0 to 0x{abi.FLAGS_ALL:x})"]


def check_values(values: dict, flags=0) -> None:
    """kernel.json's rules and messages for values given one by one in Python (Device.init,
    Device.register_queue): `values` maps a field's path, e.g. ("partition", "lds_bytes") or
    ("queues", 3), to its value. Raises KernelError naming each field."""
    problems = [msg for path, value in values.items() for _, msg in _checker().problems(value, at=path)]
    problems += _flag_problems(flags)
    if problems:
        raise KernelError(report(problems))


def _count(q) -> int | None:
    """How many queues one queues[] entry stands for; None when count itself is wrong."""
    c = q.get("count", 1) if isinstance(q, dict) else 1
    return c if isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= abi.MAX_QUEUES else None


# ---------------------------------------------------------------- entry points
def parse_kernel(doc, where: str = "kernel") -> Kernel:
    """Check a decoded kernel.json document and build the Kernel; raises KernelError."""
    if not isinstance(doc, dict):
        raise KernelError([not_an_object(doc, where)])
    problems = _problems(doc)
    if not problems:  # the loop nest, once every field is of the right type and range
        problems = movement_problems([(q.get("passes", 1), q.get("fresh_passes", 0), 0)
                                      for q in doc["queues"] for _ in range(_count(q))],
                                     doc.get("grid", {}).get("phases", 1))
        problems += split_problems(doc.get("grid", {}).get("split_k", 1), doc.get("grid", {}).get("work_groups", 0),
                                   [q["length"] for q in doc["queues"]])
    if problems:
        raise KernelError([f"{where}: {p}" for p in problems])
    queues, names, movement = [], [], []
    for q in doc["queues"]:
        n = _count(q)
        for i in range(n):
            queues.append((int(q["length"]), QUEUE_TYPES[q["type"]], int(q["elem_size"])))
            movement.append((int(q.get("passes", 1)), int(q.get("fresh_passes", 0)), int(q.get("shared_by", 0))))
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
                  flops_per_work_group=int(grid.get("flops_per_work_group", 0)),
                  movement=movement if any(m != (1, 0, 0) for m in movement) else [],
                  phases=int(grid.get("phases", 1)), split_k=int(grid.get("split_k", 1)))


def load_kernel(path) -> Kernel:
    """Read, decode and check a kernel.json file; raises KernelError."""
    try:
        doc = read_json(path, MAX_FILE_BYTES, "kernel.json")
    except UserFileError as e:
        raise KernelError([str(e)]) from None
    try:
        return parse_kernel(doc, printable(str(path)))
    except RecursionError:  # a deep value the schema checks walk into
        raise KernelError([f"{printable(str(path))}: nested too deeply to be a kernel.json"]) from None
