"""The QuCo ABI, declared once.

Every layout the firmware, the emulator, the host and the reference model share lives
here: the memory map, the GPU Specification Table (GST), the mailbox with its launch
record, the LDS configuration written by the firmware, the status codes and the
algorithm's calibrated constants. `quco.gst.codegen` turns this module into
`firmware/include/quco_abi.h` and `firmware/regions.ld`; nothing else restates it.
All multi-byte fields are little-endian.
"""
from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

# ---------------------------------------------------------------- memory map
@dataclass(frozen=True)
class Region:
    name: str
    base: int
    size: int
    perms: str  # subset of "rwx"
    doc: str


ROM = Region("ROM", 0x0000_0000, 8 * 1024, "rx", "firmware .text and .rodata")
DATA = Region("DATA", 0x1000_0000, 2 * 1024, "rw", ".data, .bss, config cache, stack")
GST_REGION = Region("GST", 0x2000_0000, 256, "r", "GPU Specification Table")
MAILBOX = Region("MAILBOX", 0x3000_0000, 4 * 1024, "rw", "launch record in, status out")
LDS = Region("LDS", 0x4000_0000, 256 * 1024, "rw", "LDS window; the GST says how much is real")
REGIONS = (ROM, DATA, GST_REGION, MAILBOX, LDS)

STACK_RESERVE = 512  # bytes of DATA the linker keeps free for the stack

# ---------------------------------------------------------------- struct declarations
def layout_fingerprint(s: "Struct") -> str:
    """sha256 of a layout: each field's name, type and offset, and the size (not its rules)."""
    text = ";".join(f"{f.name}:{f.ctype}@{s.offset(f.name)}" for f in s.fields) + f";size={s.size}"
    return hashlib.sha256(text.encode()).hexdigest()


