"""Pure-Python reference model of the QuCo firmware: the executable specification.

It takes the same bytes the firmware sees (a 256-byte GST and a launch record) and
returns the same answer: a status, a detail word and the LDS configuration bytes.
Arithmetic is float32 and done in the firmware's order (numpy.float32 scalars), so
the two agree bit for bit. docs/algorithm.md explains each step in prose.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..gst import abi
from ..gst.abi import Status, const

f32 = np.float32


class ConfigError(Exception):
    def __init__(self, status: Status, detail: int = 0):
        super().__init__(status, detail)
        self.status, self.detail = Status(status), detail


@dataclass
class Queue:
    length: int
    type: int
    elem_size: int
    passes: int = 1  # times a work-group streams the length (the record's 0 means 1); quco+ only


@dataclass
class Launch:
    header: dict
    queues: list[Queue]


@dataclass
class Result:
    status: Status
    detail: int = 0
    tile: int = 0
    slots: list[int] = field(default_factory=list)
    lds: bytes = b""  # header + descriptors (32 + 40 n bytes); empty on error


def floor_pow2(v: int) -> int:
    return 1 << (v.bit_length() - 1)


def check_gst(gst: bytes) -> dict:
    """Boot-time validation, in the firmware's order (the rules: gst/abi.py). Raises ConfigError."""
    bad = abi.gst_violation(gst)
    if bad is not None:
        raise ConfigError(bad.status, bad.detail)
    return abi.GST.unpack(gst)


def parse_launch(record: bytes, g: dict) -> Launch:
    """Launch-record validation, in the firmware's order (the rules: gst/abi.py's
    LAUNCH_CHECKED and QUEUE_CHECKED). Raises ConfigError."""
    h = abi.LAUNCH_HEADER.unpack(record)
    bad = abi.header_violation(h, g)
    if bad is not None:
        raise ConfigError(bad.status, bad.detail)
    queues = []
    for i in range(h["num_queues"]):
        q = abi.QUEUE.unpack(record, abi.LAUNCH_HEADER.size + abi.QUEUE.size * i)
        bad = abi.queue_violation(q, i)
        if bad is not None:
            raise ConfigError(bad.status, bad.detail)
        queues.append(Queue(q["length"], q["type"], q["elem_size"], q["passes"] or 1))
    return Launch(h, queues)


def ci_class(ci, given: int) -> int:
    """The kernel's CI class: the one the host gave (QuCo's InitQuCo passes one), else
    low below CI_LOW, high above CI_HIGH, medium in between."""
    if given != abi.CI_CLASS_NUMBER:
        return given
    if ci < f32(const("CI_LOW")):
        return abi.CI_CLASS_LOW
    if ci > f32(const("CI_HIGH")):
        return abi.CI_CLASS_HIGH
    return abi.CI_CLASS_MEDIUM


