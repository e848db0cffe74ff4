"""The performance model against the paper's evaluation (issue #20's targets), printed as a
table: each target, the model's value, met or not. Calibration data are the R9 Nano and
MI100 Fine-Tuned columns (shared/paper-data/quco-results.md) and the R9 Nano's Fig. 6; the
Radeon 530 runs last and only as predictions (nothing is compared with its held-back
columns). Nothing here feeds back into the model.

    .venv/bin/python bench/calibrate_model.py            # targets + Radeon 530 predictions
    .venv/bin/python bench/calibrate_model.py --picks    # also every kernel's pick table
    .venv/bin/python bench/calibrate_model.py --fit      # the DRAM_ROW_OVERHEAD_BYTES scan
    .venv/bin/python bench/calibrate_model.py --hardware # the H100 fit and leave-one-family-out
    .venv/bin/python bench/calibrate_model.py --leave-size-out  # the H100 fit on one grid size, the other predicted
    .venv/bin/python bench/calibrate_model.py --inflight # the per-CU limit on bytes in flight (a few minutes)
    .venv/bin/python bench/calibrate_model.py --share-fit  # dram_queueing 3, S and stream cost fitted jointly
    .venv/bin/python bench/calibrate_model.py --share-scan # ... the whole model's log error by S and stream cost
    .venv/bin/python bench/calibrate_model.py --mva        # dram_queueing 4 (exact MVA): GST's S, then fitted jointly
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import math
import time
from typing import NamedTuple

from quco.perfmodel import hardware as hwdata
from quco.gst import tables
from quco.paper import claims
from quco.paper.ours import kernel_dir
from quco.kernel.format import load_kernel
from quco.harness import evaluate as ev
from quco.perfmodel import params, search
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work, fits

from _progress import Steps, step

def _paper_fine_tuned() -> dict:
    """The paper's Fine-Tuned column (tile / slots; one slot count, read as the streaming queues'),
    {gpu: {kernel name: (tile, slots)}}, read from the scorecard's claims (quco/paper/claims.toml): the
    paper's data has one copy in the project."""
    out: dict = {}
    for c in claims.load():
        if c.measure == "model_pick" and c.args.get("case") == "ATT/Fine-Tuned":
            gpu = c.args["gpu"]
            name = load_kernel(kernel_dir(gpu) / f"{c.args['kernel']}.json").name
            out.setdefault(gpu, {})[name] = (c.tiles[0], c.slots[0])
    return out


FINE_TUNED = _paper_fine_tuned()
MATRIX = ("Matrix-Matrix", "Matrix-Matrix + Reduction", "Batched Matrix-Matrix")
OTHERS = ("NoATT/Fine-Tuned", "ATT/Informed-Tuned", "ATT/Non-Tuned")
ABOVE = 1.01  # "above" on Fig. 6: by 1% or more (a model's sub-percent difference is a tie)


def kernels(gpu: str) -> list:
    return [load_kernel(p) for p in sorted(kernel_dir(gpu).glob("*.json"))]


def paper_pick(work: Work, ranked, tile: int, slots: int):
    """The paper's pick on the model: its tile and slots on the streaming queues, the best
    stationary slots (the paper gives one count). None when it does not fit (the ranked
    space holds every configuration that fits)."""
    return next((r for r in ranked if r.config.tile == tile
                 and all(s == slots for q, s in zip(work.queues, r.config.slots) if q.type == 0)), None)


def picks(gpu: str, show: bool) -> list[dict]:
    g = tables.unpack(tables.load(gpu))
    m = machine(g)
    out = []
    for k in kernels(gpu):
        work = Work.of(k)
        ranked = search.exhaustive(m, g, work)
        best = ranked[0].outcome.cycles
        near = sum(1 for r in ranked if r.outcome.cycles <= 1.01 * best)
        p = paper_pick(work, ranked, *FINE_TUNED[gpu][k.name])
        gap = 100 * (p.outcome.cycles / best - 1) if p else None
        out.append({"gpu": gpu, "kernel": k.name, "gap": gap, "near": near, "space": len(ranked)})
        if show:
            print(f"| {gpu} | {k.name} | {ranked[0].config.label(work)} | {near} / {len(ranked)} | "
                  f"{'%d / %d' % FINE_TUNED[gpu][k.name]} | "
                  f"{('%+.1f%% (%s)' % (gap, p.config.label(work))) if p else 'does not fit'} |")
    return out


def rows(gpu: str, ablations: bool) -> dict:
    gst = tables.load(gpu)
    return {k.name: {r["case"]: r for r in ev.kernel_rows(gpu, gst, k, ablations=ablations)} for k in kernels(gpu)}


def perf(r: dict, case: str) -> float:
    """Performance normalised to the ideal (1 = ideal), 0 when the case has no configuration."""
    row = r.get(case)
    return row["ideal_cycles"] / row["cycles"] if row and row["cycles"] else 0.0


