"""The H100's side of bench/calibrate_model.py (run that script; this module holds its modes):
--hardware (every fitted constant, the rows that set each, leave one kernel family out) and
--leave-size-out (the fit on one grid size, the other predicted), each followed by the turnover
between work-groups; and what the other modes share: the measurement file read once, the issue
#29 figures (score, targets_line).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

from quco.perfmodel import hardware as hwdata
from quco.gst import tables
from quco.perfmodel import params
from quco.perfmodel.params import machine

from _progress import step


@functools.cache  # --hardware and --leave-size-out print two reports off the same file
def measured(path: str, gpu: str):
    """(GST, Machine, rows) of a hardware measurement file against `gpu`'s preset."""
    gst = tables.load(gpu)
    return gst, machine(tables.unpack(gst)), hwdata.read(path)


def print_used(used: dict) -> None:
    """The rows that set each fitted constant (fit.fit's `used`): how many, kernels, tiles."""
    for k, rs in used.items():
        if not rs:
            print(f"  {k}: no row (unfitted value)")
            continue
        kinds = sorted({(r.kernel, r.tile) if hasattr(r, "kernel") else (r[0], r[1]) for r in rs})
        print(f"  {k}: {len(rs)} rows ({', '.join(sorted({k for k, _ in kinds}))}; tiles "
              f"{min(t for _, t in kinds)}-{max(t for _, t in kinds)})")


def hardware_fit(path: str, gpu: str = "h100-sxm") -> None:
    """The H100 constants refitted from the measurements (quco/perfmodel/fit.py; the preset holds
    the values this prints), the rows that set each, and leave-one-kernel-family-out: fitted
    without a family, the model predicts it."""
    from quco.perfmodel import fit as hwfit
    step("every constant fitted")
    gst, m, rows = measured(path, gpu)
    c, used = hwfit.fit(m, gst, rows)
    print(f"fit on {path} ({gpu}):")
    for k, v in c.items():
        print(f"  {k} = {v:.4g}   (preset: {params.description(params.gst_name(tables.unpack(gst)))[k]})")
    print_used(used)
    print("\nrows left out of every fit (slower than both slot neighbours by "
          f"{hwfit.OUTLIER_RATIO}x or more): " + ", ".join(f"{k} {sz} {t}/{s}" for k, sz, t, s in sorted(hwfit.outliers(rows))))
    print("\nthe per-stage cost (stage_instr): measured slope over slots 4..8 of each issue-bound (kernel, tile) "
          "of the big grid, and the model's slope at the fitted value:")
    print("| kernel | tile | measured us/slot | instructions a wavefront, work-group and stage | model us/slot |")
    print("|---|---|---|---|---|")
    step("the per-stage cost")
    for g in hwfit.stage_groups(m, rows):
        print(f"| {g['kernel']} | {g['tile']} | {g['slope_us']:+.2f} | {g['instr']:.1f} | "
              f"{c['stage_instr'] * g['us_per_instr']:+.2f} |")
    print("\nthe per-stage cost fitted on one family alone, predicting the others' slopes (us per slot):")
    print("| fitted on | stage_instr | kernel | tile | measured | predicted |\n|---|---|---|---|---|---|")
    for x in hwfit.stage_cross(m, rows):
        print(f"| {x['fitted_on']} | {x['stage_instr']:.1f} | {x['kernel']} | {x['tile']} | {x['measured']:+.2f} | "
              f"{x['predicted']:+.2f} |")
    print("\nleave one kernel family out (fit without it, predict it):")
    print("| held out | constants fitted without it | size | kernel | rank corr | model best cost | median err |")
    print("|---|---|---|---|---|---|---|")
    step("leave one kernel family out")
    for r in hwfit.leave_one_out(m, gst, rows):
        cs = ", ".join(f"{k} {v:.3g}" for k, v in r["constants"].items())
        print(f"| {r['held_out']} | {cs} | {r['size']} | {r['kernel']} | {r['spearman']:.2f} | "
              f"{r['model_best_cost_pct']:+.1f}% | {r['median_error_pct']:.1f}% |")