class Planner:
    """QuCo's Algorithms 2-3 for one validated launch; every quantity as the firmware has it.

    With `trace` a list, each step appends what it computed (a dict with a "step" key), so
    `quco.host.explain` can show a pick without repeating any of the arithmetic."""

    def __init__(self, g: dict, launch: Launch, trace: list | None = None):
        h = launch.header
        self.g, self.q, self.flags, self.trace = g, launch.queues, h["flags"], trace
        self.ci = f32(h["compute_intensity"])
        self.ci_class = ci_class(self.ci, h["ci_class"])
        self.ci_given = h["ci_class"] != abi.CI_CLASS_NUMBER
        clock = h["core_clock_mhz"] or g["core_clock_mhz"]
        self.clock = clock
        self.cus = h["active_cus"] or g["num_cus"]
        lds = h["lds_bytes"] or g["lds_bytes"]
        self.meta = abi.meta_bytes(len(self.q))
        self.avail = max(lds - self.meta, 0)
        # Reciprocals are taken once so the per-tile arithmetic only multiplies.
        # cpb: core cycles per byte of one CU's share of the DRAM bandwidth, at this clock
        self.cpb = f32(clock * g["num_cus"]) / f32(g["dram_bw_mbps"])
        # The GST's latencies are core cycles at its nominal clock (QuCo Table II: "cycles, CU
        # round trip"); a round trip is a time, so at a DVFS clock they scale by clock / nominal.
        lat_sum = g["lat_att_cycles"] + g["lat_l2_cycles"] + g["lat_dram_cycles"]
        self.lat = f32(lat_sum * clock // g["core_clock_mhz"])
        self.inv_cl = f32(1.0) / f32(g["cache_line_bytes"])  # exact: a power of two
        wfs = h["consumer_wavefronts"]
        # QuCo Algorithm 2: bestLatency = T / (SIMDMulsPerCycle x Wfs), no cap on Wfs
        self.inv_sched = f32(1.0) / f32(g["simd_muls_per_cycle"] * wfs)
        self.overlap = f32(min(wfs - 1, g["wavefront_pools"]))
        self.cost_const = f32(const("COST_A")) * self.cpb + f32(const("COST_B")) * self.inv_cl
        self.stream = [i for i, q in enumerate(self.q) if q.type == abi.QUEUE_STREAMING]
        self.stat = [i for i, q in enumerate(self.q) if q.type == abi.QUEUE_STATIONARY]
        self.e_tile = max(self.q[i].elem_size for i in (self.stream or range(len(self.q))))
        self.min_len = min(q.length for q in self.q)  # the length bound: two transfers per queue
        # bytes one step of the kernel moves per tile element: every streaming queue's element
        self.step_bytes = sum(self.q[i].elem_size for i in self.stream)
        self.cu_aware = not self.flags & abi.FLAG_NO_CU_AWARE
        # quco+ (not the paper's; docs/algorithm.md): slots rounded up to an integer, no CU step, the
        # ring deepened while the CU keeps its resident work-groups (neighbours)
        self.plus = bool(self.flags & abi.FLAG_QUCO_PLUS)
        if self.plus:  # quco+: a queue streamed again has its two transfers across its passes
            self.min_len = min(q.length * q.passes for q in self.q)
        self.max_pow2 = floor_pow2(g["max_slots"])

    def note(self, step: str, **values) -> None:
        if self.trace is not None:
            self.trace.append(dict(step=step, **values))

    # -- Algorithm 2: processing and memory time of one tile
    def proc_time(self, t: int):
        bs = f32(t) * self.inv_sched
        extra = bs - f32(1.0)
        if extra < f32(0.0):  # below one scheduling round nothing overlaps: no negative time
            extra = f32(0.0)
        return bs + extra * self.overlap

    def slope(self, e: int):
        """memTime cycles per element of tile: e bytes over the CU's DRAM share plus 2e bytes
        of cache-line traffic (T*E/Bandwidth + 2*T*E/CacheLineSize, per element)."""
        return f32(e) * self.cpb + f32(2 * e) * self.inv_cl

    def mem_time(self, t: int, e: int):
        return self.lat + f32(t) * self.slope(e)

    # -- Algorithm 1: weighted merit over the tile range, CI scaling, length and LDS bounds
    def merit_scan(self) -> int:
        g = self.g
        # weighted = merit x cost = (procTime x cost) / memTime, kept as a fraction: the
        # comparison cross-multiplies instead of dividing (all terms are positive).
        best_num, best_den, best_t = f32(-1.0), f32(1.0), g["min_tile_elems"]
        t = g["min_tile_elems"]
        while t <= g["max_tile_elems"]:
            cost = self.lat * f32(1.0 / t) + self.cost_const  # 1/t exact: t is a power of two
            proc, mem = self.proc_time(t), self.mem_time(t, self.e_tile)
            num = proc * cost
            better = bool(num * best_den > best_num * mem)
            self.note("tile", tile=t, proc=proc, mem=mem, cost=cost, num=num, best=better)
            if better:
                best_num, best_den, best_t = num, mem, t
            t *= 2
        return best_t

    def choose_tile(self) -> int:
        g = self.g
        t = best = self.merit_scan()
        if not self.flags & abi.FLAG_NO_CI_SCALING:
            if self.ci_class == abi.CI_CLASS_LOW and t < g["max_tile_elems"]:
                t *= 2
            elif self.ci_class == abi.CI_CLASS_HIGH and t > g["min_tile_elems"]:
                t //= 2
        self.note("ci", best=best, ci=self.ci, ci_class=self.ci_class, tile=t)
        # length bound: every queue is streamed in at least MIN_BUFFERS transfers (the last may be
        # partial), so one loads while one is used: ceil(len / t) >= MIN_BUFFERS
        scaled = t
        while t > g["min_tile_elems"] and (const("MIN_BUFFERS") - 1) * t >= self.min_len:
            t //= 2
        self.note("length", tile_in=scaled, tile=t, length=self.min_len)
        # LDS bound: the tile halves until the slots Little's law asks for fit, counting no more
        # slots than the barrier limit can give (a smaller tile would not buy them)
        scaled = t
        while t > g["min_tile_elems"] and self.bytes_needed(t, self.bound_slots(t)) > self.avail:
            t //= 2
        want = self.bound_slots(t)
        self.note("bound", tile_in=scaled, tile=t, slots=max(want.values(), default=0), avail=self.avail,
                  bytes=self.bytes_needed(t, want))
        return t

    def bytes_needed(self, t: int, slots: dict) -> int:
        """LDS bytes for streaming queues at `slots` and one slot per stationary queue."""
        total = sum(abi.lds_align(s * t * self.q[i].elem_size) for i, s in slots.items())
        return total + sum(abi.lds_align(t * self.q[i].elem_size) for i in self.stat)

    def barriers_needed(self, slots: dict) -> int:
        return const("BARRIERS_PER_SLOT") * (sum(slots.values()) + len(self.stat))

    def fits(self, t: int, slots: dict) -> bool:
        return (self.bytes_needed(t, slots) <= self.avail
                and self.barriers_needed(slots) <= self.g["barrier_limit"])

    # -- Algorithm 3
    def round_pow2(self, r) -> int:
        """roundToPowerOfTwo: the nearest power of two to r (ties up), within 1..max_slots
        (quco+: r rounded up: Little's ratio is the fewest tiles in flight that cover the memory
        time, so a ring below it starves; docs/algorithm.md)."""
        if not r >= f32(1.0):
            return 1
        n = self.g["max_slots"] if r >= f32(self.g["max_slots"]) else int(r)
        if self.plus:
            return n + 1 if n < self.g["max_slots"] and r > f32(n) else n
        p = floor_pow2(n)
        if p < self.max_pow2 and r >= f32(1.5) * f32(p):
            p *= 2
        return p

    def cu_step(self, n: int) -> int:
        """roundBasedOnCUs: n x CU_SLOT_REF / active CUs, to the nearest power of two; never
        more than n, and never below double buffering (MIN_BUFFERS) unless n already is."""
        if not self.cu_aware or self.plus:
            return n
        # in integers: the largest power of two s <= n with s <= 4r/3, r = n x REF / CUs (r
        # rounds to s or above), but not below MIN_BUFFERS
        s = n
        while s > const("MIN_BUFFERS") and 4 * n * const("CU_SLOT_REF") < 3 * s * self.cus:
            s //= 2
        return s

    def cap(self, t: int, i: int, n: int) -> int:
        """A queue streamed in ceil(length / t) transfers never fills more slots than that (the
        largest power of two within; quco+: that count times the queue's passes, since the ring
        keeps filling with the next pass's tiles)."""
        transfers = (self.q[i].length - 1) // t + 1
        if self.plus:
            return min(n, transfers * self.q[i].passes)
        return floor_pow2(min(n, transfers))

    def little(self, t: int):
        """Little's law per kernel: tiles in flight = the memTime of one step of the kernel
        (a tile of every streaming queue) over the procTime of a tile, x LITTLE_SCALE."""
        if self.flags & abi.FLAG_NO_LITTLE:
            return f32(self.g["max_slots"])
        return self.mem_time(t, self.step_bytes) * (f32(1.0) / self.proc_time(t)) * f32(const("LITTLE_SCALE"))

    def bound_slots(self, t: int) -> dict:
        """Little's slots at t, halved while the barrier limit cannot give them."""
        n = self.cu_step(self.round_pow2(self.little(t)))
        while n > 1 and self.barriers_needed({i: n for i in self.stream}) > self.g["barrier_limit"]:
            n //= 2
        return {i: n for i in self.stream}

    def little_slots(self, t: int) -> dict:
        n = self.cu_step(self.round_pow2(self.little(t)))
        return {i: n for i in self.stream}

    def residents(self, t: int, n: int) -> int:
        """Work-groups a CU holds at once when every streaming queue has n slots of t elements and
        every stationary queue one: the LDS partition over the footprint, and the barriers."""
        ring = {i: n for i in self.stream}
        return min(self.avail // self.bytes_needed(t, ring), self.g["barrier_limit"] // self.barriers_needed(ring))

    def neighbours(self, t: int, n: int) -> int:
        """quco+ only: the ring deepens, a slot at a time up to max_slots, while the CU still holds
        as many work-groups as at n slots (at least one): Little's n is the fewest tiles in flight,
        a deeper ring that takes no neighbour's place only adds tiles in flight (H100 sweep:
        ElementwiseK 8192/7 keeps two work-groups per SM and is the best, 8192/8 keeps one and runs
        +10.9%; docs/algorithm.md)."""
        if not self.plus or not self.stream:
            return n
        r0 = self.residents(t, n)
        while r0 >= 1 and n < self.g["max_slots"] and self.residents(t, n + 1) >= r0:
            n += 1
        return n

    def streaming_slots(self, t: int) -> dict:
        ratio = self.little(t)
        rounded = self.round_pow2(ratio)
        stepped = self.neighbours(t, self.cu_step(rounded))
        slots = {i: self.cap(t, i, stepped) for i in self.stream}
        self.note("little", tile=t, mem=self.mem_time(t, self.step_bytes), proc=self.proc_time(t), ratio=ratio,
                  rounded=rounded, stepped=stepped, slots=slots)
        if self.fits(t, slots):
            self.note("fit", fits=True, bytes=self.bytes_needed(t, slots), barriers=self.barriers_needed(slots))
            return slots
        low = self.ci_class == abi.CI_CLASS_LOW and not self.flags & abi.FLAG_NO_CI_SCALING
        # the fallback values are powers of two (gst/abi.py): rounding only caps them
        n = min(const("FALLBACK_SLOTS_LOW_CI") if low else const("FALLBACK_SLOTS"), self.max_pow2)
        tried = [n]
        while not self.fits(t, {i: self.cap(t, i, n) for i in self.stream}) and n > 1:
            n //= 2
            tried.append(n)
        slots = {i: self.cap(t, i, n) for i in self.stream}
        self.note("fit", fits=False, bytes=self.bytes_needed(t, slots), barriers=self.barriers_needed(slots),
                  fallback=tried)
        return slots

    def plan(self) -> tuple[int, list[int]]:
        g = self.g
        t0 = g["min_tile_elems"]
        ones = {i: 1 for i in self.stream}
        if self.barriers_needed(ones) > g["barrier_limit"]:
            raise ConfigError(Status.BARRIER_LIMIT, self.barriers_needed(ones))
        if self.bytes_needed(t0, ones) > self.avail:
            raise ConfigError(Status.LDS_NO_FIT, self.meta + self.bytes_needed(t0, ones))
        t = self.choose_tile()
        slots = self.streaming_slots(t)  # fits: the CI fallback ends at one slot, which fits
        spare = self.avail - self.bytes_needed(t, slots)
        spare_barriers = g["barrier_limit"] - self.barriers_needed(slots)
        out = [0] * len(self.q)
        for i, s in slots.items():
            out[i] = s
        if self.stat:
            # the rest of the LDS, evenly: each stationary queue already has its one slot
            n = len(self.stat)
            for i in self.stat:
                block = abi.lds_align(t * self.q[i].elem_size)
                room = 1 + min((spare // n) // block, (spare_barriers // n) // const("BARRIERS_PER_SLOT"))
                s = self.cap(t, i, self.cu_step(self.round_pow2(f32(min(room, g["max_slots"])))))
                while s > room:
                    s //= 2
                out[i] = s
                self.note("stationary", queue=i, room=room, slots=s)
        return t, out


def layout(p: Planner, tile: int, slots: list[int], generation: int) -> bytes:
    """Header and descriptors exactly as the firmware writes them at the LDS base."""
    descs, atts = [], []
    offset, barrier = p.meta, 0
    for i, q in enumerate(p.q):
        s, slot_bytes = slots[i], tile * q.elem_size
        count = const("BARRIERS_PER_SLOT") * s
        descs.append(abi.QUEUE_DESC.pack(dict(offset=offset, slot_bytes=slot_bytes, slots=s, type=q.type,
                                              elem_size=q.elem_size, barrier_base=barrier,
                                              barrier_count=count)))
        atts.append(abi.ATT_DESC.pack(dict(lds_addr=offset, box_elems=tile, slot_stride=slot_bytes,
                                           ring_slots=s, elem_size=q.elem_size, global_length=q.length,
                                           full_barrier=barrier, queue_index=i)))
        offset += abi.lds_align(s * slot_bytes)
        barrier += count
    header = abi.LDS_HEADER.pack(dict(magic=abi.LDS_MAGIC, generation=generation, num_queues=len(p.q),
                                      tile_elems=tile, meta_bytes=p.meta, used_bytes=offset,
                                      barriers_used=barrier, compute_intensity=float(p.ci)))
    # the gap from here up to meta_bytes is not part of the configuration and is not written
    return header + b"".join(descs) + b"".join(atts)


def planner(gst: bytes, record: bytes, trace: list | None = None) -> Planner:
    """A Planner for a GST and launch record; raises ConfigError as the firmware answers."""
    g = check_gst(gst)
    return Planner(g, parse_launch(record, g), trace)


def configure(gst: bytes, record: bytes, generation: int = 1) -> Result:
    """What the firmware answers for this GST and launch record.

    `generation` is the value the firmware stamps on a successful configuration
    (its previous generation plus one).
    """
    try:
        p = planner(gst, record)
        tile, slots = p.plan()
    except ConfigError as e:
        return Result(e.status, e.detail)
    return Result(Status.OK, 0, tile, slots, layout(p, tile, slots, generation))
