"""A GST file's `[model]` table, checked, carried with the GST's fields to every process.

    g = described("my-gpu.toml", gst)      # the GST's fields, and "model": the file's own table
    m = params.machine(g, ...)             # the description the file gives, not a preset's

A TOML preset's `[model]` table describes the GPU to the performance model (docs/gst-presets.md).
`described` reads it from the file the user named and puts it into the GST's field dictionary
under "model", so it goes wherever the fields go: into a sweep's tasks and the worker processes
that run them, with nothing registered in the parent process (--workers 1 and 2 give the same
rows). A binary .gst, or a TOML without the table, gets the bundled preset of the same GST name,
else GCN's defaults (params.description). Every entry is checked here: a known field, a number of
the right kind, inside RANGES; the message names the file, the key, the value and the range.
"""
from __future__ import annotations

import math

from ..gst import tables
from ..gst.tables import GstFileError, toml_key, toml_kind, toml_value
from ..util.userinput import printable
from .params import GPU_FIELDS

# field: (lo, hi, integer, what the range stands for). Wide enough for any GPU, narrow enough that
# the model's arithmetic stays finite and a simulation stays bounded (no value makes it hang).
RANGES = {
    "waves_per_pool": (1, 64, True, "wavefronts one pool (SIMD, SM sub-partition) keeps resident: GCN 10, Hopper 16"),
    "wave_instr_cycles": (0.0625, 64, False, "cycles a pool takes to issue one wavefront instruction: GCN 4, Hopper 1"),
    "dep_instr_cycles": (0, 1024, False, "cycles from an instruction to the next that depends on it (0: no chain latency)"),
    "code_on_pools": (0, 1, True, "1: the barrier code takes the pools' issue slots; 0: it issues beside them"),
    "l2_slices": (1, 1024, True, "L2 slices (channels), each returning 64 bytes a cycle"),
    "l2_slice_bytes": (1024, 1 << 30, True, "bytes of one L2 slice"),
    "att_issue_cycles": (0, 1024, False, "cycles the ATT (TMA) unit is busy per descriptor"),
    "att_box_rows": (1, 256, True, "identical queues one descriptor moves (a TMA box has at most 256 rows)"),
    "step_instr": (0, 1 << 16, False, "consumer instructions per wavefront and step"),
    "queue_instr": (0, 1 << 16, False, "consumer instructions per descriptor a step waits for"),
    "store_instr": (0, 1 << 16, False, "consumer instructions per step that writes results"),
    "stage_instr": (0, 1 << 16, False, "instructions per wavefront a work-group runs once per pipeline stage (set-up)"),
    "dram_sustained": (0.01, 1, False, "the share of the GST's DRAM bandwidth a copy sustains"),
    "launch_ns": (0, 10_000_000, False, "ns of kernel launch before the first work-group (at most 10 ms)"),
    "lds_reserved_per_wg": (0, 1 << 24, True, "LDS bytes each resident work-group takes beyond its queues"),
    "barrier_bytes": (0, 1 << 16, True, "bytes of one barrier kept in the LDS (0: barriers are a per-CU count)"),
    "att_inflight_lines": (0, 1 << 20, True, "cache-line requests a CU's ATT may have outstanding (0: no limit)"),
    "load_inflight_lines": (0, 1 << 20, True, "cache-line requests a CU's own loads (NoATT) may have outstanding (0: no limit)"),
    "dram_queueing": (0, 4, True, "a DRAM round trip grows under load (M/M/1, S = the DRAM part of the idle round trip): 0 no (an ideal DRAM), 1 from the configuration's bytes in flight, 2 from the simulated utilisation, 3 the DRAM share at the utilisation the closed loop of those bytes reaches (open-queue form), 4 the same by exact Mean Value Analysis"),
    "load_release_cycles": (0, 1 << 16, False, "cycles of a NoATT load's round trip outside the L1, during which its entry is already free"),
    "dram_stream_cost": (0, 1, False, "DRAM rate lost per concurrent sequential stream, 1 / (1 + cost x streams)"),
    "wg_turnover_ns": (0, 1_000_000, False, "ns from a work-group's end to the next one's start on its slot (at most 1 ms)"),
}


def _expected(key: str) -> str:
    lo, hi, integer, doc = RANGES[key]
    return f"expected {'an integer' if integer else 'a number'} {lo}..{hi} ({doc})"


def _number(where: str, key: str, v) -> float | int:
    lo, hi, integer, doc = RANGES[key]
    expected = _expected(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise GstFileError(f"{where}: [model].{key}: {toml_value(v)} is {toml_kind(v)}, "
                           f"not {'an integer' if integer else 'a number'}; {expected}")
    if not (math.isfinite(v) and lo <= v <= hi):
        raise GstFileError(f"{where}: [model].{key} = {toml_value(v)}: out of range {lo}..{hi} ({doc})")
    return v


def check(model, where: str) -> dict:
    """A decoded `[model]` table -> {field: value}; GstFileError naming the first bad entry."""
    if not isinstance(model, dict):
        raise GstFileError(f"{where}: model: {toml_value(model)} is {toml_kind(model)}; expected a table "
                           f"[model] of the fields {', '.join(RANGES)}")
    out = {}
    for key, entry in model.items():
        if key not in GPU_FIELDS:
            raise GstFileError(f"{where}: [model].{toml_key(key)}: unknown field (known: {', '.join(GPU_FIELDS)})")
        if isinstance(entry, dict):
            for k in entry:
                if k not in tables.ENTRY_KEYS:
                    raise GstFileError(f"{where}: [model].{key}.{toml_key(k)}: unknown key "
                                       f"(allowed: {', '.join(tables.ENTRY_KEYS)})")
            source = entry.get("source", "")
            if not isinstance(source, str) or len(source) > tables.MAX_SOURCE_CHARS:
                what = f"is {toml_kind(source)}" if not isinstance(source, str) else f"has {len(source):,} characters"
                raise GstFileError(f"{where}: [model].{key}.source: {toml_value(source)} {what}; expected a string "
                                   f"of at most {tables.MAX_SOURCE_CHARS} characters")
            if "value" not in entry:
                raise GstFileError(f"{where}: [model].{key}.value: missing; {_expected(key)}")
        out[key] = _number(where, key, entry.get("value") if isinstance(entry, dict) else entry)
    return out


def model_table(spec) -> dict | None:
    """The checked `[model]` table of the GST file or preset `spec` ({field: value}), or None for
    a binary .gst or a TOML without one."""
    path, doc = tables.document(spec)
    if doc is None or "model" not in doc:
        return None
    return check(doc["model"], printable(str(path)))


def described(spec, gst: bytes) -> dict:
    """The GST's fields (tables.unpack), with the file's own `[model]` table under "model" when it
    has one: what params.machine reads before it looks for a preset by the GST's name."""
    g = tables.unpack(gst)
    table = model_table(spec)
    if table is not None:
        g["model"] = table
    return g