def turnover_report(path: str, split: str, gpu: str = "h100-sxm") -> None:
    """wg_turnover_ns (quco/perfmodel/turnover.py; not shipped, the presets carry 0): the pairs
    that would set it, its fit on each grid size and on all rows, the fit without each kernel
    family (split "family") or on one grid size (split "size") predicting the held-out pairs, and
    the issue #29 targets with the paper grid's value against the shipped model."""
    from quco.perfmodel import turnover as tv
    gst, m, rows = measured(path, gpu)
    print("\nthe turnover between work-groups (wg_turnover_ns, not shipped): occupancy-1 rows against the row of "
          "their tile with the most slots that holds two or more (us; sensitivity: us of the model's difference "
          "per us of turnover)")
    print("| size | kernel | row | against | measured | model | residual | sensitivity | turnovers an SM |")
    print("|---|---|---|---|---|---|---|---|---|")
    step("the turnover's pairs")
    for p in tv.pairs(m, rows):
        print(f"| {p['size']} | {p['kernel']} | {p['tile']}/{p['slots']} | {p['tile']}/{p['ref_slots']} | "
              f"{p['measured']:+.2f} | {p['model']:+.2f} | {p['residual']:+.2f} | {p['sensitivity']:.2f} | {p['turns']} |")
    step("the turnover fitted")
    fitted = {}
    for label, sizes in (("all rows", None), ("paper grid", ("paper",)), ("big grid", ("big",))):
        try:
            fitted[label], used = tv.fit_turnover(m, rows, sizes)
            print(f"fitted on {label}: {fitted[label]:.0f} ns ({len(used)} pairs)")
        except ValueError as e:
            print(f"fitted on {label}: {e}")
    keep = (lambda x: x["fitted_on"].startswith("all but")) if split == "family" else \
        (lambda x: x["fitted_on"].endswith("grid"))
    print("| fitted on | turnover ns | kernel | size | row | measured residual | predicted |\n|---|---|---|---|---|---|---|")
    step("the turnover fitted without each part, predicting it")
    for x in tv.cross(m, rows):
        if keep(x) and x["predicted"] is not None:
            print(f"| {x['fitted_on']} | {x['turnover_ns']:.0f} | {x['kernel']} | {x['size']} | {x['tile']}/{x['slots']} | "
                  f"{x['measured']:+.2f} | {x['predicted']:+.2f} |")
    step("the model with the paper grid's turnover")
    if "paper grid" in fitted:
        t = fitted["paper grid"]
        with_t = hwdata.compare(rows, gst, m=dataclasses.replace(m, turnover=t * m.clock_mhz / 1000.0))
        print(targets_line(f"with the paper grid's {t:.0f} ns", with_t))
        shipped = hwdata.compare(rows, gst)
        print(targets_line("shipped (0 ns)", shipped))
        print("| size | kernel | model best, its cost (shipped) | median err (shipped) |\n|---|---|---|---|")
        for a, b in zip(with_t, shipped):
            print(f"| {a['size']} | {a['kernel']} | {a['model_best']} {a['model_best_cost_pct']:+.1f}% "
                  f"({b['model_best']} {b['model_best_cost_pct']:+.1f}%) | {a['median_error_pct']:.1f}% "
                  f"({b['median_error_pct']:.1f}%) |")


class Score(NamedTuple):
    """The issue #29 figures over compare's summaries (score()): how many meet each target."""
    n: int
    ranked: int          # rank correlation >= 0.9
    min_rank: float
    geomean: float       # of the model best's measured cost, %
    within_2: int        # model best within 2% of the measured best
    worst: float         # the largest model-best cost, %
    median_ok: int       # median error <= 10%
    max_median: float


def score(res: list[dict]) -> Score:
    rho = [r["spearman"] for r in res]
    cost = [r["model_best_cost_pct"] for r in res]
    err = [r["median_error_pct"] for r in res]
    return Score(len(res), sum(v >= 0.9 for v in rho), min(rho), hwdata.geomean_pct(cost), sum(v <= 2 for v in cost),
                 max(cost), sum(v <= 10 for v in err), max(err))


def targets_line(label: str, res: list[dict]) -> str:
    """The issue #29 targets over `res` (compare's summaries): how many meet each."""
    x = score(res)
    return (f"{label}: rank corr >= 0.9 {x.ranked}/{x.n} (min {x.min_rank:.2f}); "
            f"model best within 2% {x.within_2}/{x.n} (geomean "
            f"{x.geomean:+.2f}%, target <= 1%; worst {x.worst:+.1f}%); "
            f"median err <= 10% {x.median_ok}/{x.n} (max {x.max_median:.1f}%)")


def leave_size_out(path: str, gpu: str = "h100-sxm") -> None:
    """Every fitted constant on one grid size's rows alone (quco/perfmodel/fit.py fit_size),
    the model on the other size's rows, beside the shipped fit (both sizes, the preset)."""
    from quco.perfmodel import fit as hwfit
    gst, m, rows = measured(path, gpu)
    step("the shipped fit's figures")
    shipped = {(r["kernel"], r["size"]): r for r in hwdata.compare(rows, gst)}
    step("every constant fitted on each grid size alone")
    held = hwfit.leave_size_out(m, gst, rows)
    fits = {r["fitted_on"]: (r["constants"], r["used"]) for r in held}
    print(f"leave one grid size out on {path} ({gpu}): every fitted constant on one size's rows, "
          "the other size predicted\n")
    print("| constant | shipped (both sizes) | " + " | ".join(f"fitted on {s} (rows)" for s in fits) + " |")
    print("|---|---|" + "---|" * len(fits))
    preset = params.description(params.gst_name(tables.unpack(gst)))
    for k in hwfit.FITTED:
        cells = [f"{c[k]:.4g} ({len(used[k])})" if used.get(k) else f"{c[k]:.4g} (no row: unfitted value)"
                 for c, used in fits.values()]
        print(f"| {k} | {preset[k]:.4g} | " + " | ".join(cells) + " |")
    print("\n| fitted on | predicted | kernel | rank corr (shipped) | model best cost (shipped) | "
          "median err (shipped) |\n|---|---|---|---|---|---|")
    for r in held:
        s = shipped[(r["kernel"], r["size"])]
        print(f"| {r['fitted_on']} | {r['size']} | {r['kernel']} | {r['spearman']:.2f} ({s['spearman']:.2f}) | "
              f"{r['model_best_cost_pct']:+.1f}% ({s['model_best_cost_pct']:+.1f}%) | "
              f"{r['median_error_pct']:.1f}% ({s['median_error_pct']:.1f}%) |")
    print()
    for size in fits:
        part = [r for r in held if r["fitted_on"] == size]
        print(targets_line(f"fitted on {size}, predicting {', '.join(dict.fromkeys(r['size'] for r in part))}", part))
        print(targets_line("  shipped fit on the same rows", [shipped[(r["kernel"], r["size"])] for r in part]))
