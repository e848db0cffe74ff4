"""Calibration of the GPU description's fitted constants on measurements (issue #29).

Each constant is set by named rows of a measurement file, in stages, each a closed form
the model reduces to on those rows:

0. **Issue-bound rows, by slots** set `stage_instr` (fit_stage): at a tile where the CU's pools
   are the bottleneck, each slot more adds the same time, a cost per work-group and pipeline
   stage on the pools: per (kernel, tile) the slope of the measured time over slots 4..8; the
   model's slope is stage_instr x (the busiest CU's work-groups x the cycles an instruction
   count takes on its pools), so stage_instr follows by least squares through the origin over
   the groups (a kernel of few work-groups a CU, such as Elementwise's 32 of 1,024 steps each,
   weighs little: its slope is near nothing either way).
1. **Issue-bound rows** set the consumers' barrier code (`step_instr`, `queue_instr`,
   `store_instr`): rows of the large grid whose measured time is at least ISSUE_BOUND x the
   DRAM bound (bytes / sustained bandwidth), that keep at least MIN_SLOTS slots (latency
   covered) and whose LDS does not limit the work-groups resident (as many as the
   wavefront slots allow). There the CU's pools are the bottleneck and the model's time per step is
   (step + queue x descriptors + store x stores) x consumer wavefronts x wave_instr /
   active pools (plus the stage cost spread over the steps, subtracted), so the three counts follow by non-negative linear least squares
   (scipy.optimize.lsq_linear) from the measured cycles per step of the busiest CU.
2. **Small-grid issue-bound rows** set `dep_instr_cycles`: there every work-group of a CU is
   resident at once, so a step takes its instructions' dependent chain (fit_chain).
3. **Small-grid rows** set `launch_ns`: rows of the small grid that stream at least 80% of
   sustained bandwidth on the model; per kernel the least measured - modelled time (a cost
   every configuration pays is at most that), then the median over the kernels.

`leave_one_out` refits without one kernel family and predicts it. Rows that are slower than
both neighbours (same kernel, size and tile; one slot fewer and one more) by OUTLIER_RATIO are
measurement outliers (`outliers`: e.g. Dot-Product paper 512/2, 49 us between 24 and 16) and set
no constant; the comparison keeps them.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections import Counter

import numpy as np
from scipy import optimize

from .hardware import (COMPARED, Measurement, compare, lifted, measured_config, measured_residency, scaled_kernel,
                       unpipelined_tiles)
from . import dram_load
from .params import Machine
from .residency import per_cu
from .cu_model import Model, dram_streams, stores as step_stores
from .work import Config, Work

ISSUE_BOUND = 1.5   # a row is issue-bound when measured >= this x its DRAM bound
MIN_SLOTS = 4       # ... and keeps this many slots (the round trip covered)
OUTLIER_RATIO = 1.4  # a row this much slower than both slot neighbours is an outlier (set no constant)
STAGE_SLOTS = (MIN_SLOTS, 8)  # the stage cost's slope is taken over these slots (latency covered)
FAMILIES = {"streaming": ("Elementwise", "ElementwiseK", "Sumvectors"), "reduction": ("Dot-Product",),
            "matrix": ("Matrix-Vector",)}


def _step_terms(m: Machine, work: Work, tile: int) -> tuple[int, int, int, float]:
    """(steps per work-group, descriptors per step, stores per step, cycles per instruction
    count of the step's code on a CU: consumer wavefronts x wave_instr / active pools)."""
    steps = max(work.tiles(i, tile) for i in range(len(work.queues)))
    per_operand = Counter(work.operand(i) for i in range(len(work.queues)))
    descs = sum(math.ceil(n / m.att_box_rows) for n in per_operand.values())
    per_instr = work.consumer_wavefronts * m.wave_instr / min(work.consumer_wavefronts, m.pools)
    return steps, descs, step_stores(m, work, steps), per_instr


def outliers(rows: list[Measurement]) -> set:
    """(kernel, size, tile, slots) of the TMA rows slower than both slot neighbours (same kernel,
    size and tile) by OUTLIER_RATIO or more: isolated measurement outliers, not a trend."""
    t = {(r.kernel, r.size, r.tile, r.slots): r.time_us for r in rows if r.variant == "att" and r.fits and r.tile}
    out = set()
    for (k, size, tile, s), v in t.items():
        lo, hi = t.get((k, size, tile, s - 1)), t.get((k, size, tile, s + 1))
        if lo and hi and v >= OUTLIER_RATIO * max(lo, hi):
            out.add((k, size, tile, s))
    return out


def _clean(rows: list[Measurement]) -> list[Measurement]:
    bad = outliers(rows)
    return [r for r in rows if (r.kernel, r.size, r.tile, r.slots) not in bad]


def _att_rows(rows: list[Measurement], size: str, kernels) -> list[Measurement]:
    """The TMA rows of `size` and `kernels` that ran, outliers left out: what every stage fits on."""
    return [r for r in _clean(rows) if r.variant == "att" and r.fits and r.size == size and r.kernel in kernels]


def _residencies(m: Machine, rows: list[Measurement]):
    """residency(work, r): measured_residency of row `r` as hardware.points judges it: a tile
    whose one-step loop was not pipelined (unpipelined_tiles over the TMA rows of r's kernel x
    size) holds one buffer a queue (pipelined=False), whatever its slots. The rows are grouped
    once and each group's tiles found once, so a pass over the rows stays linear in them."""
    groups: dict = {}
    for x in rows:
        if x.variant == "att" and x.fits and x.tile and x.slots:
            groups.setdefault((x.kernel, x.size, x.work_groups), []).append(x)
    flat: dict = {}

    def residency(work: Work, r: Measurement) -> int:
        key = (r.kernel, r.size, r.work_groups)
        if key not in flat:
            flat[key] = unpipelined_tiles(m, work, groups.get(key, []))
        return measured_residency(m, work, r.tile, r.slots, pipelined=r.tile not in flat[key])
    return residency


def _dram_us(m: Machine, work: Work, work_groups: int) -> float:
    total = work_groups * (work.moved_bytes() + work.output_bytes)
    return total / (m.dram_bytes_per_cycle * m.clock_mhz)  # bytes / (bytes per us)


def stage_groups(m: Machine, rows: list[Measurement], size: str = "big", kernels=COMPARED) -> list[dict]:
    """Per (kernel, tile) of the big grid whose rows at slots STAGE_SLOTS are all issue-bound
    (measured >= ISSUE_BOUND x the DRAM bound) and whose LDS never limits residency: the slope
    of the measured time over the slots (least squares), and what it is per work-group and stage
    in instructions a wavefront: slope x clock / (busiest CU's work-groups x cycles an
    instruction count takes on the CU's pools)."""
    lo, hi = STAGE_SLOTS
    by: dict = {}
    residency = _residencies(m, rows)
    for r in _att_rows(rows, size, kernels):
        if lo <= r.slots <= hi:
            by.setdefault((r.kernel, r.tile, r.work_groups), []).append(r)
    out = []
    for (kernel, tile, wgs_total), rs in sorted(by.items()):
        work = Work.of(scaled_kernel(kernel, wgs_total))
        if len(rs) < 3 or any(r.time_us < ISSUE_BOUND * _dram_us(m, work, wgs_total) for r in rs):
            continue
        full = m.max_waves // (work.consumer_wavefronts + 1)
        if any(residency(work, r) < full for r in rs):
            continue
        slope = float(np.polyfit([r.slots for r in rs], [r.time_us for r in rs], 1)[0])
        wgs = per_cu(m, wgs_total)
        per_instr = _step_terms(m, work, tile)[3]
        out.append({"kernel": kernel, "tile": tile, "work_groups": wgs_total, "slope_us": slope,
                    "instr": slope * m.clock_mhz / (wgs * per_instr), "us_per_instr": wgs * per_instr / m.clock_mhz,
                    "rows": rs})
    return out


def fit_stage(m: Machine, rows: list[Measurement], kernels=COMPARED, size: str = "big") -> tuple[float, list]:
    """stage_instr: measured slope = stage_instr x us_per_instr over stage_groups, by
    non-negative least squares through the origin; returns the value and the rows used."""
    groups = stage_groups(m, rows, size, kernels)
    if not groups:
        raise ValueError("no issue-bound (kernel, tile) with slots 4..8 to set the per-stage cost")
    res = optimize.lsq_linear(np.array([[g["us_per_instr"]] for g in groups]),
                              np.array([g["slope_us"] for g in groups]), bounds=(0, np.inf))
    return float(res.x[0]), [r for g in groups for r in g["rows"]]


def stage_cross(m: Machine, rows: list[Measurement]) -> list[dict]:
    """The stage cost fitted on one kernel family's rows alone, predicting the slope (us per
    slot) of each other family's groups: {fitted_on, stage_instr, kernel, tile, measured, predicted}."""
    out = []
    for family, members in FAMILIES.items():
        try:
            stage, _ = fit_stage(m, rows, members)
        except ValueError:
            continue
        for g in stage_groups(m, rows):
            if g["kernel"] not in members:
                out.append({"fitted_on": family, "stage_instr": stage, "kernel": g["kernel"], "tile": g["tile"],
                            "measured": g["slope_us"], "predicted": stage * g["us_per_instr"]})
    return out


def issue_rows(m: Machine, rows: list[Measurement], size: str = "big", kernels=COMPARED) -> list[tuple]:
    """The issue-bound rows: (measurement, [1, descriptors, stores], instructions per step)."""
    out, residency = [], _residencies(m, rows)
    for r in _att_rows(rows, size, kernels):
        if r.slots < MIN_SLOTS:
            continue
        work = Work.of(scaled_kernel(r.kernel, r.work_groups))
        if r.time_us < ISSUE_BOUND * _dram_us(m, work, r.work_groups):
            continue
        if residency(work, r) < m.max_waves // (work.consumer_wavefronts + 1):
            continue  # occupancy-bound (its LDS keeps work-groups out), not issue-bound
        steps, descs, stores, per_instr = _step_terms(m, work, r.tile)
        wgs = per_cu(m, r.work_groups)
        cycles_per_step = r.time_us * m.clock_mhz / (wgs * steps)
        # less the stage cost (m.stage_instr a stage, once per work-group), spread over its steps
        depth = max(measured_config(work, r.tile, r.slots).slots)
        out.append((r, [1.0, descs, stores], cycles_per_step / per_instr - m.stage_instr * depth / steps))
    return out


def fit_issue(m: Machine, rows: list[Measurement], kernels=COMPARED, size: str = "big") -> tuple[dict, list]:
    """step_instr, queue_instr, store_instr from the issue-bound rows (non-negative least
    squares); returns the values and the rows used."""
    used = issue_rows(m, rows, size, kernels)
    if len(used) < 3:
        raise ValueError(f"{len(used)} issue-bound rows: at least 3 needed to fit three counts")
    a = np.array([x for _, x, _ in used])
    y = np.array([v for _, _, v in used])
    res = optimize.lsq_linear(a, y, bounds=(0, np.inf))
    step, queue, store = (float(v) for v in res.x)
    return {"step_instr": step, "queue_instr": queue, "store_instr": store}, [r for r, _, _ in used]


def fit_chain(m: Machine, rows: list[Measurement], launch_ns: float, size: str = "paper",
              kernels=COMPARED) -> tuple[float, list]:
    """dep_instr_cycles: on the small grid every work-group of a CU is resident at once (two
    on 132 CUs), so a step of an issue-bound row (tile <= 256, >= MIN_SLOTS slots) takes the
    chain of its instructions, not the CU's throughput: cycles per instruction = (measured -
    launch) x clock / (steps x instructions per step); the median over the rows."""
    per, used, residency = [], [], _residencies(m, rows)
    for r in _att_rows(rows, size, kernels):
        if r.tile > 256 or r.slots < MIN_SLOTS:
            continue
        work = Work.of(scaled_kernel(r.kernel, r.work_groups))
        cfg = Config(r.tile, (r.slots,) * len(work.queues))
        wgs = per_cu(m, r.work_groups)
        if residency(work, r) < wgs:
            continue
        steps, descs, stores, per_instr = _step_terms(m, work, r.tile)
        instrs = m.step_instr + m.queue_instr * descs + m.store_instr * stores
        # less the stage cost: the resident work-groups set their stages up one after another,
        # while their first tiles are on the way (what is left beyond that round trip)
        setup = max(0.0, wgs * m.stage_instr * max(cfg.slots) * per_instr - m.lat_att - m.lat_dram)
        per.append(((r.time_us * 1000.0 - launch_ns) * m.clock_mhz / 1000.0 - setup) / (steps * instrs))
        used.append((r.kernel, r.tile, r.slots))
    if not per:
        raise ValueError("no issue-bound small-grid rows to set the instruction chain's latency")
    return statistics.median(per), used


STREAM_TILE = 2048  # rows with tiles this large or larger are bandwidth-bound on the H100


def stream_rows(m: Machine, rows: list[Measurement], size: str = "big", kernels=COMPARED) -> list[tuple]:
    """(measurement, concurrent streams, relative excess over the sustained DRAM bound) for the
    big grid's bandwidth-bound rows of kernels whose every byte goes to DRAM (no shared
    operand), as the model counts streams: CUs x resident work-groups x (operands + stores)."""
    out, residency = [], _residencies(m, rows)
    for r in _att_rows(rows, size, kernels):
        if r.tile < STREAM_TILE:
            continue
        work = Work.of(scaled_kernel(r.kernel, r.work_groups))
        if any(work.sharers(i) > 1 for i in range(len(work.queues))):
            continue
        wgs = per_cu(m, r.work_groups)
        occ = min(residency(work, r), wgs)
        streams = dram_streams(m, work, occ, _step_terms(m, work, r.tile)[2])
        bound_us = _dram_us(m, work, r.work_groups) / loaded_share(m, work, r.tile, r.slots, occ) + m.launch / m.clock_mhz
        out.append((r, streams, r.time_us / bound_us - 1.0))
    return out


def loaded_share(m: Machine, work: Work, tile: int, slots: int, occ: int) -> float:
    """The DRAM share's utilisation the measured (tile, slots) reaches with `occ` resident
    (dram_load.closed_loop_utilisation) where the model runs the DRAM at it (dram_queueing 3, 4); else 1."""
    if m.dram_queue_mode not in (3, 4):
        return 1.0
    return dram_load.closed_loop_utilisation(measured_model(m, work, tile, slots, occ))


def measured_model(m: Machine, work: Work, tile: int, slots: int, occ: int) -> Model:
    """The model of one CU (built, not run) for the measured (tile, slots) with `occ` resident,
    the model's LDS limit lifted as hardware.model_us lifts it (the measured residency applies)."""
    return Model(lifted(m), work, measured_config(work, tile, slots), max_occupancy=occ)


def fit_streams(m: Machine, rows: list[Measurement], kernels=COMPARED, size: str = "big") -> tuple[float, list]:
    """dram_stream_cost: time over the sustained bound = cost x streams, by least squares
    through the origin (scipy.optimize.lsq_linear, non-negative) on stream_rows."""
    used = stream_rows(m, rows, size, kernels)
    if len(used) < 2:
        raise ValueError("fewer than 2 bandwidth-bound rows to set the DRAM stream cost")
    a = np.array([[float(n)] for _, n, _ in used])
    y = np.array([v for _, _, v in used])
    res = optimize.lsq_linear(a, y, bounds=(0, np.inf))
    return float(res.x[0]), [r for r, _, _ in used]


def _stream_stage(m: Machine, rows: list[Measurement], kernels, size: str, share) -> tuple[dict, list]:
    """The stream stage of fit and fit_size: ({dram_stream_cost}, rows used) by fit_streams, or
    with share (sharefit.fit_share) ({dram_queue_cycles, dram_stream_cost}, rows used)."""
    if share is None:
        cost, used = fit_streams(m, rows, kernels, size)
        return {"dram_stream_cost": cost}, used
    got, used = share(m, rows, kernels, size)
    return {k: got[k] for k in ("dram_queue_cycles", "dram_stream_cost")}, used


# ------------------------------------------------ the stream cost and S jointly, dram_queueing 3, 4
def with_service(m: Machine, s_cycles: float) -> Machine:
    """`m` with the DRAM's service time S (cycles; the one place that names its Machine field)."""
    return dataclasses.replace(m, dram_queue_service=float(s_cycles))


def service(m: Machine) -> float:
    """The DRAM's service time S of `m` (cycles)."""
    return m.dram_queue_service


def share_mode(m: Machine, share) -> Machine:
    """`m` run with the dram_queueing a joint stream stage fits under (sharefit.fit_share 3,
    sharefit.fit_mva 4: its dram_queue_mode); `m` itself without one (share None)."""
    return m if share is None else dataclasses.replace(m, dram_queue_mode=share.dram_queue_mode)


def with_constants(m: Machine, c: dict) -> Machine:
    """`m` with fitted constants (GPU_FIELDS names; launch_ns in ns)."""
    fields = {k: v for k, v in c.items() if k in ("step_instr", "queue_instr", "store_instr", "stage_instr")}
    if "dram_stream_cost" in c:
        fields["dram_stream_cost"] = c["dram_stream_cost"]
    if "dram_queue_cycles" in c:
        m = with_service(m, c["dram_queue_cycles"])
    if "dep_instr_cycles" in c:
        fields["dep_instr"] = c["dep_instr_cycles"]
    if "launch_ns" in c:
        fields["launch"] = c["launch_ns"] * m.clock_mhz / 1000.0
    return dataclasses.replace(m, **fields)


def fit_launch(m: Machine, gst: bytes, rows: list[Measurement], size: str = "paper", kernels=COMPARED) -> tuple[float, list]:
    """launch_ns: a cost every configuration pays, so per kernel the least measured - modelled
    time (launch 0) over the small grid's rows that stream at 80% of sustained bandwidth or
    more on the model; then the median over the kernels."""
    m0 = dataclasses.replace(m, launch=0.0)
    picked = [r for r in _clean(rows) if r.size == size and r.kernel in kernels]
    gaps, used = {}, []
    for res in compare(picked, gst, kernels=kernels, m=m0):
        work = Work.of(scaled_kernel(res["kernel"], res["work_groups"]))
        bound_us = _dram_us(m, work, res["work_groups"])
        for p in res["points"]:
            if p.model_us is not None and p.model_us <= bound_us / 0.8:
                gaps.setdefault(res["kernel"], []).append(1000.0 * (p.measured_us - p.model_us))
                used.append((res["kernel"], p.tile, p.slots))
    if not gaps:
        raise ValueError("no bandwidth-bound small-grid rows to set the launch time")
    return max(0.0, statistics.median(min(g) for g in gaps.values())), used


FLOOR_TOL = 0.05  # a limit contradicts a row when it makes the model this much slower than measured and than without it


def inflight_contradicted(m: Machine, gst: bytes, rows: list[Measurement], cap_bytes: float,
                          kernels=COMPARED) -> list[tuple]:
    """The TMA rows that an ATT limit of `cap_bytes` in flight per SM contradicts: with it the
    model is more than FLOOR_TOL slower than the measured time and than the model without a
    limit. (kernel, size, tile, slots, measured us, model us without, with)."""
    base = compare(rows, gst, kernels=kernels, m=dataclasses.replace(m, att_inflight=0.0))
    capped = compare(rows, gst, kernels=kernels, m=dataclasses.replace(m, att_inflight=float(cap_bytes)))
    out = []
    for b, c in zip(base, capped):
        for p0, p1 in zip(b["points"], c["points"]):
            if p0.model_us is None:
                continue
            if p1.model_us > (1 + FLOOR_TOL) * max(p1.measured_us, p0.model_us):
                out.append((b["kernel"], b["size"], p0.tile, p0.slots, p0.measured_us, p0.model_us, p1.model_us))
    return out


def inflight_floor(m: Machine, gst: bytes, rows: list[Measurement], lo_kib: int = 8, hi_kib: int = 256,
                   kernels=COMPARED) -> tuple[int, list]:
    """The measured lower bound on an SM's limit on ATT bytes in flight: the largest limit
    (KiB, bisected between lo_kib and hi_kib to 4 KiB) that contradicts a measured row
    (inflight_contradicted: the H100 ran it faster than the limit allows), and those rows.
    A limit at or below it is ruled out by the measurements; above it none tells."""
    bad = inflight_contradicted(m, gst, rows, lo_kib * 1024, kernels)
    if not bad:
        return 0, []
    if inflight_contradicted(m, gst, rows, hi_kib * 1024, kernels):
        raise ValueError(f"a limit of {hi_kib} KiB an SM still contradicts the measurements")
    while hi_kib - lo_kib > 4:
        mid = (lo_kib + hi_kib) // 2
        rows_mid = inflight_contradicted(m, gst, rows, mid * 1024, kernels)
        if rows_mid:
            lo_kib, bad = mid, rows_mid
        else:
            hi_kib = mid
    return lo_kib, bad


def fit(m: Machine, gst: bytes, rows: list[Measurement], kernels=COMPARED, share=None) -> tuple[dict, dict]:
    """Both stages on the rows of `kernels`: (constants, {constant: rows that set it}). share:
    the stream stage (sharefit.fit_share or fit_mva: S and the stream cost together, `m` run with
    dram_queueing 3 or 4, share_mode; passed in, as sharefit reads this module's row rules)."""
    stage, stage_used = fit_stage(m, rows, kernels)
    m = dataclasses.replace(m, stage_instr=stage)
    c, issue_used = fit_issue(m, rows, kernels)
    c["stage_instr"] = stage
    joint, m = share is not None, share_mode(m, share)
    streams, stream_used = _stream_stage(m, rows, kernels, "big", share)
    c.update(streams)
    # joint: where no small-grid row streams at 80% under the loaded share (the streaming family
    # held out), the launch keeps its unfitted value (prior), not the shipped fit's
    launch_stage = functools.partial(_try, fit_launch) if joint else fit_launch
    got = launch_stage(with_constants(m, c), gst, rows, "paper", kernels)
    launch = got[0] if got else prior(m).launch * 1000.0 / m.clock_mhz
    c["dep_instr_cycles"], chain_used = fit_chain(with_constants(m, c), rows, launch, kernels=kernels)
    got = launch_stage(with_constants(m, c), gst, rows, "paper", kernels)
    c["launch_ns"], launch_used = got if got else (launch, None)
    return c, {"stage_instr": stage_used, "step_instr, queue_instr, store_instr": issue_used,
               ("dram_queue_cycles, dram_stream_cost" if joint else "dram_stream_cost"): stream_used,
               "dep_instr_cycles": chain_used,
               "launch_ns": launch_used}


def leave_one_out(m: Machine, gst: bytes, rows: list[Measurement], share=None) -> list[dict]:
    """For each kernel family: fit without it, then compare on it (share: fit's)."""
    out = []
    m = share_mode(m, share)
    for family, members in FAMILIES.items():
        rest = tuple(k for k in COMPARED if k not in members)
        c, _ = fit(m, gst, rows, rest, share)
        for res in compare(rows, gst, kernels=members, m=with_constants(m, c)):
            out.append({"held_out": family, "constants": c, **{k: v for k, v in res.items() if k != "points"}})
    return out


# ---------------------------------------------------------------- leave one grid size out
FITTED = ("step_instr", "queue_instr", "store_instr", "stage_instr", "dram_stream_cost", "dep_instr_cycles", "launch_ns")
FIXED_POINT_ROUNDS = 10  # the stream cost's bound counts the launch, which is fitted after it


def prior(m: Machine) -> Machine:
    """`m` with every fitted constant back at its unfitted value (params.GPU_FIELDS: what the
    model assumes of a GPU without measurements), so that nothing of a fit on other rows leaks."""
    from .params import GPU_FIELDS
    return with_constants(m, {k: GPU_FIELDS[k] for k in FITTED})


def _constants(m: Machine) -> dict:
    return {"dram_queue_cycles": service(m),"step_instr": m.step_instr, "queue_instr": m.queue_instr, "store_instr": m.store_instr,
            "stage_instr": m.stage_instr, "dram_stream_cost": m.dram_stream_cost,
            "dep_instr_cycles": m.dep_instr, "launch_ns": m.launch * 1000.0 / m.clock_mhz}


def _try(stage, *args):
    try:
        return stage(*args)
    except ValueError:
        return None


def fit_size(m: Machine, gst: bytes, rows: list[Measurement], size: str, kernels=COMPARED,
             share=None) -> tuple[dict, dict]:
    """Every fitted constant from the rows of one grid size alone, by `fit`'s stages and row
    rules applied to `size`'s rows: (constants, {constant: rows used, or None where no row of
    that size meets the stage's rule and the constant keeps its unfitted value, `prior`}).
    The stream cost's bound counts the launch, fitted after it: the stages repeat from the
    prior until the launch moves less than 1 ns (`fit` starts from the preset's launch, the
    value it printed, which closes that loop). share: the stream stage as in `fit`, from the
    GST's S (dram_queueing 3 or 4, share_mode)."""
    joint, m = share is not None, share_mode(m, share)
    train = [r for r in rows if r.size == size]
    base = prior(m)
    c, used = _constants(base), {}
    for _ in range(FIXED_POINT_ROUNDS):
        before = c["launch_ns"]
        got = _try(fit_stage, with_constants(base, c), train, kernels, size)
        if got:
            c["stage_instr"] = got[0]
        used["stage_instr"] = got and got[1]
        got = _try(fit_issue, with_constants(base, c), train, kernels, size)
        if got:
            c.update(got[0])
        used.update({k: got and got[1] for k in ("step_instr", "queue_instr", "store_instr")})
        got = _try(_stream_stage, with_constants(base, c), train, kernels, size, share)
        if got:
            c.update(got[0])
        used.update({k: got and got[1] for k in (("dram_queue_cycles",) if joint else ()) + ("dram_stream_cost",)})
        got = _try(fit_launch, with_constants(base, c), gst, train, size, kernels)
        launch = got[0] if got else c["launch_ns"]
        got = _try(fit_chain, with_constants(base, c), train, launch, size, kernels)
        if got:
            c["dep_instr_cycles"] = got[0]
        used["dep_instr_cycles"] = got and got[1]
        got = _try(fit_launch, with_constants(base, c), gst, train, size, kernels)
        if got:
            c["launch_ns"] = got[0]
        used["launch_ns"] = got and got[1]
        if abs(c["launch_ns"] - before) < 1.0:
            break
    return c, used


def leave_size_out(m: Machine, gst: bytes, rows: list[Measurement], kernels=COMPARED,
                   share=None) -> list[dict]:
    """For each grid size of `rows`: every constant fitted on that size alone (fit_size), the
    model compared on every other size. {fitted_on, constants, used, **compare's summary}."""
    sizes = list(dict.fromkeys(r.size for r in rows if r.kernel in kernels))
    out = []
    for size in sizes:
        c, used = fit_size(m, gst, rows, size, kernels, share)
        held = [r for r in rows if r.size != size]
        mm = share_mode(m, share)
        for res in compare(held, gst, kernels=kernels, m=with_constants(mm, c)):
            out.append({"fitted_on": size, "constants": c, "used": used,
                        **{k: v for k, v in res.items() if k != "points"}})
    return out
