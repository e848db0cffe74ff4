"""The performance model against a real GPU's measurements (issue #29), printed, not asserted.

    .venv/bin/python bench/hardware.py [FILE.csv] [--gpu h100-sxm] [--plot DIR] [--no-quco]

FILE is a measurement file in the format of quco/examples/hardware/h100-tma-sweep.csv (default:
that file). Per kernel x size: Spearman rank correlation of the model's and the measured
times, the measured cost of the model's best configuration and of QuCo's firmware pick
(over the measured best), the median relative error of the predicted time, and how many
configurations lie within 1% of the best measured and modelled; then geomean and worst lines.
--plot writes hardware.png / hardware.svg (measured vs model, log-log, one panel each, and under it the
same times over their own bests up to 1.3x: where the choice is made).
The rows come from quco.perfmodel.hardware.compare with the firmware's pick (quco.harness.evaluate.firmware_config), as the scorecard's.
"""
from __future__ import annotations

import argparse
import sys

from quco.gst import tables
from quco.perfmodel import hardware, plots, precision
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work
from quco.harness.evaluate import firmware_config


def fmt(v, spec="+.1f", suffix="%"):
    return "-" if v is None else f"{v:{spec}}{suffix}"


def show(results: list[dict]) -> None:
    print("| size | kernel | WGs | measured best | model best | its cost | QuCo | its cost | rank corr | "
          "median err | signed err | within 1% meas / model |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['size']} | {r['kernel']} | {r['work_groups']} | {r['measured_best']} | {r['model_best']} | "
              f"{fmt(r['model_best_cost_pct'])} | {r['quco_pick'] or '-'} | {fmt(r['quco_cost_pct'])} | "
              f"{fmt(r['spearman'], '.2f', '')} | {fmt(r['median_error_pct'], '.1f')} | "
              f"{fmt(r['mean_signed_error_pct'])} | {r['near_measured']} / {r['near_model']} of {r['on_model']} |")
    rho = [r["spearman"] for r in results if r["spearman"] is not None]
    med = [r["median_error_pct"] for r in results if r["median_error_pct"] is not None]
    for label, key in (("model's best", "model_best_cost_pct"), ("QuCo's pick", "quco_cost_pct")):
        vals = [r[key] for r in results if r[key] is not None]
        if vals:
            print(f"{label}: geomean {fmt(hardware.geomean_pct(vals), '+.2f')} over the measured best, "
                  f"worst {fmt(max(vals), '+.1f')}, within 2%: {sum(v <= 2 for v in vals)} of {len(vals)}")
    if rho:
        print(f"rank correlation: min {min(rho):.2f}, median {sorted(rho)[len(rho) // 2]:.2f}; "
              f">= 0.9: {sum(v >= 0.9 for v in rho)} of {len(rho)}")
    if med:
        print(f"median error of the predicted time: max {max(med):.1f}%, <= 10%: {sum(v <= 10 for v in med)} "
              f"of {len(med)}")


def show_precision(rows, results: list[dict], gst: bytes) -> None:
    """The file's own noise (twin kernels) and what a model equal to the truth would score."""
    noise = {n.size: n for n in precision.twin_noise(rows)}
    if not noise:
        return
    print(f"\nMeasurement precision: twin kernels {' / '.join(precision.TWINS)} (same bytes, same loop) "
          "at the same configuration")
    print("| size | pairs | median ratio | noise of one measurement | glitches (tile/slots: us vs us) |\n|---|---|---|---|---|")
    for n in noise.values():
        glitches = ", ".join(f"{t}/{s}: {a:g} vs {b:g}" for t, s, a, b in n.glitches) or "none"
        print(f"| {n.size} | {n.pairs} | {n.median_ratio_pct:+.2f}% | {n.sigma_pct:.2f}% | {glitches} |")
    same = {}
    m = machine(tables.unpack(gst))
    for r in results:
        measured = [x for x in rows if x.variant == "att" and x.kernel == r["kernel"] and x.size == r["size"]
                    and x.tile and x.slots]
        work = Work.of(hardware.scaled_kernel(r["kernel"], r["work_groups"]))
        for tile in sorted(hardware.unpipelined_tiles(m, work, measured)):
            if (n := precision.same_code_noise(measured, tile)) is not None:
                same.setdefault((r["kernel"], r["size"]), []).append(n)
    for (kernel, size), ns in same.items():
        for n in ns:
            glitches = ", ".join(f"/{s}: {t:g} us" for s, t in n.glitches) or "none"
            print(f"Same code: {kernel} {size} at {n.tile} (one-step loop, not pipelined) over {n.rows} slot counts: "
                  f"{n.sigma_pct:.2f}% a measurement; glitches {glitches}")
    print("A model equal to the measured times, against one measurement with that noise (1,000 draws; the "
          "kernel's own same-code noise where there is one): rank correlation and the measured cost of its best "
          "(median / 90th percentile)")
    print("| size | kernel | noise | rank: model / ceiling | best's cost: model / perfect model |\n|---|---|---|---|---|")
    for r in results:
        if r["size"] not in noise:
            continue
        # the noisiest estimate that applies (a kernel's folded tiles, if any, or the twins')
        sigma = max([noise[r["size"]].sigma_pct] + [n.sigma_pct for n in same.get((r["kernel"], r["size"]), [])])
        c = precision.ceiling([p.measured_us for p in r["points"]], sigma / 100)
        print(f"| {r['size']} | {r['kernel']} | {sigma:.2f}% | {fmt(r['spearman'], '.2f', '')} / {fmt(c['rank'], '.3f', '')} | "
              f"{fmt(r['model_best_cost_pct'])} / {c['cost_pct']:.2f}% / {c['cost_p90_pct']:.2f}% |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(hardware.DEFAULT_DATA))
    ap.add_argument("--gpu", default="h100-sxm", choices=tables.preset_names())
    ap.add_argument("--plot", metavar="DIR")
    ap.add_argument("--no-quco", action="store_true", help="skip QuCo's picks (no emulated unit)")
    args = ap.parse_args(argv)
    try:
        rows = hardware.read(args.file)
    except hardware.HardwareDataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    gst = tables.load(args.gpu)
    results = hardware.compare(rows, gst, None if args.no_quco else (lambda g, k: firmware_config(g, k)))
    print(f"{args.file} against the model on {args.gpu}:")
    show(results)
    print("\nATT vs NoATT: best plain loads / best TMA (measured) and NoATT/Fine-Tuned / ATT/Fine-Tuned "
          "(model); above 1: ATT ahead")
    print("| size | kernel | measured | model |\n|---|---|---|---|")
    for r in hardware.att_vs_noatt(rows, gst):
        print(f"| {r['size']} | {r['kernel']} | {r['measured']:.2f} | {fmt(r['model'], '.2f', '')} |")
    show_precision(rows, results, gst)
    if args.plot:
        for p in plots.hardware(results, args.plot):
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
