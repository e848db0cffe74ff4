"""The performance model against measurements from a real GPU (issue #29).

A measurement file has one row per configuration, in the format of
`examples/hardware/h100-tma-sweep.csv` (a copy of the steering team's `shared/hardware-data/`):

    kernel,variant,size,work_groups,tile,slots,block_m,block_k,fits,time_us,bytes,gbps,smem_required

`read(path)` checks every row (a bad one raises `HardwareDataError` naming the file, the
line, the field, the value and what is allowed); `compare(rows, gst)` maps each (kernel,
size) to the bundled kernel file with the measured work-group count, evaluates the model
on every measured configuration and returns one summary per kernel x size: Spearman rank
correlation, the measured cost of the model's best and of QuCo's firmware pick, the median
relative error of the predicted time and how many configurations lie within 1% of the best.

Matrix-Matrix is read but not compared: the measured kernel runs on tensor cores with an
A tile of block_m x block_k and B tiles of block_k x 128, a different loop nest from the
bundled file's 8 rows of A per work-group re-read once per column of B.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from ..examples import HARDWARE
from ..gst import tables
from ..kernel.format import load_kernel
from .params import machine
from .search import evaluate
from .work import Config, Work

FIELDS = ("kernel", "variant", "size", "work_groups", "tile", "slots", "block_m", "block_k", "fits",
          "time_us", "bytes", "gbps", "smem_required")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "kernels"
# measured kernel name -> bundled kernel file (Table III's kernels)
KERNEL_FILES = {
    "Elementwise": "elementwise.json", "ElementwiseK": "elementwise-k.json", "Sumvectors": "sumvectors.json",
    "Dot-Product": "dot-product.json", "Matrix-Vector": "matrix-vector.json", "Matrix-Matrix": "matrix-matrix.json",
}
COMPARED = ("Elementwise", "ElementwiseK", "Sumvectors", "Dot-Product", "Matrix-Vector")
NEAR = 1.01  # "within 1% of the best"


class HardwareDataError(ValueError):
    """A measurement file that cannot be read as one; the message names file, line, field."""


@dataclass(frozen=True)
class Measurement:
    kernel: str
    variant: str      # att (TMA), pointer (plain loads), vendor (the library's operator), ...
    size: str         # a label of the grid size (big, paper, ...)
    work_groups: int
    tile: int | None
    slots: int | None
    fits: bool
    time_us: float | None
    block_m: int | None = None
    block_k: int | None = None
    bytes: int | None = None
    smem_required: int | None = None  # the shared memory a configuration that did not fit asked for


def _whole(path, line: int, field: str, text: str, lo: int, hi: int, optional: bool = True) -> int | None:
    if text == "" and optional:
        return None
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise HardwareDataError(f"{path}: line {line}: field {field}: {text!r}: expected a whole number "
                                f"{lo}..{hi}{' or empty' if optional else ''}")
    return int(text)


def _time(path, line: int, text: str) -> float | None:
    if text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 0 < v < 1e9):
        raise HardwareDataError(f"{path}: line {line}: field time_us: {text!r}: expected a number of "
                                "microseconds > 0 and < 1e9, or empty where the configuration does not fit")
    return v


def read(path) -> list[Measurement]:
    """Every row of a measurement file, checked; raises HardwareDataError on the first bad one."""
    return read_with_bytes(path)[0]


def read_with_bytes(path) -> tuple[list[Measurement], bytes]:
    """read's rows and the bytes they were parsed from (one read: a caller that records the
    file's sha256 hashes what it parsed, even from a pipe)."""
    path = Path(path)
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HardwareDataError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != FIELDS:
        raise HardwareDataError(f"{path}: line 1: header {','.join(header or [])!r}: expected {','.join(FIELDS)}")
    out = []
    for line, cells in enumerate(reader, start=2):
        if not cells:
            continue
        if len(cells) != len(FIELDS):
            raise HardwareDataError(f"{path}: line {line}: {len(cells)} fields: expected {len(FIELDS)} ({','.join(FIELDS)})")
        r = dict(zip(FIELDS, (c.strip() for c in cells)))
        for f in ("kernel", "variant", "size"):
            if not r[f] or not r[f].isprintable():
                raise HardwareDataError(f"{path}: line {line}: field {f}: {r[f]!r}: expected a printable name")
        if r["fits"] not in ("yes", "no"):
            raise HardwareDataError(f"{path}: line {line}: field fits: {r['fits']!r}: expected yes or no")
        fit = r["fits"] == "yes"
        t = _time(path, line, r["time_us"])
        if fit and t is None:
            raise HardwareDataError(f"{path}: line {line}: field time_us: empty: a configuration that fits "
                                    "needs its time")
        out.append(Measurement(
            r["kernel"], r["variant"], r["size"], _whole(path, line, "work_groups", r["work_groups"], 1, 1 << 31, False),
            _whole(path, line, "tile", r["tile"], 1, 1 << 24), _whole(path, line, "slots", r["slots"], 1, 64),
            fit, t, _whole(path, line, "block_m", r["block_m"], 1, 1 << 16),
            _whole(path, line, "block_k", r["block_k"], 1, 1 << 16), _whole(path, line, "bytes", r["bytes"], 0, 1 << 50),
            _whole(path, line, "smem_required", r["smem_required"], 1, 1 << 40)))
    if not out:
        raise HardwareDataError(f"{path}: no measurement rows after the header")
    return out, data