def verdict(name: str, ours: str, ok: bool) -> None:
    print(f"| {name} | {ours} | {'met' if ok else 'NOT met'} |")


def fig1(r9: dict, others: dict) -> tuple[float, str]:
    """The R9 Nano's Matrix-Matrix Fine-Tuned pick on the other paper GPUs: worst slowdown."""
    worst, where = 0.0, ""
    src = r9["Matrix-Matrix"]["ATT/Fine-Tuned"]
    cfg = Config(src["tile"], tuple(int(s) for s in src["slots"].split("/")))
    for gpu, by in others.items():
        g = tables.unpack(tables.load(gpu))
        m = machine(g)
        k = next(k for k in kernels(gpu) if k.name == "Matrix-Matrix")
        work = Work.of(k)
        fine = by["Matrix-Matrix"]["ATT/Fine-Tuned"]["cycles"]
        if fits(work, cfg, m.lds_bytes, m.barrier_limit):
            s = search.evaluate(m, work, cfg).cycles / fine
            if s > worst:
                worst, where = s, gpu
    return worst, where


def targets(show_picks: bool) -> None:
    if show_picks:
        print("| GPU | kernel | model best | within 1% | paper Fine-Tuned | its gap on the model |")
        print("|---|---|---|---|---|---|")
    step("the paper's Fine-Tuned picks on the model: R9 Nano, MI100")
    pk = picks("r9-nano", show_picks) + picks("mi100", show_picks)
    step("the R9 Nano's cases and ablations")
    r9 = rows("r9-nano", ablations=True)
    step("the MI100's cases")
    mi = rows("mi100", ablations=False)
    step("the Radeon 530's cases")
    r530 = rows("radeon-530", ablations=False)
    print("\n| target | model | verdict |\n|---|---|---|")
    for name, by in r9.items():
        top = min(perf(by, "QuCo"), perf(by, "ATT/Fine-Tuned"))
        other = max(perf(by, c) for c in OTHERS)
        low = perf(by, "NoATT/Non-Tuned") <= min(perf(by, c) for c in OTHERS + ("ATT/Fine-Tuned", "QuCo"))
        verdict(f"Fig. 6 {name}: QuCo, ATT/Fine-Tuned above (by 1% or more) NoATT/FT, Informed, Non-Tuned; "
                "NoATT/NT lowest",
                f"QuCo {perf(by, 'QuCo'):.3f}, FT {perf(by, 'ATT/Fine-Tuned'):.3f}, best other {other:.3f}, "
                f"NoATT/NT {perf(by, 'NoATT/Non-Tuned'):.3f}", top >= ABOVE * other and low)
    mm, mv = perf(r9["Matrix-Matrix"], "ATT/Fine-Tuned"), perf(r9["Matrix-Vector"], "ATT/Fine-Tuned")
    verdict("Fig. 6: Matrix-Matrix at most 0.5 of the ideal", f"{mm:.2f}", mm <= 0.5)
    verdict("Fig. 6: Matrix-Vector at least 0.85 of the ideal", f"{mv:.2f}", mv >= 0.85)
    b = r9["Batched Matrix-Matrix"]
    gain = perf(b, "ATT/Fine-Tuned") / perf(b, "NoATT/Fine-Tuned") - 1 if perf(b, "NoATT/Fine-Tuned") else float("inf")
    verdict("Fig. 6: Batched MM, ATT/Fine-Tuned over NoATT/Fine-Tuned under 10%", f"{100 * gain:+.1f}%", gain < 0.10)
    within = sum(1 for p in pk if p["gap"] is not None and p["gap"] <= 1.0)
    misses = ", ".join(f"{p['gpu']} {p['kernel']} " + (f"{p['gap']:+.1f}%" if p["gap"] is not None else "no fit")
                       for p in pk if p["gap"] is None or p["gap"] > 1.0)
    verdict("paper's Fine-Tuned pick within 1% of the model's best, of 16", f"{within} (misses: {misses})", within >= 15)
    crowd = max((p["near"] / p["space"], p["gpu"], p["kernel"]) for p in pk if p["kernel"] in MATRIX)
    verdict("at most a third of each matrix kernel's space within 1% of its best",
            f"worst {100 * crowd[0]:.0f}% ({crowd[1]} {crowd[2]})", crowd[0] <= 1 / 3)
    cu = {n: r9[n]["QuCo -CU"]["cycles"] / r9[n]["ATT/Fine-Tuned"]["cycles"] - 1 for n in MATRIX
          if r9[n].get("QuCo -CU", {}).get("cycles")}
    verdict("Fig. 7: CU-aware off costs the matrix kernels 5-30%",
            ", ".join(f"{n} {100 * v:+.0f}%" for n, v in cu.items()), all(0.05 <= v <= 0.30 for v in cu.values()))
    ci = r9["Matrix-Matrix + Reduction"].get("QuCo -CU -Little -CI", {})
    civ = ci["cycles"] / ci["fine_cycles"] - 1 if ci.get("cycles") else None
    verdict("Fig. 7: CI scaling off as well costs MM+Reduction 25-50%",
            f"{100 * civ:+.0f}% ({ci.get('config')})" if civ is not None else "n/a",
            civ is not None and 0.25 <= civ <= 0.50)
    best = max((perf(by, "ATT/Fine-Tuned") / perf(by, "NoATT/Fine-Tuned"), n) for n, by in r530.items()
               if perf(by, "NoATT/Fine-Tuned"))
    verdict("Fig. 10: Radeon 530, ATT/Fine-Tuned at least 1.5x NoATT/Fine-Tuned on some kernel",
            f"best {best[0]:.2f}x ({best[1]})", best[0] >= 1.5)
    s, where = fig1(r9, {"mi100": mi, "radeon-530": r530})
    verdict("Fig. 1: the R9 Nano's Matrix-Matrix pick 1.1-1.6x slower on another paper GPU",
            f"{s:.2f}x ({where})", 1.1 <= s <= 1.6)
    step("the 9-queue kernels' search, timed")
    g = tables.unpack(tables.load("r9-nano"))
    worst = 0.0
    for k in kernels("r9-nano"):
        if len(k.queues) >= 9:
            search.evaluate.cache_clear()
            t = time.perf_counter()
            search.exhaustive(machine(g), g, Work.of(k))
            worst = max(worst, time.perf_counter() - t)
    verdict("exhaustive search of a 9-queue kernel, one core, at most 1 s", f"{worst:.2f} s (slowest, R9 Nano)", worst <= 1)
    print("\nRadeon 530 predictions (its paper columns are held back; nothing is compared):\n")
    print("| kernel | Fine-Tuned on the model | QuCo | QuCo's gap |\n|---|---|---|---|")
    for n, by in r530.items():
        q = by.get("QuCo", {})
        print(f"| {n} | {by['ATT/Fine-Tuned']['config']} | {q.get('config')} | "
              + (f"{q['vs_fine_pct']:+.1f}% |" if q.get("vs_fine_pct") is not None else "n/a |"))


