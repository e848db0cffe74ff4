"""Random GSTs and launch records for differential fuzzing: raw bytes, valid inputs and
near-valid ones (a valid input with one field pushed to or past its limit). Pure Python
`random`, seeded, so a campaign is reproducible; shared by bench/fuzz.py and the tests.

Every bounded field is drawn at and around its bounds as gst/abi.py declares them (`edges`):
the GST's ranges and shape rules, the launch header's ranges (with the bounds the GST sets:
active CUs, LDS bytes, queue count) and the queue's. The queues come in the shapes the
algorithm branches on (`SHAPES`): runs of identical queues of each type, one stationary
queue or several (one run of them or several runs), all stationary. `steer` then moves one
launch to a decision boundary of the model: the clock where Little's ratio crosses a power of
two or a rounding threshold, or where any input changes the model's answer."""
from __future__ import annotations

import math
import random
import struct

from ..gst import abi, tables
from ..kernel.format import pack_record

U32_EDGES = (0, 1, 2, 3, 7, 8, 63, 64, 65, 127, 128, 255, 256, 1023, 1024, 65535, 65536,
             0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)
TYPE_MAX = {"u8": 0xFF, "u16": 0xFFFF, "u32": 0xFFFFFFFF}


# ---------------------------------------------------------------- edges, from the declarations
def f32_next(x: float, toward: float) -> float:
    """The float32 next to x (a float32) toward `toward`."""
    if x == toward:
        return x
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    if x == 0:
        bits = 1 | (0x80000000 if toward < 0 else 0)
    elif (x < toward) == (x > 0):
        bits += 1
    else:
        bits -= 1
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def edges(f: abi.Field, lo: int | float | None = None, hi: int | float | None = None,
          step: int | None = None) -> tuple[list, list]:
    """(inside, outside): values at and next to the field's bounds that its rules accept,
    and those just past them (clipped to what the field's type holds). `lo`/`hi` override the
    declared bounds where the GST sets them; `step` is the spacing of allowed values (the
    field's multiple; powers of two step by doubling)."""
    if f.one_of:  # a set: its members; outside, their neighbours, twice the largest and the type's top
        near = {v + d for v in f.one_of for d in (-1, 1)} | {0, 2 * max(f.one_of), TYPE_MAX[f.ctype]}
        return list(f.one_of), sorted(near - set(f.one_of))
    lo = f.lo if lo is None else lo
    hi = f.hi if hi is None else hi
    if f.ctype == "f32":
        inside = [lo, f32_next(lo, math.inf), hi, f32_next(hi, -math.inf)] + [-0.0] * (lo == 0)
        return inside, [f32_next(lo, -math.inf), f32_next(hi, math.inf), math.nan, math.inf, -math.inf]
    lo, hi, top = int(lo), int(hi), TYPE_MAX[f.ctype]
    step = 1 if f.pow2 else step or f.multiple
    if f.pow2:
        inside, outside = [lo, 2 * lo, hi // 2, hi], [lo + 1, hi - 1, 2 * hi]  # off by one: no power of two
    else:
        inside, outside = [lo, lo + step, hi - step, hi], [lo + 1, hi - 1]  # not a multiple (step > 1)

    def refused(v):
        return not lo <= v <= hi or (f.pow2 and v & (v - 1)) or v % step
    outside += [lo - 1, hi + 1, top]
    return (sorted({v for v in inside if lo <= v <= hi}),
            sorted({v for v in outside if 0 <= v <= top and refused(v)}))


def declared(f: abi.Field, rng: random.Random, lo=None, hi=None, step=None, at_least: int | None = None):
    """A value drawn from what the field's declaration allows and nothing else (its range,
    narrowed by lo/hi/step where the GST bounds it, its shape rules, `at_least` the value of
    the field it must not be below): how a field no generator knows by name is filled in.
    A field with a single allowed value takes it without drawing."""
    lo, hi = f.lo if lo is None else lo, f.hi if hi is None else hi
    if f.equals is not None:
        return f.equals
    if f.one_of:
        return rng.choice(f.one_of)
    if f.mask is not None:
        return rng.randint(0, f.mask) & f.mask
    if f.ctype == "f32":
        return rng.uniform(lo, hi)
    lo, hi = max(int(lo), at_least or 0), int(hi)
    if f.pow2:
        a, b = max(lo, 1).bit_length() - (max(lo, 1) & (max(lo, 1) - 1) == 0), hi.bit_length() - 1
        return 1 << (a if a >= b else rng.randint(a, b))
    step = step or f.multiple
    a, b = -(-lo // step), hi // step
    return step * (a if a >= b else rng.randint(a, b))


# the constants the algorithm compares against: the values next to them take one side each
def _around(x: float) -> list[float]:
    return [f32_next(x, -math.inf), x, f32_next(x, math.inf)]


CI_THRESHOLDS = _around(abi.const("CI_LOW")) + _around(abi.const("CI_HIGH"))


def cu_thresholds() -> list[int]:
    """Active CUs where the CU step halves once more: 4 x n x CU_SLOT_REF < 3 x s x CUs flips
    between floor(4 REF n / 3s) and the next CU (n / s = 1, 2, 4, 8, 16)."""
    ref = abi.const("CU_SLOT_REF")
    return sorted({c + d for j in range(5) for c in [4 * ref * (1 << j) // 3] for d in (0, 1)})


# ---------------------------------------------------------------- GSTs
def realistic_gst_fields(rng: random.Random) -> dict:
    """A GPU-like table (every field well inside its range): typical values for the fields
    known here, and every other field abi.GST declares drawn from its declaration."""
    min_k = rng.randint(4, 9)
    fields = dict(
        magic=abi.GST_MAGIC, version=abi.GST_VERSION, size=abi.GST.size, name=b"fuzz",
        core_clock_mhz=rng.randint(100, 3000), num_cus=rng.choice([rng.randint(1, 48), rng.randint(1, 304)]),
        simd_muls_per_cycle=rng.choice([16, 32, 64, 128, 256]), wavefront_pools=rng.randint(1, 8),
        lat_att_cycles=rng.randint(0, 500), lat_l1_cycles=rng.randint(0, 300),
        lat_l2_cycles=rng.randint(0, 1000), lat_dram_cycles=rng.randint(1, 2000),
        dram_bw_mbps=rng.randint(1000, 8_000_000), cache_line_bytes=1 << rng.randint(4, 8),
        lds_bytes=256 * rng.randint(4, 1024), barrier_limit=rng.randint(2, 256),
        min_tile_elems=1 << min_k, max_tile_elems=1 << rng.randint(min_k, 14),
        max_slots=rng.randint(1, 16), max_queues=rng.randint(1, 16))
    return fill_declared(abi.GST, abi.GST_CHECKED, fields, rng)


def fill_declared(s: abi.Struct, checked, fields: dict, rng: random.Random, bounds: dict | None = None) -> dict:
    """`fields` with every field of `checked` it lacks drawn from its declaration (in `s`'s
    order; `bounds` narrows a field's (lo, hi, step)): a field added to gst/abi.py is drawn
    inside its rules without a line here."""
    for f in checked:
        if f.name not in fields:
            lo, hi, step = (bounds or {}).get(f.name, (None, None, None))
            fields[f.name] = declared(f, rng, lo, hi, step, fields.get(f.at_least) if f.at_least else None)
    return fields


valid_gst_fields = realistic_gst_fields  # the name earlier callers know

_PRESETS: dict[str, dict] = {}


def preset_fields(rng: random.Random) -> dict:
    if not _PRESETS:
        _PRESETS.update({n: tables.unpack(tables.load(n)) for n in tables.preset_names()})
    return dict(_PRESETS[rng.choice(sorted(_PRESETS))])


def valid_gst(rng: random.Random, edge_p: float = 0.06) -> dict:
    """A table the firmware accepts: a preset or a GPU-like one, each checked field at one
    of its in-range edges with probability edge_p."""
    fields = preset_fields(rng) if rng.random() < 0.3 else realistic_gst_fields(rng)
    for f in abi.GST_CHECKED:
        if rng.random() < edge_p:
            fields[f.name] = rng.choice(edges(f)[0])
    for f in abi.GST_SHAPED:  # an edge may have broken `at least`: restore it
        if f.at_least and fields[f.name] < fields[f.at_least]:
            fields[f.name], fields[f.at_least] = fields[f.at_least], fields[f.name]
    return fields


def gst(rng: random.Random) -> bytes:
    """Mostly valid tables, some with one field at or past a limit or breaking a shape rule,
    a few raw or corrupted."""
    r = rng.random()
    if r < 0.03:
        return rng.randbytes(abi.GST.size)
    fields = valid_gst(rng)
    if r < 0.04:  # the header words the checksum does not guard first
        name = rng.choice(["version", "size"])
        fields[name] = rng.choice([0, 1, 2, abi.GST.size - 1, abi.GST.size + 1, 0xFFFF]) if name == "size" \
            else rng.choice([0, abi.GST_VERSION + 1, 0xFFFF])
    elif r < 0.10:  # a shape rule broken inside the range
        f = rng.choice(abi.GST_SHAPED)
        if f.at_least and rng.random() < 0.5:
            fields[f.at_least], fields[f.name] = max(fields[f.at_least], 2 * int(f.lo)), int(f.lo)
        else:
            fields[f.name] = rng.choice([v for v in edges(f)[1] if f.lo <= v <= f.hi])
    elif r < 0.25:
        f = rng.choice(abi.GST_CHECKED)
        inside, outside = edges(f)
        fields[f.name] = rng.choice(outside + inside + [rng.choice(U32_EDGES)]) & 0xFFFFFFFF
    raw = bytearray(tables.pack(fields))
    if 0.25 <= r < 0.30:  # corrupt a byte after the checksum was computed
        raw[rng.randrange(abi.GST.size)] ^= 1 << rng.randrange(8)
    return bytes(raw)


# ---------------------------------------------------------------- launch records
def record_bounds(g: dict) -> dict:
    """(lo, hi, step) of each bounded header field on this GST: the ABI's range, or the GST's
    value where the field is at most a GST field (active CUs, LDS bytes; the queue count also
    within the record's capacity), stepped by the multiple it must be."""
    out = {}
    for f in abi.LAUNCH_HEADER.fields:
        if f.lo is None:
            continue
        hi = g.get(f.at_most, f.hi) if f.at_most else f.hi  # as the firmware: the GST's value
        hi = min(f.hi, hi) if f.capacity else hi
        out[f.name] = (f.lo, hi // f.multiple * f.multiple if f.multiple > 1 else hi, f.multiple)
    return out


def _draw_header(rng: random.Random, g: dict, edge_p: float) -> dict:
    b = record_bounds(g)
    field = abi.LAUNCH_HEADER.field

    def pick(name, typical):
        lo, hi, step = b[name]
        if rng.random() < edge_p:
            return rng.choice(edges(field(name), lo, hi, step)[0])
        return typical()

    cus = [c for c in cu_thresholds() if c <= b["active_cus"][1]]
    header = dict(
        magic=abi.LAUNCH_MAGIC, flags=rng.choice([0, 0, rng.randint(0, abi.FLAGS_ALL)]),
        compute_intensity=pick("compute_intensity", lambda: rng.choice(
            [rng.uniform(0, 10), rng.uniform(0, 1e6), rng.choice(CI_THRESHOLDS)])),
        consumer_wavefronts=pick("consumer_wavefronts", lambda: rng.choice([rng.randint(1, 64), 7])),
        ci_class=pick("ci_class", lambda: rng.choice([0, 0, 1, 2, 3])),
        reserved=rng.choice([0, 0, 0, rng.randrange(256)]),  # ignored: must change nothing
        core_clock_mhz=pick("core_clock_mhz", lambda: rng.choice(
            [0, g.get("core_clock_mhz", 1000), rng.randint(1, 10_000)])),
        active_cus=pick("active_cus", lambda: rng.choice(
            [0, rng.randint(0, b["active_cus"][1])] + cus[-1:] + cus[:1] + ([rng.choice(cus)] if cus else []))),
        lds_bytes=pick("lds_bytes", lambda: rng.choice(
            [0, b["lds_bytes"][2] * rng.randint(0, b["lds_bytes"][1] // b["lds_bytes"][2])])))
    header["num_queues"] = 0  # not drawn: pack_record counts the queues
    fill_declared(abi.LAUNCH_HEADER, abi.LAUNCH_CHECKED, header, rng, b)
    del header["num_queues"]
    return header


def _length(rng: random.Random) -> int:
    """Queue lengths at the length bound and the tile cap: around powers of two, the ABI's
    edges, or anywhere."""
    r = rng.random()
    if r < 0.4:
        return max(1, (1 << rng.randint(0, 24)) + rng.choice([-1, 0, 0, 1]))
    if r < 0.5:
        return rng.choice(edges(abi.QUEUE.field("length"))[0])
    return rng.randint(1, 100_000) if r < 0.8 else rng.randint(1, 1 << 22)


def _queue(rng: random.Random, type_: int) -> dict:
    q = dict(length=_length(rng), type=type_, elem_size=rng.choice(abi.ELEM_SIZES))
    if rng.random() < 0.6:  # passes where quco+'s cap (transfers x passes <= 16 slots) bites; else declared
        q["passes"] = rng.choice([0, 0, 1, 2, 3, rng.randint(2, 17)])
    return fill_declared(abi.QUEUE, abi.QUEUE_CHECKED, q, rng)


def _runs(rng: random.Random, type_: int, k: int, most: int) -> list[dict]:
    """k runs of identical queues of one type, each 1..most long."""
    out = []
    for _ in range(k):
        q = _queue(rng, type_)
        out += [dict(q) for _ in range(rng.randint(1, most))]
    return out


S, T = abi.QUEUE_STREAMING, abi.QUEUE_STATIONARY
SHAPES = {
    # random runs of either type, as kernel.json "count" makes them
    "runs": lambda rng: sum((_runs(rng, rng.randint(0, 1), 1, 8) for _ in range(rng.randint(1, 6))), []),
    "streaming run": lambda rng: _runs(rng, S, 1, 16),
    "streaming runs": lambda rng: _runs(rng, S, rng.randint(2, 4), 6),
    "one stationary": lambda rng: _runs(rng, S, rng.randint(1, 3), 6) + [_queue(rng, T)],
    "stationary run": lambda rng: _runs(rng, S, rng.randint(1, 2), 4) + [_queue(rng, T)] * rng.randint(2, 8),
    "stationary runs": lambda rng: _runs(rng, S, rng.randint(1, 2), 4) + _runs(rng, T, rng.randint(2, 4), 4),
    "stationary first": lambda rng: _runs(rng, T, rng.randint(1, 2), 4) + _runs(rng, S, rng.randint(1, 2), 4),
    "all stationary": lambda rng: _runs(rng, T, rng.randint(1, 3), 5),
}


def valid_record(rng: random.Random, g: dict, shape: str | None = None,
                 edge_p: float = 0.25) -> tuple[dict, list[dict]]:
    """A header with each bounded field at an in-range edge with probability edge_p, and
    queues of one of SHAPES (cut to the GST's queue count, at least one)."""
    header = _draw_header(rng, g, edge_p)
    queues = SHAPES[shape or rng.choice(sorted(SHAPES))](rng)
    n_max = max(1, record_bounds(g)["num_queues"][1])  # a raw GST's max_queues may be 0
    if rng.random() < edge_p / 2:  # the most queues the GST takes: one run of identical ones
        queues = [_queue(rng, rng.randint(0, 1))] * n_max
    if rng.random() < 0.3:  # the stationary share of a mixed launch in another order
        rng.shuffle(queues)
    return header, queues[:n_max]


def near_valid(rng: random.Random, g: dict, header: dict, queues: list[dict]) -> bytes:
    """The record with one field (header or queue) at or just past a bound the ABI declares."""
    raw = bytearray(pack_record(header, queues))
    h, q = abi.LAUNCH_HEADER, abi.QUEUE
    if rng.random() < 0.5:
        bounds = record_bounds(g)
        f = rng.choice([f for f in h.fields if f.name != "reserved"])
        if f.name in bounds:
            inside, outside = edges(f, *bounds[f.name])
            value = rng.choice(outside + inside)
        elif f.mask is not None:  # the flags: the next bit up, a high one, all, the allowed ones
            top_bit = f.mask.bit_length() - 1
            value = rng.choice([f.mask + 1, 1 << rng.randrange(top_bit, 8 * f.size), TYPE_MAX[f.ctype], f.mask])
        else:  # a magic number with one bit flipped
            value = f.equals ^ (1 << rng.randrange(8 * f.size))
        raw[h.offset(f.name):h.offset(f.name) + f.size] = struct.pack("<" + f.fmt, value)
    else:
        base = h.size + q.size * rng.randrange(abi.MAX_QUEUES)
        f = rng.choice(q.fields)
        inside, outside = edges(f)
        value = rng.choice(outside + inside + ([1 << rng.randrange(8 * f.size)] if f.hi == 0 else []))  # reserved: any bit
        raw[base + q.offset(f.name):base + q.offset(f.name) + f.size] = struct.pack("<" + f.fmt, value)
    return bytes(raw)


def record(rng: random.Random, g: dict) -> bytes:
    """A launch record for GST fields g: valid, near-valid (one field off), or raw bytes."""
    r = rng.random()
    if r < 0.05:
        return rng.randbytes(abi.LAUNCH_SIZE)
    header, queues = valid_record(rng, g)
    if r < 0.35:
        return near_valid(rng, g, header, queues)
    return pack_record(header, queues)


# ---------------------------------------------------------------- decision boundaries
def _answer(gst_raw: bytes, header: dict, queues: list[dict]):
    from . import reference
    r = reference.configure(gst_raw, pack_record(header, queues))
    return r.status, r.detail, r.tile, tuple(r.slots)


def _bisect(key, a: int, b: int, ka, kb) -> tuple[int, int]:
    """Adjacent a < b with key(a) != key(b), from a pair that already differs."""
    while b - a > 1:
        m = (a + b) // 2
        km = key(m)
        if km == ka:
            a = m
        else:
            b = m
    return a, b


def ratio_thresholds(g: dict) -> list[float]:
    """The Little's ratios the rounding branches on: 1.5 times a power of two below the
    largest power of two within max_slots (where the nearest power of two changes), the
    powers of two within max_slots (where the integer part does) and 1 (below it: one slot)."""
    top = 1 << (max(1, min(g.get("max_slots", 16), 16)).bit_length() - 1)
    return sorted({1.5 * (1 << k) for k in range(top.bit_length() - 1)} |
                  {float(1 << k) for k in range(top.bit_length())})


def ratio_boundary(rng: random.Random, gst_raw: bytes, header: dict,
                   queues: list[dict]) -> tuple[dict, dict] | None:
    """Two headers one step apart in the clock (else the consumer wavefronts) between which
    Little's ratio, at the tile the model picks, crosses one of ratio_thresholds (or the tile
    changes): (below, above). None when neither input brings the ratio to a threshold. The
    ratio grows with both (memTime's latency and DRAM share grow with the clock, procTime
    falls with more wavefronts)."""
    from . import reference
    g = tables.unpack(gst_raw)
    bounds, marks = record_bounds(g), ratio_thresholds(g)
    names = ["core_clock_mhz", "consumer_wavefronts"]
    rng.shuffle(names)
    # one input as drawn, the other moved; then with the first at its lowest (the ratio often
    # sits above every threshold with either alone)
    for name, base in [(names[0], header), (names[1], header), (names[0], {**header, names[1]: 1}),
                       (names[1], {**header, names[0]: 1})]:
        def ratio(v):
            try:
                p = reference.planner(gst_raw, pack_record({**base, name: v}, queues))
                t, _ = p.plan()
            except reference.ConfigError:
                return None, None
            return t, float(p.little(t))
        lo, hi = 1, int(bounds[name][1])
        (_, r_lo), (_, r_hi) = ratio(lo), ratio(hi)
        if r_lo is None or r_hi is None:
            continue
        between = [m for m in marks if min(r_lo, r_hi) < m <= max(r_lo, r_hi)]
        if not between:
            continue
        halves = [m for m in between if m % 1]  # 1.5 x 2^k: where the rounded slots change
        target = rng.choice(halves if halves and rng.random() < 0.7 else between)

        def key(v):
            t, r = ratio(v)
            return t, r is not None and r >= target
        a, b = _bisect(key, lo, hi, key(lo), key(hi))
        return {**base, name: a}, {**base, name: b}
    return None


def steer_ratio(rng: random.Random, gst_raw: bytes, header: dict, queues: list[dict]) -> dict | None:
    """ratio_boundary's header below the threshold (three times in four) or above it."""
    pair = ratio_boundary(rng, gst_raw, header, queues)
    return None if pair is None else pair[0] if rng.random() < 0.75 else pair[1]


def steer(rng: random.Random, gst_raw: bytes, header: dict, queues: list[dict]) -> bytes:
    """The launch moved to a decision boundary of the model: a clock where Little's ratio
    crosses a rounding point, or, for another input (active CUs, LDS bytes, consumer
    wavefronts, compute intensity, a queue's length), the value next to where the model's
    answer changes. Falls back to the launch as drawn."""
    what = rng.choice(["ratio", "ratio", "ratio", "core_clock_mhz", "core_clock_mhz", "active_cus", "lds_bytes",
                       "consumer_wavefronts", "compute_intensity", "length"])
    if what == "ratio":
        h = steer_ratio(rng, gst_raw, header, queues)
        return pack_record(h or header, queues)
    g = tables.unpack(gst_raw)
    if what == "length":
        i = rng.randrange(len(queues))
        run = [j for j, q in enumerate(queues) if q == queues[i]]  # the whole run moves

        def make(v):
            qs = [dict(q, length=v) if j in run else q for j, q in enumerate(queues)]
            return header, qs
        lo, hi = 1, rng.choice([1 << 16, 1 << 24, 0xFFFFFFFF])
    elif what == "compute_intensity":  # positive float32s order as their bit patterns
        def make(v):
            return {**header, "compute_intensity": struct.unpack("<f", struct.pack("<I", v))[0], "ci_class": 0}, queues
        lo, hi = 0, struct.unpack("<I", struct.pack("<f", 16.0))[0]
    else:
        lo, hi, step = record_bounds(g)[what]

        def make(v, step=step):
            return {**header, what: v * step}, queues
        lo, hi = max(1, lo // step), hi // step
    if hi <= lo:
        return pack_record(header, queues)

    def key(v):
        return _answer(gst_raw, *make(v))
    a, b = sorted(rng.sample(range(lo, hi + 1), 2)) if hi - lo > 2 else (lo, hi)
    ka, kb = key(a), key(b)
    if ka == kb:
        a, b = lo, hi
        ka, kb = key(a), key(b)
        if ka == kb:
            return pack_record(header, queues)
    a, b = _bisect(key, a, b, ka, kb)
    return pack_record(*make(rng.choice([a, b])))


def shaped(rng: random.Random, gst_raw: bytes, shape: str | None = None, steer_p: float = 0.5) -> bytes:
    """A valid launch of one of SHAPES on this GST, moved to a decision boundary with
    probability steer_p."""
    g = tables.unpack(gst_raw)
    header, queues = valid_record(rng, g, shape)
    if rng.random() < steer_p:
        return steer(rng, gst_raw, header, queues)
    return pack_record(header, queues)


# ---------------------------------------------------------------- the check
class Disagreement(AssertionError):
    """Firmware and model differ; `result` is the firmware's LaunchResult."""

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


def compare(dev, record: bytes):
    """Launch `record` on the device and hold the firmware to the reference model:
    same status and detail, same configuration bytes on success; on failure the whole LDS
    window and the generation are untouched. Returns the LaunchResult."""
    from . import reference  # local: keeps this module importable without numpy users
    before = dev.lds_window()
    gen_before = dev.generation
    fw = dev.launch(record)
    model = reference.configure(dev.gst, record, gen_before + 1)
    where = f"gst={dev.gst.hex()} record={record.hex()}"
    if (fw.status, fw.detail) != (model.status, model.detail):
        raise Disagreement(f"status firmware {fw.status.name}/{fw.detail} != model "
                           f"{model.status.name}/{model.detail}: {where}", fw)
    if fw.ok:
        if fw.lds != model.lds:
            raise Disagreement(f"LDS bytes differ (slots firmware {[q.slots for q in fw.queues]}, model "
                               f"{model.slots}): {where}", fw)
        after = dev.lds_window()
        n = len(model.lds)
        if after[n:] != before[n:]:
            raise Disagreement(f"firmware wrote past its configuration: {where}", fw)
    else:
        if dev.lds_window() != before or fw.generation != gen_before:
            raise Disagreement(f"failed launch changed the LDS or the generation: {where}", fw)
    return fw