def regrid(k, work_groups: int):
    """Kernel `k` with its grid set to `work_groups`; an operand every work-group shares
    (shared_by = the file's grid) stays shared by the whole new grid."""
    movement = [(p, f, work_groups if s and s == k.work_groups else s) for p, f, s in k.movement]
    return dataclasses.replace(k, work_groups=work_groups, movement=movement)


@functools.lru_cache(maxsize=None)
def _bundled(name: str):
    # read and checked once a process: the fits ask for the same few files once per row
    return load_kernel(EXAMPLES / KERNEL_FILES[name])


def scaled_kernel(name: str, work_groups: int):
    """The bundled kernel `name` with its grid set to `work_groups` (regrid)."""
    return regrid(_bundled(name), work_groups)


@dataclass
class Point:
    """One measured configuration with the model's prediction (None: not on the model)."""
    tile: int
    slots: int
    measured_us: float
    model_us: float | None


def measured_config(work: Work, tile: int, slots: int, pipelined: bool = True) -> Config:
    """The configuration a measured (tile, slots) stands for: the measured kernel pipelines a
    queue at most as deep as it has tiles in a pass (a loop of n iterations holds at most n
    stages: Matrix-Vector at 2048 elements is one tile and runs the same at 1..8 slots), so
    each queue gets min(slots, its tiles per pass). A loop that is not pipelined (1 stage, or
    a folded one-step loop: unpipelined_tiles) waits for each load where it is issued: Triton
    lowers such a descriptor load to a TMA copy and a wait on its barrier (triton-lang/triton,
    test/TritonNvidiaGPU/tma_lowering.mlir), so a step's loads run one after another (serial)."""
    return Config(tile, tuple(min(slots, work.tiles(i, tile)) for i in range(len(work.queues))),
                  serial=slots == 1 or not pipelined)


def measured_smem(m, work: Work, tile: int, slots: int, pipelined: bool = True) -> int:
    """Shared memory the measured kernel asks for at (tile, slots), as its README states the
    layout: max(1, slots - 1) buffers of every queue's tile (the consumers read a tile into
    registers, so the slot they compute on is free again: Triton's pipeliner allocates one
    buffer less than its stages), whatever the loop's length; one staging tile of the output
    where a step stores its results (a TMA store leaves from shared memory); an mbarrier
    (m.barrier_bytes) a buffer. Elementwise 8192/8: 7 x 2 x 16 KiB + 16 KiB + 7 x 8 = 245,816 B,
    the measured figure. From the kernel description only: its queues, and its output per step."""
    steps = max(work.tiles(i, tile) for i in range(len(work.queues)))
    buffers = max(1, slots - 1) if pipelined else 1
    stage = sum(min(tile, work.pass_length(i)) * q.elem_size for i, q in enumerate(work.queues))
    out = work.output_bytes / (work.passes * steps)
    staging = math.ceil(out) if out >= m.cache_line else 0
    return buffers * (stage + m.barrier_bytes) + staging