def _num(x) -> str:
    """An integer field's bound as written: no exponent (4294967295, not 4.29497e+09)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class Field:
    """One field of a layout and every rule its value obeys: the firmware's checks
    (gst_violation, launch_violation and the C that codegen writes from them), the kernel
    schema's bounds, the fuzzer's edges and the messages all read these."""
    name: str
    ctype: str  # u8 u16 u32 f32 or char[N]
    doc: str
    lo: float | None = None  # allowed range, checked by firmware, model and tools
    hi: float | None = None
    # shape rules (a GST's are checked after every range; a launch record's with its range)
    pow2: bool = False            # a power of two
    multiple: int = 1             # a multiple of this
    at_least: str | None = None   # at least this other field of the same struct
    # rules of a launch record's fields, which the GPU bounds
    at_most: str | None = None    # at most this GST field's value
    zero_is: str | None = None    # 0 stands for this GST field's value ("0 = all")
    one_of: tuple = ()            # one of these values
    mask: int | None = None       # no bit outside these
    equals: int | None = None     # exactly this (a magic number)
    capacity: bool = False        # hi is the size of an array this field counts: checked even
                                  # where at_most's GST bound already implies it
    status: str = "RECORD_FIELD"  # the Status a launch breaking a rule gets (launch records)
    detail: str = "offset"        # its detail word: the field's "offset", its "value", "zero"

    @property
    def shape(self) -> str:
        """The shape rules in words ("" when there are none)."""
        rules = ["a power of two"] * self.pow2 + [f"a multiple of {self.multiple}"] * (self.multiple > 1)
        return ", ".join(rules + [f"at least {self.at_least}"] * bool(self.at_least))

    def shape_ok(self, values: dict) -> bool:
        v = values[self.name]
        return ((not self.pow2 or (v > 0 and v & (v - 1) == 0)) and v % self.multiple == 0
                and (self.at_least is None or v >= values[self.at_least]))

    @property
    def allowed(self) -> str:
        """What a launch record's field may hold, in words: `1..64`, `0..the GST's
        lds_bytes, multiple of 128`, `one of 1, 2, 4, 8`."""
        if self.equals is not None:
            return f"0x{self.equals:08x}"
        if self.mask is not None:
            return f"bits of 0x{self.mask:x}"
        if self.one_of:
            return "one of " + ", ".join(map(str, self.one_of))
        num = (lambda x: f"{x:g}") if self.ctype == "f32" else _num
        top = f"the GST's {self.at_most}" if self.at_most else num(self.hi)
        if self.capacity:
            top = f"{num(self.hi)} and at most {top}"
        return f"{num(self.lo)}..{top}" + f", multiple of {self.multiple}" * (self.multiple > 1)

    def record_ok(self, v, g: dict) -> bool:
        """Whether a launch record's value obeys every rule (g: the GST's fields)."""
        if self.equals is not None and v != self.equals or self.mask is not None and v & ~self.mask:
            return False
        if self.one_of:
            return v in self.one_of
        if self.ctype == "f32":  # compared as the firmware does, in float32 (NaN fails)
            lo, hi = (struct.unpack("<f", struct.pack("<f", b))[0] for b in (self.lo, self.hi))
            return lo <= v <= hi
        if self.lo is not None and not self.lo <= v <= self.hi:
            return False
        return (self.at_most is None or v <= g[self.at_most]) and v % self.multiple == 0

    @property
    def size(self) -> int:
        if self.ctype.startswith("char["):
            return int(self.ctype[5:-1])
        return {"u8": 1, "u16": 2, "u32": 4, "f32": 4}[self.ctype]

    @property
    def fmt(self) -> str:
        if self.ctype.startswith("char["):
            return f"{self.size}s"
        return {"u8": "B", "u16": "H", "u32": "I", "f32": "f"}[self.ctype]


@dataclass(frozen=True)
class Struct:
    """A little-endian layout. The layouts are constant, so each one is compiled once (a
    struct.Struct and the field offsets): pack and unpack do no per-field work in Python."""
    name: str
    fields: tuple[Field, ...]
    size: int  # declared total size; the tail is reserved (zero)
    doc: str

    def __post_init__(self):
        names, offsets, off = tuple(f.name for f in self.fields), {}, 0
        for f in self.fields:
            offsets[f.name], off = off, off + f.size
        fmt = "<" + "".join(f.fmt for f in self.fields) + f"{self.size - off}x"
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "fmt", fmt)
        object.__setattr__(self, "used", off)
        object.__setattr__(self, "_offsets", offsets)
        object.__setattr__(self, "codec", struct.Struct(fmt))  # the compiled layout

    def offset(self, name: str) -> int:
        return self._offsets[name]

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def pack(self, values: dict) -> bytes:
        return self.codec.pack(*[values.get(n, 0) for n in self.names])

    def unpack(self, data: bytes, offset: int = 0) -> dict:
        """The fields at data[offset:offset + size] by name."""
        return dict(zip(self.names, self.codec.unpack_from(data, offset)))


GST_MAGIC = 0x54534751  # "QGST"
GST_VERSION = 1
# The layout each GST_VERSION stands for: layout_fingerprint(GST) (names, types, offsets, size).
# A field added, moved or retyped changes the table the firmware reads: bump GST_VERSION and add
# its fingerprint here (tests/test_abi_rules.py fails until both are done).
GST_LAYOUTS = {1: "9ef3de446258a5a61a6f6046b2f9736a6d6b044a01533466ca5c20108b91530f"}
GST = Struct("gst", (
    Field("magic", "u32", 'identifies a GST: "QGST"'),
    Field("version", "u16", "layout version"),
    Field("size", "u16", "bytes covered by the checksum (256)"),
    Field("checksum", "u32", "CRC-32 (IEEE) of the 256 bytes with this field zeroed"),
    Field("core_clock_mhz", "u32", "nominal GPU core clock, MHz", 1, 10_000),
    Field("num_cus", "u32", "compute units on the GPU", 1, 1024),
    Field("simd_muls_per_cycle", "u32", "SIMD multiplies per cycle per CU", 1, 4096),
    Field("wavefront_pools", "u32", "wavefront pools (SIMDs) per CU", 1, 16),
    # The latencies are core cycles at core_clock_mhz (QuCo Table II: "cycles, CU round trip");
    # a round trip is a time, so the planner scales them by clock / core_clock_mhz under DVFS
    # (docs/algorithm.md, "latencies").
    Field("lat_att_cycles", "u32", "ATT issue latency, core cycles at core_clock_mhz", 0, 10_000),
    Field("lat_l1_cycles", "u32", "L1 round trip, core cycles at core_clock_mhz (informational)", 0, 100_000),
    Field("lat_l2_cycles", "u32", "L2 round trip, core cycles at core_clock_mhz", 0, 100_000),
    Field("lat_dram_cycles", "u32", "DRAM round trip, core cycles at core_clock_mhz", 1, 100_000),
    Field("dram_bw_mbps", "u32", "DRAM bandwidth, 10^6 bytes per second", 1, 100_000_000),
    Field("cache_line_bytes", "u32", "cache line, bytes", 16, 1024, pow2=True),
    Field("lds_bytes", "u32", "LDS per CU, bytes", 1024, 256 * 1024, multiple=256),
    Field("barrier_limit", "u32", "hardware barriers per CU usable by queues", 2, 1024),
    Field("min_tile_elems", "u32", "smallest tile, elements", 16, 65536, pow2=True),
    Field("max_tile_elems", "u32", "largest tile the ATT moves, elements", 16, 65536, pow2=True,
          at_least="min_tile_elems"),
    Field("max_slots", "u32", "most slots a queue may have", 1, 16),
    Field("max_queues", "u32", "ATT queues per CU", 1, 16),
    Field("name", "char[32]", "GPU name, NUL-padded ASCII"),
), 256, "GPU Specification Table, read-only to the firmware")

# GST fields checked against [lo, hi] at boot, in this order (the order decides which
# error a table with several bad fields reports); then the shape rules, in this order.
GST_CHECKED = tuple(f for f in GST.fields if f.lo is not None)
GST_SHAPED = tuple(f for f in GST.fields if f.shape)

MAX_QUEUES = 16
QUEUE_STREAMING, QUEUE_STATIONARY = 0, 1
ELEM_SIZES = (1, 2, 4, 8)
LDS_ALIGN = 128  # LDS blocks and partitions are multiples of this (bytes)

LAUNCH_MAGIC = 0x48434C51  # "QLCH"

# The CI class of QuCo's InitQuCo(HIGH, ...): given by the host, or derived from the number.
CI_CLASS_NUMBER, CI_CLASS_LOW, CI_CLASS_MEDIUM, CI_CLASS_HIGH = 0, 1, 2, 3
CI_CLASSES = {"low": CI_CLASS_LOW, "medium": CI_CLASS_MEDIUM, "high": CI_CLASS_HIGH}

FLAG_NO_CI_SCALING = 1 << 0  # ablation: skip the CI tile and slot scaling
FLAG_NO_LITTLE = 1 << 1      # ablation: start slots from max_slots, not Little's law
FLAG_NO_CU_AWARE = 1 << 2    # ablation: skip the CU-aware slot reduction
FLAG_NO_CACHE = 1 << 3       # always compute; do not use the configuration cache
FLAG_QUCO_PLUS = 1 << 4      # the quco+ rule set (docs/algorithm.md): integer slots, no CU step; not the paper's
FLAGS_ALL = 0x1F

LAUNCH_HEADER = Struct("launch_header", (
    Field("magic", "u32", 'identifies a launch record: "QLCH"', equals=LAUNCH_MAGIC, status="RECORD_MAGIC",
          detail="zero"),
    Field("flags", "u32", "ablation switches, FLAG_*", mask=FLAGS_ALL, status="BAD_FLAGS", detail="value"),
    Field("compute_intensity", "f32", "FLOPs per byte of global traffic", 0.0, 1e6),
    Field("consumer_wavefronts", "u16", "consumer wavefronts per work-group (QuCo: 512 work-items = 7)", 1, 64),
    Field("ci_class", "u8", "CI_CLASS_*: 0 = classify compute_intensity, 1 low, 2 medium, 3 high", 0, 3),
    Field("reserved", "u8", "zero (ignored)"),
    Field("core_clock_mhz", "u32", "current core clock (DVFS), MHz; 0 = GST clock", 0, 10_000,
          zero_is="core_clock_mhz"),
    # the partition: 0 means the whole GPU, else at most what the GST says it has
    Field("active_cus", "u32", "CUs of this partition; 0 = all", 0, 1024, at_most="num_cus", zero_is="num_cus"),
    Field("lds_bytes", "u32", "LDS of this partition, bytes; 0 = all", 0, 256 * 1024, multiple=LDS_ALIGN,
          at_most="lds_bytes", zero_is="lds_bytes"),
    Field("num_queues", "u32", "queues that follow", 1, MAX_QUEUES, at_most="max_queues", capacity=True,
          status="QUEUE_COUNT", detail="value"),
), 32, "launch record header")
QUEUE = Struct("queue", (
    Field("length", "u32", "elements one work-group streams through the queue", 1, 0xFFFFFFFF,
          status="QUEUE_LENGTH", detail="index"),
    Field("type", "u8", "QUEUE_STREAMING or QUEUE_STATIONARY", 0, 1, status="QUEUE_TYPE", detail="index"),
    Field("elem_size", "u8", "bytes per element: 1, 2, 4 or 8", 1, 8, one_of=ELEM_SIZES, status="ELEM_SIZE",
          detail="index"),
    # Was `reserved` (refused when nonzero, QUEUE_RESERVED), so a record that says 0 means what it
    # always meant. Every u16 is a valid count: the field has no rule to break (its status is never
    # answered). Only quco+ reads it (docs/algorithm.md, "passes"); the paper's rules ignore it.
    Field("passes", "u16", "times one work-group streams the queue's length (once per column of the other "
          "operand); 0 or 1 = once; read by quco+ only", 0, 0xFFFF, status="QUEUE_LENGTH", detail="index"),
), 8, "one queue of the launch record")
LAUNCH_SIZE = LAUNCH_HEADER.size + MAX_QUEUES * QUEUE.size

# The launch record's checks, in the firmware's order (the order decides which error a record
# with several bad fields reports): the header's, then each queue's (its detail is the index).
LAUNCH_CHECKED = tuple(LAUNCH_HEADER.field(n) for n in (
    "magic", "flags", "compute_intensity", "ci_class", "consumer_wavefronts", "core_clock_mhz", "active_cus",
    "lds_bytes", "num_queues"))
QUEUE_CHECKED = tuple(QUEUE.field(n) for n in ("type", "length", "elem_size", "passes"))

MAILBOX_LAYOUT = Struct("mailbox", (
    Field("doorbell", "u32", "host writes 1 to request a launch; firmware clears it"),
    Field("status", "u32", "STATUS_* of the last launch; written last"),
    Field("detail", "u32", "which field or queue an error status refers to"),
    Field("generation", "u32", "count of successful configurations; written last"),
    Field("cache_hit", "u32", "1 when the last launch reused a cached configuration"),
    Field("boot_status", "u32", "STATUS_* of the GST check at boot"),
), 64, "mailbox control words; the launch record follows at MAILBOX_RECORD")
MAILBOX_RECORD = 0x40  # offset of the launch record inside the mailbox

# ---------------------------------------------------------------- LDS configuration
LDS_MAGIC = 0x47464351  # "QCFG"
LDS_HEADER = Struct("lds_header", (
    Field("magic", "u32", '"QCFG" once a configuration is present'),
    Field("generation", "u32", "mailbox generation that wrote it; written last"),
    Field("num_queues", "u32", "queue and ATT descriptors that follow"),
    Field("tile_elems", "u32", "tile size, elements"),
    Field("meta_bytes", "u32", "header plus descriptors, rounded up to LDS_ALIGN"),
    Field("used_bytes", "u32", "end of the last queue block"),
    Field("barriers_used", "u32", "hardware barriers the queues use"),
    Field("compute_intensity", "f32", "CI the configuration was made for"),
), 32, "LDS configuration header at the LDS base")
QUEUE_DESC = Struct("queue_desc", (
    Field("offset", "u32", "LDS byte offset of the queue block"),
    Field("slot_bytes", "u32", "bytes per slot (tile x element size)"),
    Field("slots", "u16", "slots in the ring"),
    Field("type", "u8", "QUEUE_STREAMING or QUEUE_STATIONARY"),
    Field("elem_size", "u8", "bytes per element"),
    Field("barrier_base", "u16", "first barrier: full barriers, then empty barriers"),
    Field("barrier_count", "u16", "barriers used (BARRIERS_PER_SLOT x slots)"),
), 16, "queue descriptor read by the Sync Unit and the kernel")
ATT_DESC = Struct("att_desc", (
    Field("lds_addr", "u32", "LDS byte offset of slot 0"),
    Field("box_elems", "u32", "elements per transfer (the tile)"),
    Field("slot_stride", "u32", "bytes between slots"),
    Field("ring_slots", "u16", "slots the ATT cycles through"),
    Field("elem_size", "u16", "bytes per element"),
    Field("global_length", "u32", "elements the queue streams"),
    Field("full_barrier", "u16", "barrier the ATT signals for slot 0"),
    Field("queue_index", "u16", "queue this descriptor feeds"),
), 24, "ATT descriptor read by the ATT unit")



def lds_align(n: int) -> int:
    """n rounded up to LDS_ALIGN."""
    return (n + LDS_ALIGN - 1) & ~(LDS_ALIGN - 1)


def config_bytes(num_queues: int) -> int:
    """Bytes of header and descriptors a configuration of `num_queues` queues writes."""
    return LDS_HEADER.size + num_queues * (QUEUE_DESC.size + ATT_DESC.size)


def meta_bytes(num_queues: int) -> int:
    """Where the first queue block starts: the configuration rounded up to LDS_ALIGN."""
    return lds_align(config_bytes(num_queues))


# ---------------------------------------------------------------- statuses
class Status(IntEnum):
    OK = 0
    GST_MAGIC = 1        # GST magic is not "QGST"
    GST_VERSION = 2      # GST version or size unsupported
    GST_CHECKSUM = 3     # GST CRC-32 mismatch
    GST_FIELD = 4        # a GST field is out of range; detail = its byte offset
    RECORD_MAGIC = 5     # launch record magic is not "QLCH"
    RECORD_FIELD = 6     # a header field is out of range; detail = its byte offset
    QUEUE_COUNT = 7      # num_queues outside 1..min(MAX_QUEUES, GST max_queues)
    QUEUE_TYPE = 8       # detail = queue index
    QUEUE_LENGTH = 9     # zero length; detail = queue index
    ELEM_SIZE = 10       # element size not 1/2/4/8; detail = queue index
    LDS_NO_FIT = 11      # even one slot of the smallest tile per queue does not fit
    BARRIER_LIMIT = 12   # one slot per queue already needs more barriers than the GPU has
    BAD_FLAGS = 13       # unknown flag bits set; detail = the flags
    QUEUE_RESERVED = 14  # retired: a queue's reserved field was not zero (the field is now `passes`)


BOOT_STATUSES = (Status.OK, Status.GST_MAGIC, Status.GST_VERSION, Status.GST_CHECKSUM, Status.GST_FIELD)


STATUS_TEXT = {
    Status.OK: "configured",
    Status.GST_MAGIC: "GST magic is not QGST",
    Status.GST_VERSION: "GST version or size not supported",
    Status.GST_CHECKSUM: "GST checksum does not match its contents",
    Status.GST_FIELD: "GST field out of range",
    Status.RECORD_MAGIC: "launch record magic is not QLCH",
    Status.RECORD_FIELD: "launch record field out of range",
    Status.QUEUE_COUNT: "queue count out of range",
    Status.QUEUE_TYPE: "unknown queue type",
    Status.QUEUE_LENGTH: "queue length is zero",
    Status.ELEM_SIZE: "element size is not 1, 2, 4 or 8",
    Status.LDS_NO_FIT: "no configuration fits the LDS",
    Status.BARRIER_LIMIT: "queues need more barriers than the GPU has",
    Status.BAD_FLAGS: "unknown flag bits set",
    Status.QUEUE_RESERVED: "reserved field is not zero",
}

# ---------------------------------------------------------------- the boot-time GST check
def gst_crc(raw: bytes) -> int:
    """CRC-32 (IEEE) of the 256 GST bytes with the checksum field counted as zero."""
    off = GST.offset("checksum")
    return zlib.crc32(raw[:off] + bytes(4) + raw[off + 4:GST.size])


@dataclass(frozen=True)
class Violation:
    status: Status  # what the firmware answers (at boot for a GST, per launch for a record)
    detail: int     # its detail word: a field's byte offset, a value or a queue's index, else 0
    message: str    # the field, its value and what is allowed


GstViolation = Violation  # the name earlier callers know


def gst_violation(raw: bytes) -> Violation | None:
    """The first rule of the firmware's boot-time check that a 256-byte GST breaks, in the
    firmware's order (magic, version and size, CRC, each range, each shape rule); None
    when the firmware accepts it. The reference model and the GST tools both use this."""
    g = GST.unpack(raw)
    if g["magic"] != GST_MAGIC:
        return GstViolation(Status.GST_MAGIC, 0, f"magic 0x{g['magic']:08x}: expected 0x{GST_MAGIC:08x} "
                                                 '("QGST"); not a GPU Specification Table')
    if g["version"] != GST_VERSION or g["size"] != GST.size:
        return GstViolation(Status.GST_VERSION, 0, f"version {g['version']}, size {g['size']}: expected "
                                                   f"version {GST_VERSION}, size {GST.size}")
    crc = gst_crc(raw)
    if g["checksum"] != crc:
        return GstViolation(Status.GST_CHECKSUM, 0, f"checksum 0x{g['checksum']:08x}: the CRC-32 of the "
                                                    f"contents is 0x{crc:08x}")
    for f in GST_CHECKED:
        if not f.lo <= g[f.name] <= f.hi:
            return GstViolation(Status.GST_FIELD, GST.offset(f.name),
                                f"{f.name} = {g[f.name]}: out of range {f.lo:g}..{f.hi:g} ({f.doc})")
    for f in GST_SHAPED:
        if not f.shape_ok(g):
            at_least = f" = {g[f.at_least]}" if f.at_least else ""
            return GstViolation(Status.GST_FIELD, GST.offset(f.name),
                                f"{f.name} = {g[f.name]}: must be {f.shape}{at_least}, within "
                                f"{f.lo:g}..{f.hi:g} ({f.doc})")
    return None


# ---------------------------------------------------------------- the per-launch record check
def _record_violation(s: Struct, f: Field, values: dict, g: dict, index: int = 0) -> Violation | None:
    v = values[f.name]
    if f.record_ok(v, g):
        return None
    detail = {"offset": s.offset(f.name), "value": v, "index": index, "zero": 0}[f.detail]
    shown = f"0x{v:08x}" if f.equals is not None or f.mask is not None else f"{v:g}" if f.ctype == "f32" else v
    where = f"queue {index}: " if s is QUEUE else ""
    return Violation(Status[f.status], detail, f"{where}{f.name} = {shown}: expected {f.allowed} ({f.doc})")


def header_violation(h: dict, g: dict) -> Violation | None:
    """The first rule of LAUNCH_CHECKED that a launch header (its fields, h) breaks on a GST
    (its fields, g), as the firmware reports it; None when the header passes."""
    for f in LAUNCH_CHECKED:
        bad = _record_violation(LAUNCH_HEADER, f, h, g)
        if bad is not None:
            return bad
    return None


def queue_violation(q: dict, index: int) -> Violation | None:
    """The first rule of QUEUE_CHECKED that queue `index` (its fields, q) breaks; None if none."""
    for f in QUEUE_CHECKED:
        bad = _record_violation(QUEUE, f, q, {}, index)
        if bad is not None:
            return bad
    return None


def partition(h: dict, g: dict) -> dict:
    """The header's fields that may say 0, with 0 replaced by the GST value it stands for."""
    return {f.name: h[f.name] or g[f.zero_is] for f in LAUNCH_HEADER.fields if f.zero_is}


# ---------------------------------------------------------------- algorithm constants
# Named, calibrated constants of the algorithm (docs/algorithm.md gives the reasons).
CONSTANTS = {
    "COST_A": (0.0, "f", "weight of the bandwidth penalty COST_A/BW of the cost function (unpublished; none survives leave-one-GPU-out)"),
    "COST_B": (0.0, "f", "weight of the cache-line penalty COST_B/CL of the cost function"),
    "CI_LOW": (1.0, "f", "a CI below this is class low: doubles the tile, FALLBACK_SLOTS_LOW_CI"),
    "CI_HIGH": (4.0, "f", "a CI above this is class high: halves the tile"),
    "MIN_BUFFERS": (2, "i", "double buffering: tiles a queue must hold, slots the CU step keeps"),
    "LITTLE_SCALE": (0.0625, "f", "Little's law: slots per unit of memTime / procTime (fitted)"),
    "CU_SLOT_REF": (32, "i", "CU step: slots scale by CU_SLOT_REF / active CUs, never up (fitted)"),
    "FALLBACK_SLOTS_LOW_CI": (8, "i", "slots the CI fallback starts from for a low-CI kernel"),
    "FALLBACK_SLOTS": (4, "i", "slots the CI fallback starts from otherwise (medium, high)"),
    "BARRIERS_PER_SLOT": (2, "i", "a full and an empty barrier per slot"),
    "CACHE_ENTRIES": (4, "i", "configurations kept in the data-buffer cache"),
}


def const(name: str):
    return CONSTANTS[name][0]