def fit() -> None:
    """The scan that set DRAM_ROW_OVERHEAD_BYTES: papers' Fine-Tuned picks within 1%, per value."""
    saved = params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"]
    for value in (0, 16, 32, 64, 128, 256, 512, 1024):
        step(f"DRAM_ROW_OVERHEAD_BYTES {value}")
        params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"] = (value,) + saved[1:]
        search.evaluate.cache_clear()
        pk = picks("r9-nano", False) + picks("mi100", False)
        gaps = [p["gap"] for p in pk if p["gap"] is not None]
        print(f"DRAM_ROW_OVERHEAD_BYTES {value:5d}: within 1% {sum(1 for x in gaps if x <= 1.0)} of 16, "
              f"mean gap of those that fit {sum(gaps) / len(gaps):.1f}%")
    params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"] = saved


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
        print(_targets_line(f"with the paper grid's {t:.0f} ns", with_t))
        shipped = hwdata.compare(rows, gst)
        print(_targets_line("shipped (0 ns)", shipped))
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


def _targets_line(label: str, res: list[dict]) -> str:
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
        print(_targets_line(f"fitted on {size}, predicting {', '.join(dict.fromkeys(r['size'] for r in part))}", part))
        print(_targets_line("  shipped fit on the same rows", [shipped[(r["kernel"], r["size"])] for r in part]))


@contextlib.contextmanager
def _with_limits(values: dict):
    """params.description with [model] fields replaced on every GPU but the H100 (a what-if of
    this bench only: the presets keep their values)."""
    orig = params.description
    params.description = lambda name: {**orig(name), **(values if name != "H100 SXM" else {})}
    try:
        yield
    finally:
        params.description = orig


def _att_gain(by: dict) -> float:
    """ATT/Fine-Tuned over NoATT/Fine-Tuned of one kernel's cases (rows())."""
    return perf(by, "ATT/Fine-Tuned") / max(perf(by, "NoATT/Fine-Tuned"), 1e-12)


