"""Discrete-event model (SimPy) of one compute unit running a kernel's work-groups.

The busiest CU of the partition runs ceil(work_groups / CUs) work-groups, as many at once
as its LDS, barriers and wavefront slots allow (occupancy). In each resident work-group:

- the producer wavefront walks the tiles in order and, per queue, waits for a free slot
  (the slot's "empty" barrier), issues the ATT descriptor (the CU's ATT unit is busy
  ATT_DESC_CYCLES per descriptor) and moves on; the tile arrives after the ATT latency plus
  the L2 or DRAM round trip, and after its bytes went through the CU's share of the memory
  pipe (FIFO in issue order, DRAM share = GST bandwidth / active CUs, at most
  FABRIC_BYTES_PER_CYCLE; L2 hits at the fabric rate);
- the consumer wavefronts wait for tile k of every queue (the "full" barriers), pay the
  barrier instructions and, if they slept, a wake-up (LDS_LATENCY), compute the tile on
  the CU's SIMDs (shared by the resident work-groups), then release each slot, which the
  producer sees LDS_LATENCY later, and post their share of the results to the pipe.

Identical consecutive queues with the same slots move in lockstep and are modelled as one
group of `count` descriptors. A stationary queue whose slots hold all its tiles is loaded
once per resident work-group slot and kept for the work-groups that follow; one that does
not fit is streamed through its ring by every work-group, re-fetched from L2.

NoATT (mode="noatt"): the consumers load each step's tiles themselves (no ATT latency, no
slots, one buffer per queue), wait for them, synchronise (one work-group barrier), compute.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import simpy

from .params import Machine, const
from .work import STATIONARY, Config, Work, barriers, meta_bytes, queue_bytes

ROUNDS = 4  # steady rounds of work-groups simulated before the rest is extrapolated (Model.run)


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
    first: int        # index of the first queue of the run
    count: int        # identical queues moving in lockstep
    tiles: int        # tiles per work-group
    tile_bytes: int   # bytes of one tile of the whole group (count x tile x elem)
    last_bytes: int   # bytes of the last (partial) tile of the group
    slots: int
    stationary: bool
    resident: bool    # a stationary operand that fits: loaded once per resident slot

    def bytes(self, k: int) -> int:
        return self.last_bytes if k == self.tiles - 1 else self.tile_bytes


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
    extrapolated: bool = False  # later rounds of work-groups extrapolated (see Model.run)
    trace: list = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "trace"}


def occupancy(m: Machine, work: Work, cfg: Config, mode: str = "att") -> int:
    """Work-groups one CU holds at once: LDS (the metadata once, the queue blocks per
    work-group), barriers, and wavefront slots (consumers plus the producer)."""
    waves = m.max_waves // (work.consumer_wavefronts + (1 if mode == "att" else 0))
    if mode == "noatt":
        per_wg = sum(cfg.tile * q.elem_size for q in work.queues)
        return max(0, min(m.lds_bytes // per_wg, waves))
    free = m.lds_bytes - meta_bytes(len(work.queues))
    by_lds = free // max(queue_bytes(work, cfg), 1)
    by_barriers = m.barrier_limit // max(barriers(cfg), 1)
    return max(0, min(by_lds, by_barriers, waves))


class Model:
    def __init__(self, m: Machine, work: Work, cfg: Config, mode: str = "att", trace: bool = False,
                 max_occupancy: int = 0):
        self.m, self.work, self.cfg, self.mode, self.tracing = m, work, cfg, mode, trace
        cus_used = self.cus_used = min(m.cus, work.work_groups or m.cus)  # CUs that get work
        self.wgs = math.ceil((work.work_groups or m.cus) / cus_used)
        self.occ = min(occupancy(m, work, cfg, mode), self.wgs, max_occupancy or self.wgs)
        if self.occ < 1:
            raise ValueError(f"{cfg} does not fit one work-group on a CU")
        self.fabric = float(min(const("FABRIC_BYTES_PER_CYCLE"), m.cache_line * 1e9))
        self.dram_rate = min(m.dram_bytes_per_cycle / cus_used, self.fabric)
        active_pools = min(work.consumer_wavefronts, m.pools)
        self.flops_per_cycle = m.flops_per_cycle * active_pools / m.pools
        self.flops_per_byte = work.flops_per_byte  # the work-group's FLOPs spread over its bytes
        self.groups = self._groups()
        self.steps = max(g.tiles for g in self.groups)
        self.out_per_step = work.output_bytes / self.steps
        self.env = Environment()
        capacity = max(1, m.pools // active_pools)
        self.simd = simpy.Resource(self.env, capacity=capacity) if self.occ > capacity else None
        self.pipe_free = self.att_free = 0.0
        self.dram_bytes = 0.0
        self.stall_p = self.stall_c = self.barrier = self.busy = 0.0
        self.transfers, self.latency_sum = 0, 0.0
        self.in_flight, self.area, self.t_last = 0, 0.0, 0.0
        self.trace: list = []

    def _groups(self) -> list[Group]:
        w, t, out = self.work, self.cfg.tile, []
        for first, count in w.runs():
            slots = self.cfg.slots[first:first + count]
            i = first
            while i < first + count:  # split a run where slots differ
                j = i
                while j < first + count and slots[j - first] == slots[i - first]:
                    j += 1
                q, n = w.queues[i], j - i
                tiles = w.tiles(i, t)
                last = q.length - (tiles - 1) * t
                resident = q.type == STATIONARY and slots[i - first] >= tiles and self.mode == "att"
                out.append(Group(i, n, tiles, n * t * q.elem_size, n * last * q.elem_size,
                                 slots[i - first], q.type == STATIONARY, resident))
                i = j
        return out

    # ---------------------------------------------------------------- shared resources
    def _pipe(self, nbytes: float, ready: float, rate: float, dram: bool) -> float:
        """Bytes through the CU's memory pipe, FIFO in issue order; returns when done."""
        start = max(ready, self.pipe_free)
        self.pipe_free = start + nbytes / rate
        if dram:
            self.dram_bytes += nbytes
        return self.pipe_free

    def _flight(self, delta: int) -> None:
        now = self.env.now
        self.area += self.in_flight * (now - self.t_last)
        self.in_flight, self.t_last = self.in_flight + delta, now

    def _span(self, track: str, name: str, begin: float, end: float) -> None:
        if self.tracing and end > begin:
            self.trace.append((track, name, begin, end))

    # ---------------------------------------------------------------- ATT mode
    def _transfer(self, slot: int, g: Group, k: int, arrived: simpy.Store, from_l2: bool) -> None:
        m, now = self.m, self.env.now
        nbytes = g.bytes(k)
        # The CU's one ATT unit takes the group's descriptors in turn; the producer does
        # not wait for it (the descriptors queue in the unit).
        self.att_free = max(now, self.att_free) + g.count * const("ATT_DESC_CYCLES")
        lat = m.lat_att + (m.lat_l2 if from_l2 else m.lat_dram)
        done = self._pipe(nbytes, self.att_free + lat, self.fabric if from_l2 else self.dram_rate, not from_l2)
        self._flight(+1)
        self.transfers += 1
        self.latency_sum += done - now

        def land(_, g=g, k=k):
            self._flight(-1)
            self._span(f"slot {slot} ATT", f"q{g.first}" + (f"+{g.count - 1}" if g.count > 1 else "")
                       + f" tile {k}", now, done)
            arrived.put(k)
        self.env.timeout(done - now).callbacks.append(land)

    def _producer(self, slot: int, arrived, free, first_wg: bool):
        env = self.env
        for k in range(self.steps):
            for gi, g in enumerate(self.groups):
                if k >= g.tiles or (g.resident and not first_wg):
                    continue
                if not g.resident:
                    t0 = env.now
                    yield free[gi].get(1)
                    self.stall_p += env.now - t0
                    self._span(f"slot {slot} producer", "wait slot", t0, env.now)
                self._transfer(slot, g, k, arrived[gi], from_l2=not first_wg and g.stationary)

    def _consumer(self, slot: int, arrived, free, first_wg: bool):
        env = self.env
        instr = const("WAVE_INSTR_CYCLES")
        for k in range(self.steps):
            t0 = env.now
            step_bytes, queues = 0, 0
            for gi, g in enumerate(self.groups):
                if k >= g.tiles:
                    continue
                step_bytes += g.bytes(k)
                queues += g.count
                if g.resident and not first_wg:
                    continue
                yield arrived[gi].get()
            waited = env.now - t0
            self.stall_c += waited
            self._span(f"slot {slot} consumers", "wait data", t0, env.now)
            # wait + arrive instruction per queue; a wake-up if they slept
            bar = 2 * queues * instr + (const("LDS_LATENCY") if waited > 0 else 0)
            self.barrier += bar
            t1 = env.now
            yield env.timeout(bar)
            self._span(f"slot {slot} consumers", "barriers", t1, env.now)
            yield from self._compute(slot, k, step_bytes)
            for gi, g in enumerate(self.groups):
                if k < g.tiles and not g.resident:
                    env.timeout(const("LDS_LATENCY")).callbacks.append(lambda _, c=free[gi]: c.put(1))
            if self.out_per_step:
                self._pipe(self.out_per_step, env.now, self.dram_rate, True)

    def _compute(self, slot: int, k: int, step_bytes: int):
        env = self.env
        cycles = self.flops_per_byte * step_bytes / self.flops_per_cycle
        self.busy += cycles
        if self.simd is None:  # every resident work-group has SIMDs of its own
            t = env.now
            yield env.timeout(cycles)
        else:
            with self.simd.request() as req:
                yield req
                t = env.now
                yield env.timeout(cycles)
        self._span(f"slot {slot} consumers", f"compute tile {k}", t, env.now)

    def _work_group_att(self, slot: int, first_wg: bool):
        env = self.env
        arrived = [simpy.Store(env) for _ in self.groups]
        free = [simpy.Container(env, capacity=g.slots, init=g.slots) for g in self.groups]
        p = env.process(self._producer(slot, arrived, free, first_wg))
        c = env.process(self._consumer(slot, arrived, free, first_wg))
        yield p & c

    # ---------------------------------------------------------------- NoATT mode
    def _work_group_noatt(self, slot: int, first_wg: bool):
        env, m = self.env, self.m
        for k in range(self.steps):
            t0 = env.now
            step_bytes = sum(g.bytes(k) for g in self.groups if k < g.tiles)
            done = self._pipe(step_bytes, env.now + m.lat_dram, self.dram_rate, True)
            self.transfers += 1
            self.latency_sum += done - t0
            self._flight(+1)
            yield env.timeout(done - env.now)
            self._flight(-1)
            self.stall_c += env.now - t0
            self._span(f"slot {slot} consumers", "load (synchronous)", t0, env.now)
            bar = const("LDS_LATENCY")  # one work-group barrier after staging into the LDS
            self.barrier += bar
            yield env.timeout(bar)
            yield from self._compute(slot, k, step_bytes)
            if self.out_per_step:
                self._pipe(self.out_per_step, env.now, self.dram_rate, True)

    # ---------------------------------------------------------------- run
    def _resident(self, slot: int, count: int):
        body = self._work_group_att if self.mode == "att" else self._work_group_noatt
        for j in range(count):
            yield from body(slot, j == 0)
            self.finished[j] = max(self.finished.get(j, 0.0), self.env.now)

    def run(self, exact: bool = False) -> Outcome:
        """Simulate. Unless `exact`, when every resident slot has more than ROUNDS + 1
        work-groups (a round: one work-group on every slot), K full rounds are skipped so that
        ROUNDS + 1 remain (plus the uneven last round), and K times the mean time of simulated
        rounds 2..ROUNDS is added: after the first round (cold stationary operands, an empty
        pipe) and before the last (the drain) every round does the same work on the same
        resources. Start, uneven end and drain are simulated."""
        share = [self.wgs // self.occ + (1 if s < self.wgs % self.occ else 0) for s in range(self.occ)]
        skipped = 0 if exact else max(0, min(share) - (ROUNDS + 1))
        share = [n - skipped for n in share]  # keeps the uneven last round as it is
        self.finished: dict[int, float] = {}
        for slot, n in enumerate(share):
            self.env.process(self._resident(slot, n))
        self.env.run()
        self._flight(0)
        # done when the last work-group is and its results are written (pending slot
        # releases after the last tile do not count)
        end = max(max(self.finished.values()), self.pipe_free)
        scale = self.wgs / sum(share)
        if skipped:  # the skipped full rounds, at the steady per-round time (away from both ends)
            per_round = (self.finished[ROUNDS - 1] - self.finished[1]) / (ROUNDS - 2)
            end += skipped * per_round
        m = self.m
        cus_used = self.cus_used
        transfers = self.transfers * scale
        return Outcome(
            cycles=end, ns=end * 1000.0 / m.clock_mhz, occupancy=self.occ, work_groups_per_cu=self.wgs,
            dram_gbps=self.dram_bytes * scale * cus_used / end * m.clock_mhz / 1000.0 if end else 0.0,
            compute_util=self.busy * scale * self.flops_per_cycle / (m.flops_per_cycle * end) if end else 0.0,
            stall_producer=self.stall_p * scale, stall_consumer=self.stall_c * scale,
            barrier_cycles=self.barrier * scale, events=self.env.scheduled, transfers=round(transfers),
            mean_latency=self.latency_sum / self.transfers if self.transfers else 0.0,
            mean_in_flight=self.area / self.env.now if self.env.now else 0.0,
            throughput=self.transfers / self.env.now if self.env.now else 0.0,
            extrapolated=scale > 1, trace=self.trace)


def simulate(m: Machine, work: Work, cfg: Config, mode: str = "att", trace: bool = False,
             exact: bool = False, max_occupancy: int = 0) -> Outcome:
    """Run the kernel's work on one CU of `m` with configuration `cfg` (at most
    `max_occupancy` work-groups at once when given)."""
    return Model(m, work, cfg, mode, trace, max_occupancy).run(exact or trace)
