"""What a simulation of one CU carries: the environment that counts its events, the kernel's
queues as groups moving in lockstep (Group, queue_groups), one work-group's exchange between its
producer and its consumers (Queues), and what the run gives (Outcome)."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import simpy

from .memory import hit_fractions
from .params import Machine
from .work import STATIONARY, Config, Work


class Environment(simpy.Environment):
    """SimPy's environment, counting the events it schedules (a speed figure)."""

    def __init__(self):
        super().__init__()
        self.scheduled = 0

    def schedule(self, event, priority=1, delay=0):
        self.scheduled += 1
        super().schedule(event, priority, delay)


@dataclass
class Group:
    """Identical consecutive queues with the same slots, moved in lockstep as one queue of
    `count` descriptors a tile."""
    first: int        # index of the first queue of the run
    count: int        # identical queues moving in lockstep
    tiles: int        # tiles per pass
    tile_bytes: int   # bytes of one tile of the whole group (count x tile x elem)
    last_bytes: int   # bytes of the last (partial) tile of a pass
    slots: int
    stationary: bool
    resident: bool    # a stationary operand that fits: loaded once per resident slot
    kept: bool = False  # a re-read operand that fits (ideal run): loaded only in its fresh passes
    every: int = 1    # takes part in every `every`-th pass of the work-group
    period: int = 1   # of its own passes, one in `period` brings new data
    hit_fresh: float = 0.0   # L2 hit fraction of a pass with new data
    hit_again: float = 0.0   # of a pass re-reading data

    operands: tuple = ()  # queues per operand in the group (rows of one matrix share a 2-D box)
    shared: bool = False  # read by several work-groups (its fresh tiles hit or miss whole)

    def descriptors(self, box_rows: int) -> int:
        """Descriptors one tile of the group takes: the rows of one operand share a box of
        up to box_rows rows; other queues each take their own."""
        return sum(math.ceil(n / box_rows) for n in self.operands) if self.operands else self.count

    def bytes(self, k: int) -> int:
        return self.last_bytes if k == self.tiles - 1 else self.tile_bytes

    def in_pass(self, p: int) -> bool:
        return p % self.every == 0

    def skipped(self, p: int, first_wg: bool) -> bool:
        """Whether its tiles of pass p are already in the LDS."""
        own = p // self.every
        return (self.resident and (not first_wg or own > 0)) or (self.kept and own % self.period > 0)

    def hit(self, p: int) -> float:
        return self.hit_fresh if (p // self.every) % self.period == 0 else self.hit_again


def queue_groups(m: Machine, work: Work, cfg: Config, mode: str, concurrent: int) -> list[Group]:
    """The kernel's queues as groups that move in lockstep (identical consecutive queues with
    the same slots), with `concurrent` work-groups resident on the whole GPU (their L2 hits)."""
    w, t, out = work, cfg.tile, []
    hits = hit_fractions(m, w, concurrent)
    for first, count in w.runs():
        slots = cfg.slots[first:first + count]
        i = first
        while i < first + count:  # split a run where slots differ
            j = i
            while j < first + count and slots[j - first] == slots[i - first]:
                j += 1
            q, n, s = w.queues[i], j - i, slots[i - first]
            tiles = w.tiles(i, t)
            last = w.pass_length(i) - (tiles - 1) * t
            fits = s >= tiles and mode != "noatt"
            stationary = q.type == STATIONARY
            # a streaming queue streams: its tiles pass again even when they would fit,
            # except in the ideal run, where all data fits and stays until new data comes
            out.append(Group(i, n, tiles, n * t * q.elem_size, n * last * q.elem_size, s, stationary,
                             resident=fits and stationary and q.fresh_passes == 1,
                             kept=fits and not stationary and q.passes > q.fresh_passes and mode == "ideal",
                             every=w.passes // q.passes, period=q.passes // q.fresh_passes,
                             hit_fresh=hits[i][0], hit_again=hits[i][1],
                             operands=tuple(Counter(w.operand(x) for x in range(i, j)).values()),
                             shared=w.sharers(i) > 1))
            i = j
    return out


class Queues:
    """One work-group's exchange between producer and consumers: per group, the arrival
    times of the tiles issued and the release times of the slots freed, and the event a
    side waits on when the other has not got there yet."""

    def __init__(self, env, n: int):
        self.arrivals = [[] for _ in range(n)]
        self.released = [[] for _ in range(n)]
        self.consumer_wait = [None] * n
        self.producer_wait = [None] * n
        self.drained = simpy.Store(env)

    @staticmethod
    def wake(waits: list, gi: int, delay: float = 0.0) -> None:
        """Wake the side waiting on group gi, `delay` cycles from now (when the slot it waits
        for is free: one event instead of a wake-up and a timeout)."""
        ev = waits[gi]
        if ev is not None:
            ev._ok, ev._value = True, None  # Event.succeed, scheduled later
            ev.env.schedule(ev, delay=delay)
            waits[gi] = None


@dataclass
class Outcome:
    """What one kernel did on the model. Cycles are GPU core cycles at the kernel's clock."""
    cycles: float
    ns: float
    occupancy: int            # work-groups resident at once on a CU
    work_groups_per_cu: int
    dram_gbps: float          # achieved, whole GPU (bytes through the DRAM pipes / time)
    compute_util: float       # fraction of the CU's SIMD throughput used
    stall_producer: float     # cycles producers waited for a free slot (summed over WGs)
    stall_consumer: float     # cycles consumers waited for data
    barrier_cycles: float     # cycles consumers spent on barriers
    events: int
    transfers: int
    mean_latency: float       # issue to arrival of a transfer, cycles (simulated part)
    mean_in_flight: float     # time-averaged transfers in flight (simulated part)
    throughput: float         # transfers per cycle
    extrapolated: bool = False  # later rounds of work-groups or passes extrapolated
    l2_hit: float = 0.0       # fraction of the bytes moved through the queues that hit in the L2
    trace: list = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "trace"}
