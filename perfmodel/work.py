"""What a kernel asks of one compute unit, and a configuration of its queues.

`Work` is the kernel's side (queues, compute intensity, consumer wavefronts, grid), taken
from a kernel.json; `Config` is one choice of tile and slots per queue, from the firmware's
LDS configuration, the reference model, a baseline or the exhaustive search. The model
reads both and nothing else: whoever produced a configuration is judged on the same terms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..gst import abi
from ..host.kernel import KernelError

STREAMING, STATIONARY = abi.QUEUE_STREAMING, abi.QUEUE_STATIONARY
BARRIERS_PER_SLOT = abi.const("BARRIERS_PER_SLOT")


@dataclass(frozen=True)
class Queue:
    length: int      # elements one work-group moves through the queue
    type: int        # STREAMING or STATIONARY
    elem_size: int   # bytes


@dataclass(frozen=True)
class Work:
    name: str
    queues: tuple[Queue, ...]
    compute_intensity: float   # FLOPs per byte the queues carry
    consumer_wavefronts: int
    work_groups: int = 0       # 0: one per active CU
    output_bytes: int = 0      # written by one work-group
    flops: int = 0             # computed by one work-group; 0: compute_intensity x queue bytes

    @classmethod
    def of(cls, kernel) -> "Work":
        """From a quco.host.kernel.Kernel."""
        if not kernel.flops_per_work_group and kernel.ci_class:
            raise KernelError([f"{kernel.name}: grid.flops_per_work_group: missing; the performance model needs "
                               f"FLOPs and compute_intensity is the class {kernel.ci_class!r}: give "
                               "grid.flops_per_work_group (integer >= 0) or a numeric compute_intensity"])
        return cls(kernel.name, tuple(Queue(n, t, e) for n, t, e in kernel.queues),
                   float(kernel.compute_intensity), kernel.consumer_wavefronts,
                   kernel.work_groups, kernel.output_bytes, kernel.flops_per_work_group)

    @property
    def flops_per_byte(self) -> float:
        """FLOPs per byte the queues carry (one pass over every queue)."""
        if not self.flops:
            return self.compute_intensity
        return self.flops / sum(q.length * q.elem_size for q in self.queues)

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
        return math.ceil(self.queues[i].length / tile)


@dataclass(frozen=True)
class Config:
    """One tile size for every queue (as the unit configures) and the slots of each queue."""
    tile: int
    slots: tuple[int, ...]

    def label(self, work: Work) -> str:
        runs = work.runs()
        return f"{self.tile} / " + "+".join(str(self.slots[a]) for a, _ in runs)


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
