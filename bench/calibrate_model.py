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
    .venv/bin/python bench/calibrate_model.py --loaded   # latency under load: implied round trips, figures by S
    .venv/bin/python bench/calibrate_model.py --share    # dram_queueing 3: the figures by S and stream cost
    .venv/bin/python bench/calibrate_model.py --share-fit  # dram_queueing 3, S and stream cost fitted jointly
    .venv/bin/python bench/calibrate_model.py --share-scan # ... the whole model's log error by S and stream cost
    .venv/bin/python bench/calibrate_model.py --mva        # dram_queueing 4 (exact MVA): GST's S, then fitted jointly

This file is the entry point and the paper's side (the targets, --picks, --fit, and --inflight,
whose what-ifs run on the paper's GPUs); the H100's fits are in calibrate_h100.py (--hardware,
--leave-size-out), latency under load in calibrate_load.py (--loaded, --share, --share-fit,
--mva, --share-scan).
"""
from __future__ import annotations

import argparse
import contextlib
import time

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
from calibrate_h100 import hardware_fit, leave_size_out, measured, turnover_report
from calibrate_load import loaded, mva, share, share_fit, share_scan

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


ROW_OVERHEAD_VALUES = (0, 16, 32, 64, 128, 256, 512, 1024)  # fit()'s scan, bytes


def fit() -> None:
    """The scan that set DRAM_ROW_OVERHEAD_BYTES: papers' Fine-Tuned picks within 1%, per value."""
    saved = params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"]
    for value in ROW_OVERHEAD_VALUES:
        step(f"DRAM_ROW_OVERHEAD_BYTES {value}")
        params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"] = (value,) + saved[1:]
        search.evaluate.cache_clear()
        pk = picks("r9-nano", False) + picks("mi100", False)
        gaps = [p["gap"] for p in pk if p["gap"] is not None]
        print(f"DRAM_ROW_OVERHEAD_BYTES {value:5d}: within 1% {sum(1 for x in gaps if x <= 1.0)} of 16, "
              f"mean gap of those that fit {sum(gaps) / len(gaps):.1f}%")
    params.CONSTANTS["DRAM_ROW_OVERHEAD_BYTES"] = saved


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


# inflight()'s what-ifs on the paper side, (field, lines, other fields): none; on the ATT's path; the own
# loads: MGPUSim's L1V (16 transactions, each freed when the L1V responds: the presets'
# load_release_cycles), main's first reading (32 held for the whole round trip), the reorder buffer's 128
INFLIGHT_LIMITS = (("-", 0, {}), ("att_inflight_lines", 32, {}), ("att_inflight_lines", 256, {}),
                   ("load_inflight_lines", 16, {}), ("load_inflight_lines", 32, {"load_release_cycles": 0}),
                   ("load_inflight_lines", 128, {}))


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
    for field, lines, also in INFLIGHT_LIMITS:
        step(f"the paper side with {field} {lines or 'none'}")
        with _with_limits({"att_inflight_lines": 0, "load_inflight_lines": 0, **({field: lines} if lines else {}), **also}):
            pk = picks("r9-nano", False) + picks("mi100", False)
            r9, r530 = rows("r9-nano", ablations=False), rows("radeon-530", ablations=False)
        ok = sum(1 for x in pk if x["gap"] is not None and x["gap"] <= 1.0)
        per = ", ".join(f"{n} {_att_gain(by):.2f}" for n, by in r9.items())
        print(f"| {field} | {lines or 'none'}{' (held the whole round trip)' if also else ''} | {ok} | {per} | "
              f"{max(_att_gain(by) for by in r530.values()):.2f} |")


def _then_turnover(run, split: str):
    """An H100 fit (calibrate_h100.py), then the turnover's report left out by `split`."""
    return lambda path: (run(path), turnover_report(path, split))


def _modes(families: int) -> tuple:
    """Each mode that takes a CSV: (flag, --help text, what it runs, its step count: the step()
    calls its functions make, one row here so a mode's count sits beside it). In --help's order;
    the first given runs."""
    return (("--hardware", None, _then_turnover(hardware_fit, "family"), 3 + 4),
            ("--leave-size-out", None, _then_turnover(leave_size_out, "size"), 2 + 4),
            ("--inflight", "the per-CU limit on bytes in flight: the H100's lower bound, the paper side's what-ifs",
             inflight, 1 + 2 * families + len(INFLIGHT_LIMITS)),
            ("--loaded", "latency under load: the round trips the H100 rows imply, the #29 figures by S", loaded, 11),
            ("--share", "the DRAM share at the closed loop's utilisation (dram_queueing 3): the #29 figures by S and "
             "stream cost", share, 9),
            ("--share-fit", "dram_queueing 3 with S and the stream cost fitted jointly: the #29 figures, both leave-outs",
             share_fit, 7 + families),
            ("--mva", "dram_queueing 4 (exact MVA): S from the GST, then fitted jointly with the stream cost, both "
             "leave-outs, the rule", mva, 13 + families),
            ("--share-scan", "dram_queueing 3: the whole model's log error on a grid of S and stream cost (about 3 "
             "minutes)", share_scan, 20))


if __name__ == "__main__":
    from quco.perfmodel.fit import FAMILIES
    modes = _modes(len(FAMILIES))
    ap = argparse.ArgumentParser()
    ap.add_argument("--picks", action="store_true")
    ap.add_argument("--fit", action="store_true")
    dests = [ap.add_argument(flag, nargs="?", const=str(hwdata.DEFAULT_DATA), metavar="CSV", help=text).dest
             for flag, text, _, _ in modes]
    args = ap.parse_args()
    # progress on stderr (the step() calls; targets() makes 5), stdout as without it
    flag, run, total, path = next(((f, r, n, getattr(args, d)) for (f, _, r, n), d in zip(modes, dests) if getattr(args, d)),
                                  ("--fit", None, len(ROW_OVERHEAD_VALUES), None) if args.fit else ("", None, 5, None))
    with Steps("calibrate_model" + (f" {flag}" if flag else ""), "step", total):
        if run:
            run(path)
        elif args.fit:
            fit()
        else:
            targets(args.picks)