def inflight(path: str) -> None:
    """The per-CU limit on bytes in flight (issue #29): the H100's measured lower bound on an
    SM's ATT limit, on all rows and on each kernel family alone (fit.inflight_floor), then the
    paper side with MGPUSim's L1V limits (lines of 64 bytes) put on the ATT's path or on the
    wavefronts' own loads (NoATT): 16 concurrent transactions (the versions the paper can have
    used), 32 MSHRs (2026), a 128-entry reorder buffer; docs/perf-model-not-shipped.md, "What MGPUSim's
    source says about NoATT"."""
    from quco.perfmodel import fit as hwfit
    gst, m, h100 = measured(path, "h100-sxm")  # not `rows`: the paper side below calls rows()
    print("H100: the largest ATT limit (KiB an SM) that a measured row contradicts (the model with it "
          f"> {1 + hwfit.FLOOR_TOL:.2f}x the measured time and the model without it); the limit is above it")
    print("| rows of | lower bound | rows contradicting it |\n|---|---|---|")
    without = [(f"all but {f}", tuple(k for k in hwdata.COMPARED if k not in ms)) for f, ms in hwfit.FAMILIES.items()]
    for name, members in (("all", hwdata.COMPARED), *hwfit.FAMILIES.items(), *without):
        step(f"the H100's lower bound on the rows of {name}")
        kib, bad = hwfit.inflight_floor(m, gst, h100, kernels=members)
        where = sorted({f"{k} {sz} {t}" for k, sz, t, *_ in bad})
        print(f"| {name} | {kib} KiB | {len(bad)}: {', '.join(where)} |")
    print("\npaper side (R9 Nano Fig. 6 and the Table III picks; Radeon 530 Fig. 10) with a limit of N lines on a path:")
    print("| path | lines | paper Fine-Tuned within 1% (of 16) | R9 Nano ATT/FT over NoATT/FT, per kernel | "
          "Radeon 530 best ATT/FT over NoATT/FT |\n|---|---|---|---|---|")
    # the own loads: MGPUSim's L1V (16 transactions, each freed when the L1V responds: the presets'
    # load_release_cycles), main's first reading (32 held for the whole round trip), the reorder buffer's 128
    for field, lines, also in (("-", 0, {}), ("att_inflight_lines", 32, {}), ("att_inflight_lines", 256, {}),
                               ("load_inflight_lines", 16, {}), ("load_inflight_lines", 32, {"load_release_cycles": 0}),
                               ("load_inflight_lines", 128, {})):
        step(f"the paper side with {field} {lines or 'none'}")
        with _with_limits({"att_inflight_lines": 0, "load_inflight_lines": 0, **({field: lines} if lines else {}), **also}):
            pk = picks("r9-nano", False) + picks("mi100", False)
            r9, r530 = rows("r9-nano", ablations=False), rows("radeon-530", ablations=False)
        ok = sum(1 for x in pk if x["gap"] is not None and x["gap"] <= 1.0)
        per = ", ".join(f"{n} {_att_gain(by):.2f}" for n, by in r9.items())
        print(f"| {field} | {lines or 'none'}{' (held the whole round trip)' if also else ''} | {ok} | {per} | "
              f"{max(_att_gain(by) for by in r530.values()):.2f} |")


