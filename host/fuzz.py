"""Random GSTs and launch records for differential fuzzing: raw bytes, valid inputs and
near-valid ones (a valid input with one field pushed to or past its limit). Pure Python
`random`, seeded, so a campaign is reproducible; shared by bench/fuzz.py and the tests."""
from __future__ import annotations

import random
import struct

from ..gst import abi, tables
from .device import pack_record

U32_EDGES = (0, 1, 2, 3, 7, 8, 63, 64, 65, 127, 128, 255, 256, 1023, 1024, 65535, 65536,
             0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)
CI_EDGES = (0.0, -0.0, 1e-30, 0.25, 1 / 6, 0.999, 1.0, 3.99, 4.0, 4.01, 97.5, 1e6, 1.0000001e6,
            -1.0, float("inf"), float("-inf"), float("nan"))


def valid_gst_fields(rng: random.Random) -> dict:
    min_k = rng.randint(4, 9)
    return dict(
        magic=abi.GST_MAGIC, version=abi.GST_VERSION, size=abi.GST.size, name=b"fuzz",
        core_clock_mhz=rng.randint(100, 3000), num_cus=rng.randint(1, 304),
        simd_muls_per_cycle=rng.choice([16, 32, 64, 128, 256]), wavefront_pools=rng.randint(1, 8),
        lat_att_cycles=rng.randint(0, 500), lat_l1_cycles=rng.randint(0, 300),
        lat_l2_cycles=rng.randint(0, 1000), lat_dram_cycles=rng.randint(1, 2000),
        dram_bw_mbps=rng.randint(1000, 8_000_000), cache_line_bytes=1 << rng.randint(4, 8),
        lds_bytes=256 * rng.randint(4, 1024), barrier_limit=rng.randint(2, 256),
        min_tile_elems=1 << min_k, max_tile_elems=1 << rng.randint(min_k, 14),
        max_slots=rng.randint(1, 16), max_queues=rng.randint(1, 16))


def gst(rng: random.Random) -> bytes:
    """Mostly valid tables, some with one field at or past a limit, a few raw or corrupted."""
    r = rng.random()
    if r < 0.03:
        return rng.randbytes(abi.GST.size)
    fields = valid_gst_fields(rng)
    if r < 0.25:
        f = rng.choice(abi.GST_CHECKED)
        fields[f.name] = rng.choice([int(f.lo) - 1 if f.lo else 0, int(f.lo), int(f.hi), int(f.hi) + 1,
                                     rng.choice(U32_EDGES)]) & 0xFFFFFFFF
    raw = bytearray(tables.pack(fields))
    if 0.25 <= r < 0.30:  # corrupt a byte after the checksum was computed
        raw[rng.randrange(abi.GST.size)] ^= 1 << rng.randrange(8)
    return bytes(raw)


def valid_record(rng: random.Random, g: dict) -> tuple[dict, list[dict]]:
    n = rng.randint(1, max(1, min(16, g.get("max_queues", 16))))
    header = dict(magic=abi.LAUNCH_MAGIC, flags=rng.randint(0, abi.FLAGS_ALL),
                  compute_intensity=rng.choice([rng.uniform(0, 10), rng.uniform(0, 1e6),
                                                rng.choice(CI_EDGES[:12])]),
                  consumer_wavefronts=rng.randint(1, 64), ci_class=rng.choice([0, 0, 1, 2, 3]),
                  core_clock_mhz=rng.choice([0, rng.randint(1, 10_000)]),
                  active_cus=rng.randint(0, max(0, min(g.get("num_cus", 64), 1024))),
                  lds_bytes=rng.choice([0, 128 * rng.randint(0, max(0, g.get("lds_bytes", 65536)) // 128)]))
    queues, runs = [], 0
    while len(queues) < n:  # runs of identical queues, as kernel.json "count" makes them
        q = dict(length=rng.choice([rng.randint(1, 100_000), rng.choice(U32_EDGES[1:])]),
                 type=rng.randint(0, 1), elem_size=rng.choice(abi.ELEM_SIZES))
        queues += [dict(q) for _ in range(min(rng.randint(1, 8), n - len(queues)))]
        runs += 1
    return header, queues


def record(rng: random.Random, g: dict) -> bytes:
    """A launch record for GST fields g: valid, near-valid (one field off), or raw bytes."""
    r = rng.random()
    if r < 0.05:
        return rng.randbytes(abi.LAUNCH_SIZE)
    header, queues = valid_record(rng, g)
    raw = bytearray(pack_record(header, queues))
    if r < 0.35:
        what = rng.random()
        if what < 0.4:  # a header word
            off = 4 * rng.randrange(abi.LAUNCH_HEADER.size // 4)
            if off == abi.LAUNCH_HEADER.offset("compute_intensity"):
                raw[off:off + 4] = struct.pack("<f", rng.choice(CI_EDGES))
            elif off == abi.LAUNCH_HEADER.offset("consumer_wavefronts") and rng.random() < 0.5:
                raw[abi.LAUNCH_HEADER.offset("ci_class")] = rng.choice([0, 1, 2, 3, 4, 255])
            else:
                raw[off:off + 4] = rng.choice(U32_EDGES).to_bytes(4, "little")
        else:  # a queue field
            i = rng.randrange(16)
            field = rng.choice(["length", "type", "elem", "reserved"])
            base = abi.LAUNCH_HEADER.size + 8 * i
            if field == "length":
                raw[base:base + 4] = rng.choice(U32_EDGES).to_bytes(4, "little")
            elif field == "type":
                raw[base + 4] = rng.choice([0, 1, 2, 255])
            elif field == "elem":
                raw[base + 5] = rng.choice([0, 1, 2, 3, 4, 5, 8, 16, 255])
            else:
                raw[base + 6] = rng.randrange(256)
    return bytes(raw)


class Disagreement(AssertionError):
    pass


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
                           f"{model.status.name}/{model.detail}: {where}")
    if fw.ok:
        if fw.lds != model.lds:
            raise Disagreement(f"LDS bytes differ: {where}")
        after = dev.lds_window()
        n = len(model.lds)
        if after[n:] != before[n:]:
            raise Disagreement(f"firmware wrote past its configuration: {where}")
    else:
        if dev.lds_window() != before or fw.generation != gen_before:
            raise Disagreement(f"failed launch changed the LDS or the generation: {where}")
    return fw
