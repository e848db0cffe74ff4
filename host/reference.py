"""Pure-Python reference model of the QuCo firmware: the executable specification.

It takes the same bytes the firmware sees (a 256-byte GST and a launch record) and
returns the same answer: a status, a detail word and the LDS configuration bytes.
Arithmetic is float32 and done in the firmware's order (numpy.float32 scalars), so
the two agree bit for bit. docs/algorithm.md explains each step in prose.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from quco.gst import abi
from quco.gst.abi import Status, const

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


def gst_crc(gst: bytes) -> int:
    off = abi.GST.offset("checksum")
    return zlib.crc32(gst[:off] + b"\0\0\0\0" + gst[off + 4 : 256])


def align(n: int, a: int = abi.LDS_ALIGN) -> int:
    return (n + a - 1) & ~(a - 1)


def is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def floor_pow2(v: int) -> int:
    return 1 << (v.bit_length() - 1)


def check_gst(gst: bytes) -> dict:
    """Boot-time validation, in the firmware's order. Raises ConfigError."""
    g = abi.GST.unpack(gst)
    if g["magic"] != abi.GST_MAGIC:
        raise ConfigError(Status.GST_MAGIC)
    if g["version"] != abi.GST_VERSION or g["size"] != abi.GST.size:
        raise ConfigError(Status.GST_VERSION)
    if g["checksum"] != gst_crc(gst):
        raise ConfigError(Status.GST_CHECKSUM)
    for f in abi.GST_CHECKED:
        if not f.lo <= g[f.name] <= f.hi:
            raise ConfigError(Status.GST_FIELD, abi.GST.offset(f.name))
    shape_rules = (
        ("cache_line_bytes", is_pow2(g["cache_line_bytes"])),
        ("lds_bytes", g["lds_bytes"] % 256 == 0),
        ("min_tile_elems", is_pow2(g["min_tile_elems"])),
        ("max_tile_elems", is_pow2(g["max_tile_elems"]) and g["max_tile_elems"] >= g["min_tile_elems"]),
    )
    for name, ok in shape_rules:
        if not ok:
            raise ConfigError(Status.GST_FIELD, abi.GST.offset(name))
    return g


def parse_launch(record: bytes, g: dict) -> Launch:
    """Launch-record validation, in the firmware's order. Raises ConfigError."""
    h = abi.LAUNCH_HEADER.unpack(record)
    if h["magic"] != abi.LAUNCH_MAGIC:
        raise ConfigError(Status.RECORD_MAGIC)
    if h["flags"] & ~abi.FLAGS_ALL:
        raise ConfigError(Status.BAD_FLAGS, h["flags"])
    off = abi.LAUNCH_HEADER.offset
    ci = f32(h["compute_intensity"])
    if not (ci >= f32(0.0) and ci <= f32(1e6)):  # also rejects NaN
        raise ConfigError(Status.RECORD_FIELD, off("compute_intensity"))
    if not 1 <= h["consumer_wavefronts"] <= 64:
        raise ConfigError(Status.RECORD_FIELD, off("consumer_wavefronts"))
    if h["core_clock_mhz"] > 10_000:
        raise ConfigError(Status.RECORD_FIELD, off("core_clock_mhz"))
    if h["active_cus"] > g["num_cus"]:
        raise ConfigError(Status.RECORD_FIELD, off("active_cus"))
    if h["lds_bytes"] > g["lds_bytes"] or h["lds_bytes"] % abi.LDS_ALIGN:
        raise ConfigError(Status.RECORD_FIELD, off("lds_bytes"))
    n = h["num_queues"]
    if not 1 <= n <= min(abi.MAX_QUEUES, g["max_queues"]):
        raise ConfigError(Status.QUEUE_COUNT, n)
    queues = []
    for i in range(n):
        q = abi.QUEUE.unpack(record[32 + 8 * i : 40 + 8 * i])
        if q["type"] > abi.QUEUE_STATIONARY:
            raise ConfigError(Status.QUEUE_TYPE, i)
        if q["length"] == 0:
            raise ConfigError(Status.QUEUE_LENGTH, i)
        if q["elem_size"] not in abi.ELEM_SIZES:
            raise ConfigError(Status.ELEM_SIZE, i)
        queues.append(Queue(q["length"], q["type"], q["elem_size"]))
    return Launch(h, queues)