def loaded(path: str, gpu: str = "h100-sxm") -> None:
    """Latency under load (docs/perf-model-not-shipped.md, "Latency under load"): the round trip each measured
    streaming row implies (reads in flight an SM, Triton's slots - 1 tiles a queue of the resident
    work-groups, over the SM's read rate, the launch taken off) by DRAM utilisation, beside the
    M/M/1 round trip R0 + S u / (1 - u); then the #29 figures per S and way of finding u (S 0: the
    shipped model; every preset carries dram_queueing 0); last, the ties the closed loop breaks."""
    from quco.perfmodel.memory import loaded_delay
    gst, m, rows = measured(path, gpu)
    ns = 1000.0 / m.clock_mhz
    r0, s_ns = (m.lat_att + m.lat_dram) * ns, m.dram_queue_service * ns  # S from the GST (presets: mode 0, off)
    peak = m.dram_bytes_per_cycle * m.clock_mhz / 1000.0  # GB/s = B/ns, the sustained copy ceiling
    bins: dict = {}
    for r in rows:
        if (r.variant != "att" or not r.fits or not r.tile or r.slots < 2 or r.tile < 512
                or r.kernel not in ("Elementwise", "ElementwiseK", "Sumvectors")):
            continue  # the streaming kernels: no reduction or shared operand in the step
        w = Work.of(hwdata.scaled_kernel(r.kernel, r.work_groups))
        per_sm = math.ceil(r.work_groups / m.cus)
        res = min(hwdata.measured_residency(m, w, r.tile, r.slots), per_sm)
        reads = sum(w.pass_length(i) * q.elem_size for i, q in enumerate(w.queues)) * w.passes
        t = (r.time_us * 1000.0 - m.launch * ns)
        inflight = res * sum(min(r.slots - 1, w.tiles(i, r.tile)) * min(r.tile, w.pass_length(i)) * q.elem_size
                             for i, q in enumerate(w.queues))
        u = (reads + w.output_bytes) * r.work_groups / t / peak
        b = min(int(u * 10), 9)
        bins.setdefault((r.size, b), []).append(inflight / (reads * per_sm / t))
    print(f"implied round trip (ns) of the streaming rows (tiles >= 512, >= 2 slots) by DRAM utilisation "
          f"(of the {peak:.0f} GB/s ceiling); M/M/1: R0 {r0:.0f} + S {s_ns:.0f} x u / (1 - u):")
    print("| utilisation | big: rows, median | paper: rows, median | M/M/1 at the bin's middle |\n|---|---|---|---|")
    for b in range(10):
        cells = []
        for size in ("big", "paper"):
            v = sorted(bins.get((size, b), []))
            cells.append(f"{len(v)}, {v[len(v) // 2]:.0f}" if v else "-")
        u = (b + 0.5) / 10
        print(f"| {b / 10:.1f}-{(b + 1) / 10:.1f} | {cells[0]} | {cells[1]} | {r0 + s_ns * u / (1 - u):.0f} |")
    print(f"\nloaded_delay (cycles) of a closed loop at R0 = {r0 / ns:.0f} cycles, S = {m.dram_queue_service:.0f}: "
          + ", ".join(f"w {f:g} R0: {loaded_delay(m.dram_queue_service, r0 / ns, f * r0 / ns):.0f}" for f in (0.25, 0.5, 1, 2, 4)))
    print("\nthe #29 figures by S (ns; lat_dram - lat_l2 of the measured chains is the physical one) and how u "
          "is found (1: the closed loop of the configuration's bytes in flight; 2: the simulated utilisation "
          "over the last idle round trip); S 0 is the shipped model:")
    print("| S | u | size | rank >= 0.9 | min rank | model best: geomean, worst | within 2% | max median err | "
          "signed err |\n|---|---|---|---|---|---|---|---|---|")
    for s, mode in ((0.0, 0), (50.0, 1), (100.0, 1), (s_ns, 1), (300.0, 1), (400.0, 1), (600.0, 1),
                    (100.0, 2), (s_ns, 2), (400.0, 2)):
        step(f"S {s:.0f} ns, u {mode}")
        res = hwdata.compare(rows, gst, m=dataclasses.replace(m, dram_queue_service=s / ns, dram_queue_mode=mode))
        for size in ("big", "paper", "both"):
            rs = [r for r in res if size in (r["size"], "both")]
            x, sg = score(rs), [r["mean_signed_error_pct"] for r in rs]
            print(f"| {s:.0f} | {mode} | {size} | {x.ranked} of {x.n} | {x.min_rank:.2f} | "
                  f"{x.geomean:+.2f}%, {x.worst:+.1f}% | {x.within_2} | {x.max_median:.1f}% | "
                  f"{min(sg):+.1f}..{max(sg):+.1f}% |")
    print("\nwhat moves the model's best on the paper grid (closed loop at the GST's S): the model's times (us) "
          "of Elementwise 8192/5..7, one work-group an SM, against the measured:")
    step("the paper grid's Elementwise at u 0 and 1")
    paper = [r for r in rows if r.size == "paper"]
    for mode in (0, 1):
        res = hwdata.compare(paper, gst, kernels=("Elementwise",), m=dataclasses.replace(m, dram_queue_mode=mode))
        pts = {(p.tile, p.slots): p for p in res[0]["points"]}
        print(f"  u {mode}: " + ", ".join(f"8192/{k} {pts[(8192, k)].model_us:.4f} (measured {pts[(8192, k)].measured_us})"
                                          for k in (5, 6, 7)) + f"; model best {res[0]['model_best']}")


def share(path: str, gpu: str = "h100-sxm") -> None:
    """The DRAM share at the closed loop's utilisation (dram_queueing 3; docs/perf-model-results.md, "What
    is still missed": evaluated, not shipped): the #29 figures per S and stream cost with the other
    constants as shipped, then with the stream cost refitted (fit.fit_streams, u in its bound)."""
    gst, m, rows = measured(path, gpu)
    ns = 1000.0 / m.clock_mhz

    def figures(mm, label):
        step(label)
        res = hwdata.compare(rows, gst, m=mm)
        x = score(res)
        per = ", ".join(f"{r['kernel']} {r['size']} {r['spearman']:.2f} {r['model_best']} {r['model_best_cost_pct']:+.1f}%"
                        for r in res)
        print(f"| {label} | {x.ranked} of {x.n} (min {x.min_rank:.2f}) | "
              f"{x.geomean:+.2f}%, {x.worst:+.1f}% | {x.max_median:.1f}% | {per} |")

    print("the DRAM share at the closed loop's utilisation (S ns, stream cost; 0: the shipped model):")
    print("| S, stream cost | rank >= 0.9 | model best: geomean, worst | max median err | per kernel: rank, best, its cost |")
    print("|---|---|---|---|---|")
    figures(m, "shipped")
    s_gst = m.dram_queue_service * ns
    for s_ns, cost in ((100.0, m.dram_stream_cost), (s_gst, m.dram_stream_cost), (300.0, m.dram_stream_cost),
                       (s_gst, 0.7e-5), (s_gst, 3e-5), (s_gst, 5e-5)):
        figures(dataclasses.replace(m, dram_queue_service=s_ns / ns, dram_queue_mode=3, dram_stream_cost=cost),
                f"{s_ns:.0f}, {cost:.2g}")
    mm = dataclasses.replace(m, dram_queue_mode=3)
    from quco.perfmodel import fit as hwfit
    step("the stream cost refitted")
    c, _ = hwfit.fit_streams(mm, rows)
    figures(dataclasses.replace(mm, dram_stream_cost=c), f"{m.dram_queue_service * ns:.0f}, {c:.3g} (refitted)")


