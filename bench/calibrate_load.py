"""Latency under load, the modes of bench/calibrate_model.py that evaluate the DRAM's queueing
(dram_queueing 1-4; docs/perf-model-not-shipped.md, "Latency under load"; run that script, this
module holds its modes): --loaded, --share, --share-fit, --mva and --share-scan, on the H100's
measurement file.
"""
from __future__ import annotations

import dataclasses
import math

from quco.perfmodel import hardware as hwdata
from quco.perfmodel.work import Work

from _progress import step
from calibrate_h100 import measured, print_used, score, targets_line


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


def _per_kernel(res: list[dict]) -> str:
    """--share's and --mva's cell of each kernel and size: rank, model best, its cost."""
    return ", ".join(f"{r['kernel']} {r['size']} {r['spearman']:.2f} {r['model_best']} {r['model_best_cost_pct']:+.1f}%"
                     for r in res)


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
        per = _per_kernel(res)
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
    print(targets_line("joint", joint))
    print(targets_line("shipped", shipped))
    both_m = hwfit.with_constants(joint_m, {"dram_queue_cycles": s_both, "dram_stream_cost": c_both})
    print(targets_line("S and cost from both grids' rows, the rest as the joint fit", hwdata.compare(rows, gst, m=both_m)))
    step("leave one kernel family out, joint and shipped")
    loo_j, loo_s = hwfit.leave_one_out(m, gst, rows, share=share), hwfit.leave_one_out(m, gst, rows)
    print("\nleave one kernel family out (fit without it, predict it), joint (shipped fit's stages):")
    print("| held out | S ns, stream cost | size | kernel | rank corr | model best cost | median err |\n|---|---|---|---|---|---|---|")
    _joint_rows("held_out", loo_j, loo_s, ns)
    print(targets_line("joint, families held out", loo_j))
    print(targets_line("shipped stages, families held out", loo_s))
    step("leave one grid size out, joint and shipped")
    lso_j, lso_s = hwfit.leave_size_out(m, gst, rows, share=share), hwfit.leave_size_out(m, gst, rows)
    print("\nleave one grid size out (fit on one size alone, predict the other), joint (shipped fit's stages):")
    print("| fitted on | S ns, stream cost | predicted | kernel | rank corr | model best cost | median err |\n"
          "|---|---|---|---|---|---|---|")
    _joint_rows("fitted_on", lso_j, lso_s, ns)
    for size in dict.fromkeys(r["fitted_on"] for r in lso_j):
        print(targets_line(f"joint, fitted on {size}", [r for r in lso_j if r["fitted_on"] == size]))
        print(targets_line(f"shipped stages, fitted on {size}", [r for r in lso_s if r["fitted_on"] == size]))
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
        per = _per_kernel(res)
        print(f"{targets_line(label, res)}\n    {per}")
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
