"""What a kernel asks of one compute unit, and a configuration of its queues.

`Work` is the kernel's side (queues, compute intensity, consumer wavefronts, grid), taken
from a kernel.json; `Config` is one choice of tile and slots per queue, from the firmware's
LDS configuration, the reference model, a baseline or the exhaustive search. The model
reads both and nothing else: whoever produced a configuration is judged on the same terms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..gst import abi
from ..kernel.format import KernelError, movement_problems

STREAMING, STATIONARY = abi.QUEUE_STREAMING, abi.QUEUE_STATIONARY
BARRIERS_PER_SLOT = abi.const("BARRIERS_PER_SLOT")


@dataclass(frozen=True)
class Queue:
    length: int      # elements of one pass through the queue (the launch record's length)
    type: int        # STREAMING or STATIONARY
    elem_size: int   # bytes
    passes: int = 1  # times the queue's length passes through it per work-group
    fresh: int = 0   # passes that bring data the work-group has not read before (0: every pass)
    sharers: int = 0  # work-groups that read the same data (0: 1 if streaming, every one if stationary)

    @property
    def fresh_passes(self) -> int:
        return self.fresh or self.passes

    def is_fresh(self, p: int) -> bool:
        """Whether pass p (0-based, of this queue's own passes) reads data new to the work-group."""
        return p % (self.passes // self.fresh_passes) == 0


@dataclass(frozen=True)
class Work:
    name: str
    queues: tuple[Queue, ...]
    compute_intensity: float   # FLOPs per byte the queues carry
    consumer_wavefronts: int
    work_groups: int = 0       # 0: one per active CU
    output_bytes: int = 0      # written by one work-group
    flops: int = 0             # computed by one work-group; 0: compute_intensity x queue bytes
    phases: int = 1            # the passes fall into this many phases, each ended by a drain barrier
    split_k: int = 1           # each work-group moves 1/split_k of every queue's length per pass
    operands: tuple[int, ...] = ()  # per queue, the operand it carries (one kernel.json entry with
                                    # `count`: rows of one matrix); () = each queue its own

    def operand(self, i: int) -> int:
        return self.operands[i] if self.operands else i

    @classmethod
    def of(cls, kernel) -> "Work":
        """From a quco.kernel.format.Kernel."""
        if not kernel.flops_per_work_group and kernel.ci_class:
            raise KernelError([f"{kernel.name}: grid.flops_per_work_group: missing; the performance model needs "
                               f"FLOPs and compute_intensity is the class {kernel.ci_class!r}: give "
                               "grid.flops_per_work_group (integer >= 0) or a numeric compute_intensity"])
        moves = kernel.movement or [(1, 0, 0)] * len(kernel.queues)
        work = cls(kernel.name, tuple(Queue(n, t, e, p, f, s) for (n, t, e), (p, f, s) in zip(kernel.queues, moves)),
                   float(kernel.compute_intensity), kernel.consumer_wavefronts,
                   kernel.work_groups, kernel.output_bytes, kernel.flops_per_work_group,
                   kernel.phases, kernel.split_k, operands_of(kernel.queue_names))
        problems = work.problems()
        if problems:
            raise KernelError([f"{kernel.name}: {p}" for p in problems])
        return work

    def problems(self) -> list[str]:
        """The loop nest's consistency (quco.kernel.format.movement_problems)."""
        return movement_problems([(q.passes, q.fresh, q.sharers) for q in self.queues], self.phases)

    @property
    def passes(self) -> int:
        """Passes of the work-group's loop (the most of any queue)."""
        return max(q.passes for q in self.queues)

    def pass_length(self, i: int) -> int:
        """Elements of queue i one work-group moves per pass (its share of a split K)."""
        return math.ceil(self.queues[i].length / self.split_k)

    def moved_bytes(self) -> int:
        """Bytes one work-group moves through its queues, every pass counted."""
        return sum(self.pass_length(i) * q.elem_size * q.passes for i, q in enumerate(self.queues))

    def sharers(self, i: int) -> int:
        q = self.queues[i]
        return q.sharers or (1 if q.type == STREAMING else max(self.work_groups, 1))

    @property
    def flops_per_byte(self) -> float:
        """FLOPs per byte the queues carry, re-fetched passes counted: the work-group's FLOPs
        spread over the steps in proportion to what each step moves."""
        if not self.flops:
            return self.compute_intensity
        return self.flops / self.moved_bytes()

    def runs(self) -> list[tuple[int, int]]:
        """(first index, count) of each run of identical consecutive queues."""
        out: list[list[int]] = []
        for i, q in enumerate(self.queues):
            if out and self.queues[out[-1][0]] == q:
                out[-1][1] += 1
            else:
                out.append([i, 1])
        return [(a, b) for a, b in out]

    def tiles(self, i: int, tile: int) -> int:
        """Tiles of queue i per pass."""
        return math.ceil(self.pass_length(i) / tile)


@dataclass(frozen=True)
class Config:
    """One tile size for every queue (as the unit configures) and the slots of each queue."""
    tile: int
    slots: tuple[int, ...]
    # the measured kernel's unpipelined loop (Triton's 1 stage): each load of a step is issued
    # once the one before it is in (hardware.measured_config); never set by the search
    serial: bool = field(default=False, repr=False)

    def label(self, work: Work) -> str:
        runs = work.runs()
        return f"{self.tile} / " + "+".join(str(self.slots[a]) for a, _ in runs)

    @classmethod
    def parse(cls, work: Work, text: str) -> "Config":
        """'TILE/S' (every queue S slots), 'TILE/S1+S2' (slots per run of identical queues, as
        `label` prints them) or one slot count per queue; raises ValueError naming the problem."""
        tile, sep, slots = text.replace(" ", "").partition("/")
        parts = slots.split("+") if sep else []
        if not tile.isdigit() or not parts or not all(p.isdigit() for p in parts):
            raise ValueError(f"{text!r}: expected TILE/SLOTS, e.g. 512/2 or 512/2+4 (slots per run of identical "
                             "queues, in queue order)")
        runs, n = work.runs(), len(work.queues)
        counts = [int(p) for p in parts]
        if len(counts) == 1:
            per_queue = counts * n
        elif len(counts) == len(runs):
            per_queue = [s for (_, c), s in zip(runs, counts) for _ in range(c)]
        elif len(counts) == n:
            per_queue = counts
        else:
            raise ValueError(f"{text!r}: {len(counts)} slot counts; expected 1, {len(runs)} (one per run of identical "
                             f"queues) or {n} (one per queue)")
        return cls(int(tile), tuple(per_queue))


def operands_of(names: list[str]) -> tuple[int, ...]:
    """Operand ids from the kernel's queue names: parse_kernel names the queues of one entry
    with `count` "NAME[0]", "NAME[1]", ...: consecutive ones of one NAME carry one operand."""
    out: list[int] = []
    prev = None
    for i, n in enumerate(names):
        base, sep, _ = n.rpartition("[")
        key = base if sep and n.endswith("]") and base else None
        out.append(out[-1] if key is not None and key == prev else i)
        prev = key
    return tuple(out)


meta_bytes = abi.meta_bytes  # LDS bytes of the header and descriptors, rounded up to LDS_ALIGN


def queue_bytes(work: Work, cfg: Config) -> int:
    """LDS bytes of one work-group's queue blocks, laid out as the unit lays them out."""
    return sum(abi.lds_align(s * cfg.tile * q.elem_size) for q, s in zip(work.queues, cfg.slots))


def barriers(cfg: Config) -> int:
    return BARRIERS_PER_SLOT * sum(cfg.slots)


def fits(work: Work, cfg: Config, lds_bytes: int, barrier_limit: int) -> bool:
    """Whether one work-group's configuration fits a CU at all."""
    return (meta_bytes(len(work.queues)) + queue_bytes(work, cfg) <= lds_bytes
            and barriers(cfg) <= barrier_limit)