def share_fit(path: str, gpu: str = "h100-sxm", share=None) -> None:
    """dram_queueing 3 (share: sharefit.fit_share) or 4 (sharefit.fit_mva) calibrated jointly (S and
    the stream cost by least squares of log(model / measured) over the big grid's bandwidth-bound
    rows, the rows fit_streams uses; every other constant refitted around them by
    fit.fit(share=share)): the constants and their rows, the #29 figures against the shipped model,
    leave one kernel family out and leave one grid size out beside the shipped fit's, and the
    acceptance rule of docs/perf-model-not-shipped.md ("Latency under load") applied."""
    from quco.perfmodel import fit as hwfit, sharefit
    share = share or sharefit.fit_share
    mode = share.dram_queue_mode
    gst, m, rows = measured(path, gpu)
    ns = 1000.0 / m.clock_mhz
    print(f"dram_queueing {mode}: the stated fit alone ({share.__name__}) on each grid's rows, S ns / stream cost / rms log error:")
    for size in ("big", "paper"):
        step(f"the stated fit on the {size} grid's rows")
        got, used = share(m, rows, size=size)
        print(f"  {size} ({len(used)} rows): S {got['dram_queue_cycles'] * ns:.0f} ns, cost {got['dram_stream_cost']:.3g}, "
              f"rms {got['rms_log']:.4f}")
    step("the stated fit on both grids' rows")
    terms = sharefit.share_terms(m, rows, "big") + sharefit.share_terms(m, rows, "paper")
    s_both, c_both, rms = sharefit.fit_share_terms(terms, mode)
    print(f"  both ({len(terms)} rows): S {s_both * ns:.0f} ns, cost {c_both:.3g}, rms {rms:.4f}")
    for family, members in hwfit.FAMILIES.items():
        step(f"the stated fit on {family} alone")
        try:
            got, used = share(m, rows, members)
        except ValueError as e:
            print(f"  big, {family} alone: {e}")
            continue
        print(f"  big, {family} alone ({len(used)} rows): S {got['dram_queue_cycles'] * ns:.0f} ns, "
              f"cost {got['dram_stream_cost']:.3g}, rms {got['rms_log']:.4f}")
    step("every constant refitted")
    c, used = hwfit.fit(m, gst, rows, share=share)
    print(f"\nevery constant refitted with dram_queueing {mode} (fit.fit(share=sharefit.{share.__name__})), its rows:")
    for k, v in c.items():
        print(f"  {k} = {v * ns if k == 'dram_queue_cycles' else v:.4g}{' ns' if k == 'dram_queue_cycles' else ''}")
    print_used(used)
    step("the joint fit's figures and the shipped")
    joint_m = hwfit.with_constants(hwfit.share_mode(m, share), c)
    shipped, joint = hwdata.compare(rows, gst, m=m), hwdata.compare(rows, gst, m=joint_m)
    print("\n| size | kernel | rank corr (shipped) | model best, its cost (shipped) | median err (shipped) |")
    print("|---|---|---|---|---|")
    for a, b in zip(joint, shipped):
        print(f"| {a['size']} | {a['kernel']} | {a['spearman']:.3f} ({b['spearman']:.3f}) | {a['model_best']} "
              f"{a['model_best_cost_pct']:+.2f}% ({b['model_best']} {b['model_best_cost_pct']:+.2f}%) | "
              f"{a['median_error_pct']:.1f}% ({b['median_error_pct']:.1f}%) |")
    print(_targets_line("joint", joint))
    print(_targets_line("shipped", shipped))
    both_m = hwfit.with_constants(joint_m, {"dram_queue_cycles": s_both, "dram_stream_cost": c_both})
    print(_targets_line("S and cost from both grids' rows, the rest as the joint fit", hwdata.compare(rows, gst, m=both_m)))
    step("leave one kernel family out, joint and shipped")
    loo_j, loo_s = hwfit.leave_one_out(m, gst, rows, share=share), hwfit.leave_one_out(m, gst, rows)
    print("\nleave one kernel family out (fit without it, predict it), joint (shipped fit's stages):")
    print("| held out | S ns, stream cost | size | kernel | rank corr | model best cost | median err |\n|---|---|---|---|---|---|---|")
    _joint_rows("held_out", loo_j, loo_s, ns)
    print(_targets_line("joint, families held out", loo_j))
    print(_targets_line("shipped stages, families held out", loo_s))
    step("leave one grid size out, joint and shipped")
    lso_j, lso_s = hwfit.leave_size_out(m, gst, rows, share=share), hwfit.leave_size_out(m, gst, rows)
    print("\nleave one grid size out (fit on one size alone, predict the other), joint (shipped fit's stages):")
    print("| fitted on | S ns, stream cost | predicted | kernel | rank corr | model best cost | median err |\n"
          "|---|---|---|---|---|---|---|")
    _joint_rows("fitted_on", lso_j, lso_s, ns)
    for size in dict.fromkeys(r["fitted_on"] for r in lso_j):
        print(_targets_line(f"joint, fitted on {size}", [r for r in lso_j if r["fitted_on"] == size]))
        print(_targets_line(f"shipped stages, fitted on {size}", [r for r in lso_s if r["fitted_on"] == size]))
    print("\nacceptance (set before the run): " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in
          accept(joint, shipped, loo_j, loo_s, lso_j, lso_s).items()))


