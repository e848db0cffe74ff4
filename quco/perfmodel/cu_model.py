"""Discrete-event model (SimPy) of one compute unit running a kernel's work-groups.

The busiest CU of the partition runs ceil(work_groups / CUs that get work) work-groups, as
many at once as its LDS, barriers and wavefront slots allow (occupancy). A work-group walks
its loop nest: `passes` passes (Matrix-Matrix: one per column of B), each moving every
taking-part queue's length in tiles; the passes fall into `phases` (Batched MM: one per
batch), each ended by a barrier that drains the queues. In each resident work-group:

- the producer wavefront walks the steps in order and, per queue, waits for a free slot
  (the slot's "empty" barrier), issues the ATT descriptor (the CU's ATT unit is busy
  att_issue cycles per descriptor; the rows of one operand share a box) and moves on; the
  tile arrives after the ATT latency plus the L2 or DRAM round trip, and after its bytes
  went through the CU's memory servers (quco.perfmodel.memory: L2 hits of re-read and
  shared data, DRAM efficiency by descriptor size and streams, the fill path);
- the consumer wavefronts wait for step k's tile of every queue (the "full" barriers), wake
  up if they slept (LDS_LATENCY), run the step's barrier code (on the CU's shared pools, and
  at least its dependent chain), compute the step on the CU's SIMDs (shared by the resident
  work-groups), then release each slot, which the producer sees LDS_LATENCY later, and post
  their share of the results.

Identical consecutive queues with the same slots move in lockstep and are modelled as one
group of `count` descriptors. A queue whose slots hold a whole pass and whose passes re-read
the same data is loaded once and kept: per work-group (its first pass), or, for a
stationary queue, per resident work-group slot for the work-groups that follow.

Ideal (mode="ideal"): ATT, and a queue whose slots hold a whole pass keeps it for the
work-group's later passes, and loading goes on through the phases' barriers (the paper's
ideal: unlimited LDS, all data fits, continuous tile loading).

NoATT (mode="noatt"): the consumer wavefronts load each step's tiles themselves (global
loads and LDS writes they issue, no ATT latency, no slots, one buffer per queue), wait for
them, synchronise (one work-group barrier), compute.
"""
from __future__ import annotations

import heapq
import math

from .dram_load import closed_loop_utilisation, idle_round_trip, loaded_dram_delay
from .memory import Pipes, queue_delay
from .params import Machine, const
from .residency import per_cu, residents
from .sim_data import Environment, Group, Outcome, Queues, queue_groups
from .work import Config, Work

ROUNDS = 4  # rounds of work-groups simulated at least before the rest is extrapolated (Model.run)
MAX_ROUNDS = 16  # at most (the resident slots start in step and take up to a dozen rounds to
                 # settle into their staggered pattern: bench/extrapolation.py)
STEADY = 2e-3  # rounds are steady when each of the last two lasts as the one two rounds before
# the totals of a run (Model.run) that grow with the work simulated: an extrapolation scales them
EXTENSIVE = ("cycles", "dram_bytes", "busy", "stall_producer", "stall_consumer", "barrier_cycles",
             "transfers", "moved", "hit_bytes")


def stores(m: Machine, work: Work, steps: int) -> int:
    """Stores a step makes, `steps` a pass: 1 when its share of the results is at least a cache
    line (streaming kernels); 0 for a reduction, which writes once at the end, spread thin over
    the steps."""
    return 1 if work.output_bytes / (work.passes * steps) >= m.cache_line else 0


def dram_streams(m: Machine, work: Work, occ: int, stores: int) -> int:
    """Concurrent sequential DRAM streams on the GPU with `occ` work-groups resident on each CU
    that gets work, each making `stores` stores a step: each reads each of its operands and
    writes its results in its own stream (the model's stream cost and fit.stream_rows count them
    so). The caller has the stores (Model, fit._step_terms): not worked out again here."""
    operands = len({work.operand(i) for i in range(len(work.queues))})
    return min(m.cus, work.work_groups or m.cus) * occ * (operands + stores)


