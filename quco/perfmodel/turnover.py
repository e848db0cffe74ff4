"""The turnover between consecutive work-groups on one slot (`wg_turnover_ns`): what the measured
rows say it is, and whether that carries (issue #29).

When an SM holds one work-group of a kernel at a time, the next one starts only after the first
has retired and the block scheduler has launched it there: a time (`Machine.turnover`) in which
that slot neither issues nor computes. The model charges it in `cu_model.Model._resident` between
consecutive work-groups of a slot; where several work-groups are resident the others fill it.

It is set by pairs of rows of one kernel, grid size and tile (the closed form the model reduces
to on them): a row where one work-group fits an SM (`measured_residency` 1, so the busiest SM
runs its work-groups one after another) and the row of the same tile with the most slots at
which two or more fit (every work-group of the paper grid resident at once). The measured
difference less the model's at turnover 0 is the residual the turnover must explain; the
model's difference grows by `sensitivity` x the turnover (its derivative, taken by running the
model at 0 and 1 us: the work-groups the busiest SM runs in turn less one where nothing else
hides the gap, less where the DRAM pipe still carries the first work-group's posted stores).
The turnover is the non-negative least-squares solution over the pairs (`fit_turnover`).

Not shipped (the presets carry 0): fitted on the paper grid it is about 1.3 us, on the big grid
about 0.0-0.2 us a work-group (docs/perf-model-not-shipped.md, "The turnover between work-groups"). The
constant does not carry between grid sizes, so what the paper grid's occupancy-1 rows pay is
not a cost per work-group.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from scipy import optimize

from .fit import FAMILIES, _clean
from .hardware import COMPARED, Measurement, measured_residency, model_us, scaled_kernel, unpipelined_tiles
from .params import Machine
from .residency import per_cu
from .work import Work

PROBE_NS = 1000.0  # the turnover at which the model's derivative is taken (it is linear above 0)


def _with(m: Machine, ns: float) -> Machine:
    return dataclasses.replace(m, turnover=ns * m.clock_mhz / 1000.0)


def pairs(m: Machine, rows: list[Measurement], sizes=None, kernels=COMPARED) -> list[dict]:
    """Per (kernel, size, tile) of the TMA rows (outliers left out, fit._clean): every row at which
    one work-group fits an SM and the busiest SM runs two or more, against the row of the same tile
    with the most slots at which two or more fit. {kernel, size, tile, slots, ref_slots, measured
    (difference, us), model (difference at turnover 0), residual (measured - model), sensitivity
    (us of the model's difference per us of turnover), turns (work-groups the busiest SM runs, less 1)}."""
    att = [r for r in _clean(rows) if r.variant == "att" and r.fits and r.tile and r.slots
           and r.kernel in kernels and (sizes is None or r.size in sizes)]
    m0, m1 = _with(m, 0.0), _with(m, PROBE_NS)
    groups: dict = {}
    for r in att:
        groups.setdefault((r.kernel, r.size, r.work_groups), []).append(r)
    out = []
    for (kernel, size, wgs_total), group in groups.items():
        work = Work.of(scaled_kernel(kernel, wgs_total))
        turns = per_cu(m, wgs_total) - 1
        if turns < 1:
            continue
        flat = unpipelined_tiles(m, work, group)
        # the residency as hardware.points judges it, on the same unpipelined tiles as model_us
        occ = {(r.tile, r.slots): measured_residency(m, work, r.tile, r.slots, pipelined=r.tile not in flat)
               for r in group}
        for r in sorted(group, key=lambda x: (x.tile, x.slots)):
            refs = [x for x in group if x.tile == r.tile and occ[(x.tile, x.slots)] >= 2]
            if occ[(r.tile, r.slots)] != 1 or not refs:
                continue
            ref = max(refs, key=lambda x: x.slots)
            a0, b0 = model_us(m0, work, r.tile, r.slots, flat), model_us(m0, work, ref.tile, ref.slots, flat)
            if a0 is None or b0 is None:
                continue
            model = a0 - b0
            a1, b1 = model_us(m1, work, r.tile, r.slots, flat), model_us(m1, work, ref.tile, ref.slots, flat)
            sens = ((a1 - b1) - model) / (PROBE_NS / 1000.0)
            out.append({"kernel": kernel, "size": size, "tile": r.tile, "slots": r.slots, "ref_slots": ref.slots,
                        "measured": r.time_us - ref.time_us, "model": model,
                        "residual": r.time_us - ref.time_us - model, "sensitivity": sens, "turns": turns})
    return out


def fit_turnover(m: Machine, rows: list[Measurement], sizes=None, kernels=COMPARED) -> tuple[float, list]:
    """wg_turnover_ns: residual = sensitivity x turnover over `pairs`, non-negative least squares
    through the origin (scipy.optimize.lsq_linear); returns the value (ns) and the pairs that set
    it (those the model is sensitive on). ValueError where no pair is."""
    used = [p for p in pairs(m, rows, sizes, kernels) if p["sensitivity"] > 1e-9]
    if not used:
        raise ValueError("no occupancy-1 row the model's turnover moves, against a row of its tile "
                         "holding two or more work-groups")
    res = optimize.lsq_linear(np.array([[p["sensitivity"]] for p in used]),
                              np.array([p["residual"] for p in used]), bounds=(0, np.inf))
    return 1000.0 * float(res.x[0]), used


def cross(m: Machine, rows: list[Measurement]) -> list[dict]:
    """The turnover fitted on some rows, predicting the residuals of the others: without each
    kernel family (the others' pairs of both sizes), and on each grid size alone predicting the
    other. {fitted_on, turnover_ns, kernel, size, tile, slots, measured residual, predicted}."""
    every = pairs(m, rows)
    sizes = list(dict.fromkeys(p["size"] for p in every))
    splits = [(f"all but {fam}", {"kernels": tuple(k for k in COMPARED if k not in members)},
               lambda p, members=members: p["kernel"] in members) for fam, members in FAMILIES.items()]
    splits += [(f"{s} grid", {"sizes": (s,)}, lambda p, s=s: p["size"] != s) for s in sizes]
    out = []
    for label, train, held in splits:
        try:
            ns, _ = fit_turnover(m, rows, **train)
        except ValueError:
            ns = None
        for p in every:
            if held(p):
                out.append({"fitted_on": label, "turnover_ns": ns, **{k: p[k] for k in ("kernel", "size", "tile", "slots")},
                            "measured": p["residual"],
                            "predicted": None if ns is None else p["sensitivity"] * ns / 1000.0})
    return out