def mva(path: str, gpu: str = "h100-sxm") -> None:
    """dram_queueing 4, the DRAM share at exact MVA's utilisation of the closed loop
    (docs/perf-model-not-shipped.md, "Latency under load"): the curve beside mode 3's open-queue
    form; (a) S from the GST (lat_dram - lat_l2), nothing fitted, the other constants as shipped;
    (b) S and the stream cost fitted jointly (share_fit with sharefit.fit_mva: both leave-outs, the
    rule)."""
    from quco.perfmodel import sharefit
    from quco.perfmodel.memory import loaded_utilisation, mva_utilisation
    gst, m, rows = measured(path, gpu)
    ns, s, r0 = 1000.0 / m.clock_mhz, m.dram_queue_service, m.lat_att + m.lat_dram
    print(f"the share's utilisation at R0 {r0:.0f} cycles, S {s:.0f} (GST), by w / R0 (mode 3 open-queue / mode 4 MVA):")
    print("  " + ", ".join(f"{f:g}: {loaded_utilisation(s, r0, f * r0):.4f} / {mva_utilisation(s, r0, f * r0):.6f}"
                           for f in (0.25, 0.5, 1, 1.5, 2, 2.8, 4, 8, 16)))

    def figures(mm, label):
        step(label)
        res = hwdata.compare(rows, gst, m=mm)
        per = ", ".join(f"{r['kernel']} {r['size']} {r['spearman']:.2f} {r['model_best']} {r['model_best_cost_pct']:+.1f}%"
                        for r in res)
        print(f"{_targets_line(label, res)}\n    {per}")
    print("\n(a) S from the GST, nothing fitted, the other constants as shipped:")
    figures(m, "shipped (mode 0)")
    figures(dataclasses.replace(m, dram_queue_mode=3), f"mode 3, S {s * ns:.0f} ns")
    figures(dataclasses.replace(m, dram_queue_mode=4), f"mode 4, S {s * ns:.0f} ns")
    for s_ns in (100.0, 300.0, 400.0):
        figures(dataclasses.replace(m, dram_queue_mode=4, dram_queue_service=s_ns / ns), f"mode 4, S {s_ns:.0f} ns")
    print("\n(b) S and the stream cost fitted jointly (sharefit.fit_mva):")
    share_fit(path, gpu, sharefit.fit_mva)


def _joint_rows(key: str, joint: list[dict], shipped: list[dict], ns: float) -> None:
    """--share-fit's leave-out table rows: the joint fit's figures, the shipped stages' in brackets
    (`key`: the rows' "held_out" or "fitted_on")."""
    for a, b in zip(joint, shipped):
        print(f"| {a[key]} | {a['constants']['dram_queue_cycles'] * ns:.0f}, {a['constants']['dram_stream_cost']:.3g} "
              f"({b['constants']['dram_stream_cost']:.3g}) | {a['size']} | {a['kernel']} | {a['spearman']:.2f} "
              f"({b['spearman']:.2f}) | {a['model_best_cost_pct']:+.1f}% ({b['model_best_cost_pct']:+.1f}%) | "
              f"{a['median_error_pct']:.1f}% ({b['median_error_pct']:.1f}%) |")