def measured_residency(m, work: Work, tile: int, slots: int, pipelined: bool = True) -> int:
    """Work-groups of the measured kernel an SM holds at (tile, slots): its shared memory
    (measured_smem) plus the block's reserved bytes against the SM's, at most what one block
    may ask (the SM's less the reserved), and the warps (consumers + producer, as the model)."""
    need = measured_smem(m, work, tile, slots, pipelined)
    if need > m.lds_bytes - m.lds_reserved:
        return 0
    return min(m.lds_bytes // (need + m.lds_reserved), m.max_waves // (work.consumer_wavefronts + 1))


def unpipelined_tiles(m, work: Work, measured: list[Measurement]) -> set[int]:
    """Tiles at which the measured kernel's loop was evidently not pipelined: the loop has one
    step (the tile is the whole queue) and a row at that tile ran although `slots - 1` buffers
    cannot be allocated. A loop with constant bounds and one iteration is replaced by its body
    before the pipeliner sees it (MLIR's scf.for canonicalisation, SimplifyTrivialLoops), so no
    stage buffers exist at any slot count of that tile; a loop whose bound is a run-time value
    is pipelined even at one step (Dot-Product 8192/5..8 lose residency, 1.5x). The kernel
    description does not say which bound a kernel's source made constant: the measured row
    does (Matrix-Vector 2048/8 ran at 185 us, where 7 x 36 KiB do not fit)."""
    out = set()
    for r in measured:
        one_step = r.tile is not None and max(work.tiles(i, r.tile) for i in range(len(work.queues))) == 1
        if one_step and r.fits and r.slots and measured_residency(m, work, r.tile, r.slots) < 1:
            out.add(r.tile)
    return out


def points(m, work: Work, measured: list[Measurement]) -> list[Point]:
    """The model on each measured configuration: the measured kernel's pipelining depth
    (measured_config) and its residency (measured_residency: its own shared-memory layout, not
    QuCo's unit's, which holds `slots` tiles a queue and counts barriers against the GST's
    barrier_limit; the model's LDS limit is lifted so that the measured one applies)."""
    flat = unpipelined_tiles(m, work, measured)
    return [Point(r.tile, r.slots, r.time_us, model_us(m, work, r.tile, r.slots, flat)) for r in measured]


def model_us(m, work: Work, tile: int, slots: int, flat: set[int]) -> float | None:
    """The model's time (us) of one measured configuration, as `points` gives it (`flat`: the
    kernel's unpipelined_tiles); None where the measured kernel fits no work-group."""
    occ = measured_residency(m, work, tile, slots, pipelined=tile not in flat)
    if occ < 1:
        return None
    return evaluate(lifted(m), work, measured_config(work, tile, slots, tile not in flat), max_occupancy=occ).ns / 1000.0


def lifted(m):
    """`m` with the model's LDS and barrier limits lifted, so that a measured kernel's own
    residency (measured_residency, passed as max_occupancy) is the one that applies."""
    return dataclasses.replace(m, lds_bytes=1 << 40, barrier_limit=1 << 40)


def summarise(pts: list[Point], pick: Config | None = None) -> dict:
    """The figures of one kernel x size from its points (`pick`: QuCo's configuration)."""
    on = [p for p in pts if p.model_us is not None]
    meas_best = min(p.measured_us for p in pts)
    best_m = min(on, key=lambda p: (p.model_us, -p.tile, p.slots))
    best_meas = min(pts, key=lambda p: p.measured_us)
    rho = stats.spearmanr([p.model_us for p in on], [p.measured_us for p in on]).statistic if len(on) > 2 else None
    errors = sorted(abs(p.model_us / p.measured_us - 1.0) for p in on)
    picked = None
    if pick is not None and len(set(pick.slots)) == 1:
        picked = next((p for p in pts if p.tile == pick.tile and p.slots == pick.slots[0]), None)
    model_best = min(p.model_us for p in on)
    return {
        "configs": len(pts), "on_model": len(on),
        "measured_best": f"{best_meas.tile}/{best_meas.slots}", "measured_best_us": meas_best,
        "model_best": f"{best_m.tile}/{best_m.slots}", "model_best_cost_pct": 100 * (best_m.measured_us / meas_best - 1),
        "quco_pick": (f"{pick.tile}/" + "+".join(map(str, dict.fromkeys(pick.slots)))) if pick else None,
        "quco_cost_pct": 100 * (picked.measured_us / meas_best - 1) if picked else None,
        "spearman": rho, "median_error_pct": 100 * float(stats.scoreatpercentile(errors, 50)) if errors else None,
        "mean_signed_error_pct": 100 * sum(p.model_us / p.measured_us - 1 for p in on) / len(on) if on else None,
        "near_measured": sum(1 for p in pts if p.measured_us <= NEAR * meas_best),
        "near_model": sum(1 for p in on if p.model_us <= NEAR * model_best),
    }


def compare(rows: list[Measurement], gst: bytes, quco_pick=None, kernels=COMPARED, variant: str = "att",
            m=None) -> list[dict]:
    """One dict per kernel x size of `rows` (in file order) for the `variant` rows that fit:
    the summary of `summarise` plus kernel, size, work_groups and the points themselves.
    `quco_pick(gst, kernel)` -> Config or None gives QuCo's configuration (the firmware's,
    run by the caller: bench/hardware.py). `m`: another Machine for the GST (a fit's)."""
    m = m or machine(tables.unpack(gst))
    out = []
    groups: dict = {}
    for r in rows:
        if r.variant == variant and r.kernel in kernels and r.fits and r.tile and r.slots:
            groups.setdefault((r.kernel, r.size, r.work_groups), []).append(r)
    for (name, size, wgs), measured in groups.items():
        kernel = scaled_kernel(name, wgs)
        work = Work.of(kernel)
        pts = points(m, work, measured)
        if not any(p.model_us is not None for p in pts):
            continue
        pick = quco_pick(gst, kernel) if quco_pick else None
        out.append({"kernel": name, "size": size, "work_groups": wgs, **summarise(pts, pick), "points": pts})
    return out


def geomean_pct(values) -> float | None:
    """Geometric mean of (1 + v/100) over the values given, as a percent above 1."""
    vals = [1 + v / 100 for v in values if v is not None]
    return 100 * (math.exp(sum(math.log(v) for v in vals) / len(vals)) - 1) if vals else None


DEFAULT_DATA = HARDWARE / "h100-tma-sweep.csv"  # package data (examples/hardware/README.md)


def att_vs_noatt(rows: list[Measurement], gst: bytes, kernels=COMPARED) -> list[dict]:
    """Per kernel x size: the best plain-load ("pointer", the NoATT analogue) time over the best
    TMA ("att") time, measured, beside the model's NoATT/Fine-Tuned over its ATT/Fine-Tuned
    (the model's best of the measured ATT configurations). Above 1: ATT ahead."""
    from .search import noatt
    g = tables.unpack(gst)
    m = machine(g)
    best: dict = {}
    for r in rows:
        if r.kernel in kernels and r.fits and r.time_us and r.variant in ("att", "pointer") and r.tile:
            key = (r.kernel, r.size, r.work_groups)
            best.setdefault(key, {}).setdefault(r.variant, []).append(r)
    out = []
    for (name, size, wgs), by in best.items():
        if "att" not in by or "pointer" not in by:
            continue
        work = Work.of(scaled_kernel(name, wgs))
        model_att = min(p.model_us for p in points(m, work, by["att"]) if p.model_us is not None)
        na = noatt(m, g, work, tuned=True)
        out.append({"kernel": name, "size": size, "work_groups": wgs,
                    "measured": min(r.time_us for r in by["pointer"]) / min(r.time_us for r in by["att"]),
                    "model": (na.outcome.ns / 1000.0) / model_att if na else None})
    return out