class Planner:
    """Algorithms 1-3 for one validated launch; every quantity as the firmware has it."""

    def __init__(self, g: dict, launch: Launch):
        h = launch.header
        self.g, self.q, self.flags = g, launch.queues, h["flags"]
        self.ci = f32(h["compute_intensity"])
        clock = h["core_clock_mhz"] or g["core_clock_mhz"]
        self.cus = h["active_cus"] or g["num_cus"]
        lds = h["lds_bytes"] or g["lds_bytes"]
        self.meta = align(abi.LDS_HEADER.size + len(self.q) * (abi.QUEUE_DESC.size + abi.ATT_DESC.size))
        self.avail = max(lds - self.meta, 0)
        # Reciprocals are taken once so the per-tile arithmetic only multiplies.
        # cpb: core cycles per byte of one CU's DRAM share, = 1 / (MB/s / MHz / CUs)
        self.cpb = f32(clock * g["num_cus"]) / f32(g["dram_bw_mbps"])
        self.lat = f32(g["lat_att_cycles"] + g["lat_l2_cycles"] + g["lat_dram_cycles"])
        self.inv_cl = f32(1.0) / f32(g["cache_line_bytes"])  # exact: a power of two
        wfs = h["consumer_wavefronts"]
        self.inv_sched = f32(1.0) / f32(g["simd_muls_per_cycle"] * min(wfs, const("WF_SCHED_CAP")))
        self.overlap = f32(min(wfs - 1, g["wavefront_pools"]))
        self.cost_const = f32(const("COST_A")) * self.cpb + f32(const("COST_B")) * self.inv_cl
        self.stream = [i for i, q in enumerate(self.q) if q.type == abi.QUEUE_STREAMING]
        self.stat = [i for i, q in enumerate(self.q) if q.type == abi.QUEUE_STATIONARY]
        self.e_tile = max(self.q[i].elem_size for i in (self.stream or range(len(self.q))))

    # -- Algorithm 2: processing and memory time of one tile
    def proc_time(self, t: int):
        bs = f32(t) * self.inv_sched
        extra = bs - f32(1.0)
        if extra < f32(0.0):
            extra = f32(0.0)
        return bs + extra * self.overlap

    def slope(self, e: int):
        """memTime cycles per element of tile: e bytes over the DRAM share plus 2e bytes
        of cache-line traffic (ACTA's T*E/BW + 2*T*E/CacheLine, per element)."""
        return f32(e) * self.cpb + f32(2 * e) * self.inv_cl

    def mem_time(self, t: int, e: int):
        return self.lat + f32(t) * self.slope(e)

    # -- Algorithm 1: weighted merit over the tile range, then CI scaling
    def choose_tile(self) -> int:
        g = self.g
        # weighted = merit x cost = (procTime x cost) / memTime, kept as a fraction: the
        # comparison cross-multiplies instead of dividing (all terms are positive).
        best_num, best_den, best_t = f32(-1.0), f32(1.0), g["min_tile_elems"]
        t = g["min_tile_elems"]
        while t <= g["max_tile_elems"]:
            cost = self.lat * f32(1.0 / t) + self.cost_const  # 1/t exact: t is a power of two
            num, den = self.proc_time(t) * cost, self.mem_time(t, self.e_tile)
            if num * best_den > best_num * den:
                best_num, best_den, best_t = num, den, t
            t *= 2
        if not self.flags & abi.FLAG_NO_CI_SCALING:
            if self.ci < f32(const("CI_LOW")) and best_t < g["max_tile_elems"]:
                best_t *= 2
            elif self.ci > f32(const("CI_HIGH")) and best_t > g["min_tile_elems"]:
                best_t //= 2
        while best_t > g["min_tile_elems"] and self.bytes_needed(
                best_t, {i: const("TILE_BOUND_SLOTS") for i in self.stream}) > self.avail:
            best_t //= 2
        return best_t

    def bytes_needed(self, t: int, slots: dict) -> int:
        """LDS bytes for streaming queues at `slots` and one slot per stationary queue."""
        total = sum(align(s * t * self.q[i].elem_size) for i, s in slots.items())
        return total + sum(align(t * self.q[i].elem_size) for i in self.stat)

    def barriers_needed(self, slots: dict) -> int:
        return const("BARRIERS_PER_SLOT") * (sum(slots.values()) + len(self.stat))

    def fits(self, t: int, slots: dict) -> bool:
        return (self.bytes_needed(t, slots) <= self.avail
                and self.barriers_needed(slots) <= self.g["barrier_limit"])

    def tiles_in(self, i: int, t: int) -> int:
        n = self.q[i].length
        return n // t + (1 if n % t else 0)

    # -- Algorithm 3: streaming slots (Little's law, CU-aware), fallback, stationary share
    def little_factor(self, t: int):
        """Little's law slots per cycle of memory time: n_streaming / procTime, scaled by
        CU_SLOT_REF / active CUs unless the CU-aware step is switched off. One division."""
        if self.flags & abi.FLAG_NO_CU_AWARE:
            return f32(len(self.stream)) / self.proc_time(t)
        return f32(len(self.stream) * const("CU_SLOT_REF")) / (self.proc_time(t) * f32(self.cus))

    def little_slots(self, i: int, t: int) -> int:
        g = self.g
        if self.flags & abi.FLAG_NO_LITTLE:
            s = g["max_slots"]
        else:
            ratio = self.mem_time(t, self.q[i].elem_size) * self.little_factor(t)
            if not ratio >= f32(1.0):
                s = 1
            elif ratio >= f32(g["max_slots"]):
                s = g["max_slots"]
            else:
                s = int(ratio)
        return min(floor_pow2(s), self.tiles_in(i, t))

    def streaming_slots(self, t: int) -> dict:
        slots = {i: self.little_slots(i, t) for i in self.stream}
        if self.fits(t, slots):
            return slots
        low = self.ci < f32(const("CI_LOW")) and not self.flags & abi.FLAG_NO_CI_SCALING
        fallback = const("FALLBACK_SLOTS_LOW_CI") if low else const("FALLBACK_SLOTS")
        slots = {i: min(s, fallback) for i, s in slots.items()}
        while not self.fits(t, slots) and any(s > 1 for s in slots.values()):
            slots = {i: max(s // 2, 1) for i, s in slots.items()}
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
        slots = self.streaming_slots(t)
        while not self.fits(t, slots):  # terminates: the minimum tile with one slot fits
            t //= 2
            slots = self.streaming_slots(t)
        spare = self.avail - self.bytes_needed(t, slots)
        spare_barriers = g["barrier_limit"] - self.barriers_needed(slots)
        out = [0] * len(self.q)
        for i, s in slots.items():
            out[i] = s
        if self.stat:
            n = len(self.stat)
            for i in self.stat:
                block = align(t * self.q[i].elem_size)
                s = 1 + (spare // n) // block
                s = min(s, 1 + (spare_barriers // n) // const("BARRIERS_PER_SLOT"))
                out[i] = min(s, g["max_slots"], self.tiles_in(i, t))
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
        offset += align(s * slot_bytes)
        barrier += count
    header = abi.LDS_HEADER.pack(dict(magic=abi.LDS_MAGIC, generation=generation, num_queues=len(p.q),
                                      tile_elems=tile, meta_bytes=p.meta, used_bytes=offset,
                                      barriers_used=barrier, compute_intensity=float(p.ci)))
    # the gap from here up to meta_bytes is not part of the configuration and is not written
    return header + b"".join(descs) + b"".join(atts)


def configure(gst: bytes, record: bytes, generation: int = 1) -> Result:
    """What the firmware answers for this GST and launch record.

    `generation` is the value the firmware stamps on a successful configuration
    (its previous generation plus one).
    """
    try:
        g = check_gst(gst)
        p = Planner(g, parse_launch(record, g))
        tile, slots = p.plan()
    except ConfigError as e:
        return Result(e.status, e.detail)
    return Result(Status.OK, 0, tile, slots, layout(p, tile, slots, generation))