def share_scan(path: str, gpu: str = "h100-sxm") -> None:
    """The whole model's rms log error (model / measured) over every TMA row, per grid, and the
    rank >= 0.9 count, on a grid of S and stream cost with dram_queueing 3 and the other constants
    as shipped: does the full model, not only fit_share's bound, want the stream cost at 0?"""
    from quco.perfmodel import fit as hwfit
    gst, m, rows = measured(path, gpu)
    ns = 1000.0 / m.clock_mhz
    print("| S ns | stream cost | rms log err: big, paper, both | rank >= 0.9: big, paper |\n|---|---|---|---|")
    for s in (0.0, 100.0, m.dram_queue_service * ns, 300.0, 400.0):
        for c in (0.0, 0.5e-5, m.dram_stream_cost, 3e-5):
            step(f"S {s:.0f} ns, stream cost {c:.3g}")
            mm = hwfit.with_service(dataclasses.replace(m, dram_queue_mode=3, dram_stream_cost=c), s / ns)
            res = hwdata.compare(rows, gst, m=mm)
            cells, ranks = [], []
            for size in ("big", "paper", "both"):
                e = [math.log(p.model_us / p.measured_us) for r in res if size in (r["size"], "both")
                     for p in r["points"] if p.model_us]
                cells.append(f"{math.sqrt(sum(x * x for x in e) / len(e)):.4f}")
                ranks.append(str(sum(r["spearman"] >= 0.9 for r in res if r["size"] == size)))
            print(f"| {s:.0f} | {c:.3g} | {', '.join(cells)} | {', '.join(ranks[:2])} |")


def _no_worse(a: list[dict], b: list[dict]) -> bool:
    """A leave-out of the joint fit does at least as well as the shipped one: rank count, geomean
    and max median error each no worse."""
    x, y = score(a), score(b)
    return x.ranked >= y.ranked and x.geomean <= y.geomean + 1e-9 and x.max_median <= y.max_median + 1e-9


def accept(joint, shipped, loo_j, loo_s, lso_j, lso_s) -> dict:
    """The brief's rule for shipping dram_queueing 3 or 4 (stated before each run), each clause."""
    j, s = score(joint), score(shipped)
    sizes = dict.fromkeys(r["fitted_on"] for r in lso_j)
    out = {"rank >= 0.9 on at least 8": j.ranked >= 8,
           "no model best worse than shipped by > 0.5 pt": all(
               a["model_best_cost_pct"] <= b["model_best_cost_pct"] + 0.5 for a, b in zip(joint, shipped)),
           f"geomean improves ({j.geomean:+.2f}% vs {s.geomean:+.2f}%)": j.geomean < s.geomean - 1e-9,
           f"median errors <= 10% (max {j.max_median:.1f}%)": j.max_median <= 10.0,
           "leave one family out no worse": _no_worse(loo_j, loo_s)}
    for size in sizes:
        out[f"leave size out, fitted on {size}, no worse"] = _no_worse(
            [r for r in lso_j if r["fitted_on"] == size], [r for r in lso_s if r["fitted_on"] == size])
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--picks", action="store_true")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--hardware", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV")
    ap.add_argument("--leave-size-out", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV")
    ap.add_argument("--inflight", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV",
                    help="the per-CU limit on bytes in flight: the H100's lower bound, the paper side's what-ifs")
    ap.add_argument("--loaded", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV",
                    help="latency under load: the round trips the H100 rows imply, the #29 figures by S")
    ap.add_argument("--share", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV",
                    help="the DRAM share at the closed loop's utilisation (dram_queueing 3): the #29 figures by S and stream cost")
    ap.add_argument("--share-fit", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV",
                    help="dram_queueing 3 with S and the stream cost fitted jointly: the #29 figures, both leave-outs")
    ap.add_argument("--mva", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV",
                    help="dram_queueing 4 (exact MVA): S from the GST, then fitted jointly with the stream cost, both leave-outs, the rule")
    ap.add_argument("--share-scan", nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV",
                    help="dram_queueing 3: the whole model's log error on a grid of S and stream cost (about 3 minutes)")
    args = ap.parse_args()
    from quco.perfmodel.fit import FAMILIES
    # each mode's steps, as its functions call step(): progress on stderr, stdout as without it
    mode, total = next(((o, n) for o, n in (("mva", 13 + len(FAMILIES)), ("share_scan", 20), ("share_fit", 7 + len(FAMILIES)),
                                            ("share", 9), ("loaded", 11), ("leave_size_out", 6),
                                            ("inflight", 7 + 2 * len(FAMILIES)), ("hardware", 7), ("fit", 8))
                        if getattr(args, o)), ("", 5))
    with Steps("calibrate_model" + (f" --{mode.replace('_', '-')}" if mode else ""), "step", total):
        if args.mva:
            mva(args.mva)
        elif args.share_scan:
            share_scan(args.share_scan)
        elif args.share_fit:
            share_fit(args.share_fit)
        elif args.share:
            share(args.share)
        elif args.loaded:
            loaded(args.loaded)
        elif args.leave_size_out:
            leave_size_out(args.leave_size_out)
            turnover_report(args.leave_size_out, "size")
        elif args.inflight:
            inflight(args.inflight)
        elif args.hardware:
            hardware_fit(args.hardware)
            turnover_report(args.hardware, "family")
        elif args.fit:
            fit()
        else:
            targets(args.picks)