class Model:
    """The busiest CU running its share of the grid (the module's docstring): build it, `run`
    it, and `outcome` turns the run's totals into an Outcome."""

    def __init__(self, m: Machine, work: Work, cfg: Config, mode: str = "att", trace: bool = False,
                 max_occupancy: int = 0, passes: int = 0):
        self.m, self.work, self.cfg, self.mode, self.tracing = m, work, cfg, mode, trace
        self.cus_used = min(m.cus, work.work_groups or m.cus)  # CUs that get work
        self.wgs = per_cu(m, work.work_groups or m.cus)
        self.occ = residents(m, work, cfg, mode, max_occupancy)
        if self.occ < 1:
            raise ValueError(f"{cfg} does not fit one work-group on a CU")
        # DRAM and L2 are shared by the whole GPU: the busiest CU gets the share of its part of
        # the grid (wgs of work_groups), as many CUs' worth as there are whole such parts
        self.share_cus = (work.work_groups or m.cus) / self.wgs
        active_pools = min(work.consumer_wavefronts, m.pools)
        self.active_pools = active_pools
        self.flops_per_cycle = m.flops_per_cycle * active_pools / m.pools
        self.flops_per_byte = work.flops_per_byte  # the work-group's FLOPs spread over what it moves
        self.passes = passes or work.passes       # passes simulated (fewer when extrapolated)
        self.phase_len = work.passes // work.phases
        self.groups = queue_groups(m, work, cfg, mode, self.cus_used * self.occ)
        # the ATT unit's time per tile of each group (its descriptors x issue cycles)
        self.att_cost = {g.first: g.descriptors(m.att_box_rows) * m.att_issue for g in self.groups}
        self.steps = max(g.tiles for g in self.groups)
        total_steps = work.passes * self.steps
        self.out_per_step = work.output_bytes / total_steps
        self.env = Environment()
        capacity = max(1, m.pools // active_pools)
        # the CU's SIMD servers, first come first served: each one's next free time (a heap).
        # A request's service time is known when it is made, so its start is the earliest free
        # server's time (the FIFO multi-server recursion), no queue of events needed
        self.simd = [0.0] * capacity if self.occ > capacity else None
        self.att_free = 0.0   # the CU's ATT unit, busy m.att_issue per descriptor
        # the CU's limit on bytes in flight on the path this mode's loads take (the ATT's, or the
        # vector memory path of the wavefronts' own loads), and its outstanding requests: (when its
        # entry frees, bytes) of the transfers issued and not yet in, earliest first, and their bytes
        self.inflight_cap = m.load_inflight if mode == "noatt" else m.att_inflight
        # the wavefronts' own loads hold their entry (the L1's) only from the L1 to its response:
        # it is free load_release cycles (the CU's own part of the round trip) before the data is in
        self.release = m.load_release if mode == "noatt" else 0.0
        self.pending: list = []
        self.pending_bytes = self.admitted = 0.0
        self.stores = stores(m, work, self.steps)
        # interleaved DRAM streams cost the DRAM row-buffer locality, dram_stream_cost of its rate each
        streams = dram_streams(m, work, self.occ, self.stores)
        self.pipes = Pipes.of(m, self.share_cus, 1.0 / (1.0 + m.dram_stream_cost * streams))
        # latency under load from the simulated utilisation (dram_queue_mode 2; not in the ideal
        # run): the DRAM share then keeps its service intervals, and _fetch reads them over the
        # idle round trip `queue_r0` (0: off, one test a transfer)
        self.pipes.track = m.dram_queue_mode == 2 and mode != "ideal"
        self.queue_r0 = idle_round_trip(m, mode) if self.pipes.track else 0.0
        # contiguous bytes one request brings from DRAM: an ATT descriptor moves a whole tile;
        # NoATT's loads are wavefront instructions of NOATT_BYTES_PER_INSTR bytes at most
        self.request_bytes = cfg.tile * work.queues[0].elem_size
        if mode == "noatt":
            self.request_bytes = min(self.request_bytes, const("NOATT_BYTES_PER_INSTR"))
        self.moved = self.hit_bytes = 0.0
        self.stall_p = self.stall_c = self.barrier = self.busy = 0.0
        self.transfers, self.latency_sum = 0, 0.0
        self.trace: list = []
        self._plans: dict = {}
        # latency under load (dram_queue_mode 1: from the configuration's bytes in flight, once)
        # (not in the ideal run: its slots hold whole passes, cut in a step window, and the bound's
        # DRAM is as ideal as its LDS)
        self.lat_dram = m.lat_dram + (loaded_dram_delay(self) if m.dram_queue_mode == 1 and mode != "ideal" else 0.0)
        if m.dram_queue_mode in (3, 4) and mode != "ideal":  # (evaluated, not shipped: docs/perf-model-not-shipped.md)
            self.pipes.dram_rate *= closed_loop_utilisation(self)
        # the per-stage cost: before its first transfer a work-group sets up each stage of its
        # pipeline (the deepest queue's slots: a barrier initialised, later invalidated, a
        # prologue iteration), stage_instr instructions a wavefront each, on the CU's pools
        # (where the barrier code runs there: code_on_pools)
        self.setup = (m.code_on_pools * m.stage_instr * max(cfg.slots) * work.consumer_wavefronts
                      * m.wave_instr / active_pools) if mode == "att" else 0.0

    # ---------------------------------------------------------------- shared resources
    def _fetch(self, nbytes: float, hit: float, issue: float, latency: float, whole: bool = False) -> tuple[float, float]:
        """A tile's bytes through the CU's memory servers after its round trip: (when its last
        request left the CU, when its last byte is in). Under a limit on bytes in flight
        (inflight_cap) a tile larger than the limit goes in parts of at most the limit, each
        part once the earlier ones leave room (_admit). `whole`: see _arrival."""
        dram = self.lat_dram
        if self.queue_r0 and hit < 1.0:
            # latency under load from the DRAM share's utilisation over the last idle round trip
            r0 = self.queue_r0
            dram += queue_delay(self.m.dram_queue_service, r0, self.pipes.utilisation(issue, r0))
        self.moved += nbytes
        self.hit_bytes += nbytes * hit
        whole = whole and 0.0 < hit < 1.0
        cap = self.inflight_cap
        if not cap:
            return issue, self._arrival(nbytes, hit, issue, latency, dram, whole)
        done, left = issue, nbytes
        while left > 0:
            part = min(left, cap)
            issue = self._admit(part, issue)
            arrival = self._arrival(part, hit, issue, latency, dram, whole)
            heapq.heappush(self.pending, (max(issue, arrival - self.release), part))
            self.pending_bytes += part
            done, left = max(done, arrival), left - part
        return issue, done

    def _arrival(self, nbytes: float, hit: float, issue: float, latency: float, dram: float, whole: bool) -> float:
        """When the last of `nbytes` issued at `issue` is in: after the path's `latency` and an L2
        round trip if every byte hits, else a DRAM round trip (`dram`): a tile with some of its
        lines in the L2 arrives with its last line. A shared operand's tile (`whole`) is found
        whole in the L2 (another work-group brought it) or brought whole from DRAM by this one:
        its expected arrival mixes the two."""
        if whole:
            t_hit = self.pipes.transfer(nbytes * hit, 1.0, issue + latency + self.m.lat_l2, self.request_bytes)
            t_miss = self.pipes.transfer(nbytes * (1.0 - hit), 0.0, issue + latency + dram, self.request_bytes)
            return hit * t_hit + (1.0 - hit) * t_miss
        lat = latency + (self.m.lat_l2 if hit >= 1.0 else dram)
        return self.pipes.transfer(nbytes, hit, issue + lat, self.request_bytes)

    def _admit(self, nbytes: float, t: float) -> float:
        """When a request of `nbytes` (at most the limit) made at `t` may leave the CU: the CU
        tracks each outstanding cache-line request in an entry (an MSHR, a reorder-buffer slot),
        inflight_cap's worth at most, so past it requests wait, in the order made, until
        earlier transfers are in and free theirs, earliest first."""
        pending = self.pending
        t = max(t, self.admitted)  # in order: a request does not overtake one held before it
        while pending and (pending[0][0] <= t or self.pending_bytes + nbytes > self.inflight_cap):
            done, b = heapq.heappop(pending)
            self.pending_bytes -= b
            t = max(t, done)
        self.admitted = t
        return t

    def _span(self, slot: int, kind: str, name, begin: float, end: float) -> None:
        """A span of the trace (only when tracing: names are built then); `name` may be a
        function that builds it."""
        if self.tracing and end > begin:
            self.trace.append((f"slot {slot} {kind}", name() if callable(name) else name, begin, end))

    def _walk(self, first_wg: bool) -> list:
        """The work-group's steps, worked out once per model: (pass, tile index, whether a phase
        ends after it, bytes and queues the consumers use, and the loads: (group index, group,
        bytes, L2 hit fraction) of the tiles not already in the LDS)."""
        key = first_wg
        if key not in self._plans:
            plan = []
            for p in range(self.passes):
                for k in range(self.steps):
                    part = [(gi, g) for gi, g in enumerate(self.groups) if k < g.tiles and g.in_pass(p)]
                    plan.append((p, k, k == self.steps - 1 and (p + 1) % self.phase_len == 0 and p + 1 < self.passes,
                                 sum(g.bytes(k) for _, g in part),
                                 sum(g.descriptors(self.m.att_box_rows) for _, g in part),
                                 tuple((gi, g, g.bytes(k), g.hit(p)) for gi, g in part if not g.skipped(p, first_wg))))
            self._plans[key] = plan
        return self._plans[key]

    # ---------------------------------------------------------------- ATT mode
    # A transfer's arrival time is known when it is issued, and a slot's release time when
    # its consumers finish, so the two wavefronts exchange times through lists and wake
    # each other with an event only when one is ahead of the other (few events per step).
    def _issue(self, slot: int, g: Group, k: int, nbytes: float, hit: float, share: float = 1.0) -> float:
        """Hand `nbytes` of group g's tile k (`share` of its descriptors) to the ATT; returns
        when the last byte is in."""
        now = self.env.now
        # The CU's one ATT unit takes the group's descriptors in turn; the producer does
        # not wait for it (the descriptors queue in the unit).
        # Past the CU's limit on bytes in flight the unit holds the descriptor, and those
        # behind it, until earlier tiles are in (_admit). A shared operand's tile mixes its L2 and
        # DRAM round trips in serial steps only (in every step: evaluated, not shipped, in-step
        # sharers wait on the pending miss; docs/perf-model-not-shipped.md, "A shared operand's
        # tile, whole, in every step")
        self.att_free, done = self._fetch(nbytes, hit, max(now, self.att_free) + self.att_cost[g.first] * share,
                                          self.m.lat_att, whole=g.shared and self.cfg.serial)
        self.transfers += 1
        self.latency_sum += done - now
        if self.tracing:
            self._span(slot, "ATT", lambda: f"q{g.first}" + (f"+{g.count - 1}" if g.count > 1 else "") + f" tile {k}",
                       now, done)
        return done

    def _producer(self, slot: int, wg: Queues, first_wg: bool):
        env = self.env
        issued = [0] * len(self.groups)
        for p, k, phase_end, _, _, loads in self._walk(first_wg):
            for gi, g, nbytes, hit in loads:
                need = issued[gi] - g.slots  # the release that frees this tile's slot
                if need >= 0:
                    t0 = env.now
                    while len(wg.released[gi]) <= need:
                        wg.producer_wait[gi] = env.event()
                        yield wg.producer_wait[gi]
                    if wg.released[gi][need] > env.now:
                        yield env.timeout(wg.released[gi][need] - env.now)
                    self.stall_p += env.now - t0
                    self._span(slot, "producer", "wait slot", t0, env.now)
                if self.cfg.serial:
                    # a loop that is not pipelined (Triton's 1 stage) loads one operand at a time:
                    # each load is issued once the one before it is in (Config.serial)
                    for n in g.operands or (g.count,):
                        arrival = self._issue(slot, g, k, nbytes * n / g.count, hit, n / g.count)
                        if arrival > env.now:
                            yield env.timeout(arrival - env.now)
                else:
                    arrival = self._issue(slot, g, k, nbytes, hit)
                wg.arrivals[gi].append(arrival)
                issued[gi] += 1
                wg.wake(wg.consumer_wait, gi)
            # the next phase's tiles wait for the drain barrier, except in the ideal run: with a
            # slot for every tile nothing is reused, so loading goes on through it
            if phase_end and self.mode != "ideal":
                t0 = env.now
                yield wg.drained.get()
                self._span(slot, "producer", "wait drain", t0, env.now)

    def _consumer(self, slot: int, wg: Queues, first_wg: bool):
        env = self.env
        lds, m = const("LDS_LATENCY"), self.m
        waves = self.work.consumer_wavefronts
        used = [0] * len(self.groups)
        # the stage set-up runs on the pools while the first tiles are on their way
        yield from self._compute(slot, 0, 0.0, code=self.setup)
        for p, k, phase_end, step_bytes, descs, loads in self._walk(first_wg):
            t0 = ready = env.now
            for gi, _, _, _ in loads:
                while len(wg.arrivals[gi]) <= used[gi]:
                    wg.consumer_wait[gi] = env.event()
                    yield wg.consumer_wait[gi]
                ready = max(ready, wg.arrivals[gi][used[gi]])
                used[gi] += 1
            if ready > env.now:
                yield env.timeout(ready - env.now)
            waited = env.now - t0
            self.stall_c += waited
            self._span(slot, "consumers", "wait data", t0, env.now)
            # the completion cost: every consumer wavefront runs the step's barrier code (a wait
            # and an arrive per descriptor, the loop, the store) on the CU's pools, which the
            # resident work-groups share; a wake-up if they slept
            # (throughput); each wavefront's instructions depend on each other, so the step
            # takes at least instructions x dep_instr however idle the pools are (latency)
            instrs = m.step_instr + m.queue_instr * descs + m.store_instr * self.stores
            wake = lds if waited > 0 else 0.0
            t_code = env.now + wake
            flops = self.flops_per_byte * step_bytes / self.flops_per_cycle
            # (GCN issues the barrier code's scalar and LDS instructions beside the VALU's, so
            # there only its chain counts: code_on_pools 0)
            yield from self._compute(slot, k, flops, wake,
                                     m.code_on_pools * instrs * waves * m.wave_instr / self.active_pools,
                                     until=t_code + instrs * m.dep_instr + flops)
            for gi, _, _, _ in loads:  # the producer sees the slot free one LDS round trip later
                wg.released[gi].append(env.now + lds)
                wg.wake(wg.producer_wait, gi, lds)
            if self.out_per_step:
                self.pipes.write(self.out_per_step, env.now)
            if phase_end:  # every wavefront of the work-group meets, then the producer goes on
                yield from self._compute(slot, k, 0.0, lds)
                if self.mode != "ideal":
                    wg.drained.put(p)

    def _compute(self, slot: int, k: int, cycles: float, barrier: float = 0.0, code: float = 0.0,
                 until: float = 0.0):
        """`barrier` cycles of synchronisation, then `code` cycles of barrier code and `cycles`
        of compute on the CU's SIMDs (shared by the resident work-groups when they do not each
        have their own): one server, so the two cannot overtake each other. Then, until the
        time `until` (the step's chain of dependent instructions), the barrier code's latency.
        Every time is known once the SIMDs are asked for, so one timeout covers the rest."""
        env = self.env
        self.barrier += barrier + code
        self.busy += cycles
        cycles += code
        t = env.now
        if self.simd is None or not cycles:  # every resident work-group has SIMDs of its own
            self._span(slot, "consumers", "barriers", t, t + barrier)
            t += barrier
        else:
            if barrier:  # the SIMDs serve requests in the order they are made: after it
                yield env.timeout(barrier)
                self._span(slot, "consumers", "barriers", t, env.now)
            t = max(env.now, heapq.heappop(self.simd))
            heapq.heappush(self.simd, t + cycles)
        end = t + cycles
        if cycles and self.tracing:
            self._span(slot, "consumers", lambda: f"compute tile {k}", t, end)
        if until > end:
            self.barrier += until - end
            self._span(slot, "consumers", "barrier code", end, until)
            end = until
        if end > env.now:
            yield env.timeout(end - env.now)

    def _work_group_att(self, slot: int, first_wg: bool):
        wg = Queues(self.env, len(self.groups))
        p = self.env.process(self._producer(slot, wg, first_wg))
        c = self.env.process(self._consumer(slot, wg, first_wg))
        yield p & c

    # ---------------------------------------------------------------- NoATT mode
    def _work_group_noatt(self, slot: int, first_wg: bool):
        env = self.env
        per_instr = const("NOATT_BYTES_PER_INSTR")
        for p, k, phase_end, step_bytes, _, loads in self._walk(first_wg):
            t0 = env.now
            parts = [(b, h) for _, _, b, h in loads]
            # the consumers issue the loads (and, once in, the LDS writes): SIMD time
            staging = 2 * math.ceil(step_bytes / per_instr) * self.m.wave_instr / self.active_pools
            yield from self._compute(slot, k, staging)
            issue = env.now
            # each load waits for room under the CU's limit on bytes in flight (_admit); a shared
            # operand's tile arrives with its last line, as in a pipelined ATT step (_issue)
            done = max(self._fetch(b, h, issue, 0.0)[1] for b, h in parts)
            self.transfers += 1
            self.latency_sum += done - issue
            yield env.timeout(done - env.now)
            self.stall_c += env.now - issue
            self._span(slot, "consumers", "load (synchronous)", t0, env.now)
            # one work-group barrier after staging into the LDS, then the step's compute
            yield from self._compute(slot, k, self.flops_per_byte * step_bytes / self.flops_per_cycle,
                                     const("LDS_LATENCY"))
            if self.out_per_step:
                self.pipes.write(self.out_per_step, env.now)

    # ---------------------------------------------------------------- run
    def _resident(self, slot: int):
        body = self._work_group_noatt if self.mode == "noatt" else self._work_group_att
        j = 0
        while j < self.share[slot]:  # (shortened when the rounds are found steady)
            if j and self.m.turnover:  # the slot's last work-group retires, the next is launched
                yield self.env.timeout(self.m.turnover)
            self.started[slot] = j + 1
            yield from body(slot, j == 0)
            self.finished[j] = max(self.finished.get(j, 0.0), self.env.now)
            self.done[j] = self.done.get(j, 0) + 1
            if self.done[j] == self.occ and self.per_round is None:  # round j is complete
                self._steady(j)
            j += 1

    def _steady(self, j: int) -> None:
        """After round j: when the rounds are steady (each of the last two lasts as the one
        two rounds before within STEADY: a pattern of period 1 or 2), or after MAX_ROUNDS,
        skip the full rounds that would follow but one (and the uneven last round), to be
        added back at the mean time of the last two rounds (of the last four at MAX_ROUNDS:
        rounds that keep drifting, averaged)."""
        # one more full round before the uneven last (past any a slot has started already)
        left = min(self.share) - max(self.started) - 1
        if j < ROUNDS or left <= 0:
            if left <= 0:
                self.per_round = 0.0  # nothing left to skip
            return
        f = self.finished
        d = [f[i] - f[i - 1] for i in range(j - 3, j + 1)]
        steady = all(abs(d[i] - d[i - 2]) <= STEADY * d[i] for i in (2, 3))
        if not steady and j + 1 < MAX_ROUNDS:
            return
        self.per_round = (d[2] + d[3]) / 2 if steady else sum(d) / 4
        self.skipped = left
        self.share = [n - left for n in self.share]

    def run(self, exact: bool = False) -> dict:
        """Simulate; returns the run's totals (`outcome` turns them into an Outcome). Unless
        `exact`, once the rounds (a round: one work-group on every resident slot) are steady
        (`_steady`: after the first rounds, from a cold start with every slot in step, until
        the slots settle into their staggered pattern), the full rounds but the next one are
        skipped and added back at the steady per-round time; the next round and the uneven
        last round are simulated (the drain)."""
        self.share = [self.wgs // self.occ + (1 if s < self.wgs % self.occ else 0) for s in range(self.occ)]
        self.finished: dict[int, float] = {}
        self.done: dict[int, int] = {}
        self.started = [0] * self.occ
        self.per_round, self.skipped = (0.0 if exact else None), 0
        for slot in range(self.occ):
            self.env.process(self._resident(slot))
        self.env.run()
        # done when the last work-group is and its results are written (pending slot
        # releases after the last tile do not count)
        end = max(max(self.finished.values()), self.pipes.free)
        scale = self.wgs / sum(self.share)
        end += self.skipped * (self.per_round or 0.0)  # the skipped full rounds
        return {"cycles": end, "dram_bytes": self.pipes.dram_bytes * scale, "busy": self.busy * scale,
                "stall_producer": self.stall_p * scale, "stall_consumer": self.stall_c * scale,
                "barrier_cycles": self.barrier * scale, "transfers": self.transfers * scale,
                "moved": self.moved * scale, "hit_bytes": self.hit_bytes * scale,
                "events": self.env.scheduled, "mean_latency": self.latency_sum / self.transfers if self.transfers else 0.0,
                # every transfer is in flight from issue to arrival: the time integral of
                # transfers in flight is the sum of their latencies
                "mean_in_flight": self.latency_sum / self.env.now if self.env.now else 0.0,
                "throughput": self.transfers / self.env.now if self.env.now else 0.0,
                "extrapolated": scale > 1}

    def outcome(self, t: dict) -> Outcome:
        m, w = self.m, self.work
        end = t["cycles"] + m.launch  # the launch before the first work-group starts
        if w.split_k > 1:  # the reduction after the grid reads every partial result back
            partials = (w.work_groups or m.cus) * w.output_bytes
            end += m.lat_dram + (1 + 1 / w.split_k) * partials / m.dram_bytes_per_cycle
        return Outcome(
            cycles=end, ns=end * 1000.0 / m.clock_mhz, occupancy=self.occ, work_groups_per_cu=self.wgs,
            dram_gbps=t["dram_bytes"] * self.share_cus / end * m.clock_mhz / 1000.0 if end else 0.0,
            compute_util=t["busy"] * self.flops_per_cycle / (m.flops_per_cycle * end) if end else 0.0,
            stall_producer=t["stall_producer"], stall_consumer=t["stall_consumer"],
            barrier_cycles=t["barrier_cycles"], events=t["events"], transfers=round(t["transfers"]),
            mean_latency=t["mean_latency"], mean_in_flight=t["mean_in_flight"], throughput=t["throughput"],
            extrapolated=t["extrapolated"], l2_hit=t["hit_bytes"] / t["moved"] if t["moved"] else 0.0,
            trace=self.trace)
