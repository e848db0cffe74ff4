"""Speed figures of the performance model (issue #9's targets), printed, not asserted.

    .venv/bin/python bench/perfmodel.py            # all three
    .venv/bin/python bench/perfmodel.py --quick    # skip the whole evaluate run

1. one model evaluation of each bundled kernel with the firmware's configuration on the
   R9 Nano: events and milliseconds (median of 5);
2. exhaustive search of each 9-queue kernel on one core (target: within 1 s, issue #20);
3. exhaustive search on the H100 at grids of 256, 4,096 and 32,768 work-groups (issue #29: at most
   1 s at any grid size; the cost is steady state plus first and last waves), with the
   per-work-group time of the fastest configuration at both;
4. `quco-emu run whisper-tiny.json` with baselines (issue #29: a few seconds);
5. the search's space and method (quco/perfmodel/space.py, issue #35): its bound in evaluations, each
   preset x bundled kernel and every layer shape of the bundled workloads (size, method,
   evaluations, seconds), the coordinate descent's distance to the exhaustive answer wherever
   the exhaustive one runs, and the 8- and 16-distinct-queue cases.
    .venv/bin/python bench/perfmodel.py --search   # only 5
    .venv/bin/python bench/perfmodel.py --grids    # only 3 and 4
6. `quco-emu evaluate` over every preset x bundled kernel with ablations and portability
   on this machine's cores (target: within 120 s).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from quco.gst import tables
from quco.host import reference
from quco.kernel.format import load_kernel
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work

from _progress import Steps, track

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted((ROOT / "quco" / "examples" / "kernels").glob("*.json"))


def one_evaluation():
    gst = tables.load("r9-nano")
    m = machine(tables.unpack(gst))
    print("one evaluation, R9 Nano, the reference model's configuration (= the firmware's):")
    for path in track("perfmodel", "one evaluation", KERNELS, lambda p: p.stem):
        k = load_kernel(path)
        r = reference.configure(gst, k.record())
        cfg, work = Config(r.tile, tuple(r.slots)), Work.of(k)
        times, o = [], None
        for _ in range(5):
            t = time.perf_counter()
            o = simulate(m, work, cfg)
            times.append(time.perf_counter() - t)
        print(f"  {k.name:28s} {cfg.label(work):12s} {o.events:7,} events  {1000 * statistics.median(times):7.2f} ms"
              f"{'  (rounds extrapolated)' if o.extrapolated else ''}")


def exhaustive():
    print("exhaustive search, one core (target <= 1 s for a 9-queue kernel):")
    for gpu in track("perfmodel", "exhaustive search", tables.preset_names()):
        g = tables.unpack(tables.load(gpu))
        m = machine(g)
        for path in KERNELS:
            k = load_kernel(path)
            if len(k.queues) < 9:
                continue
            search.evaluate.cache_clear()
            t = time.perf_counter()
            ranked = search.exhaustive(m, g, Work.of(k))
            print(f"  {gpu:11s} {k.name:28s} {len(ranked):4d} configurations {time.perf_counter() - t:6.2f} s")


def grid_sizes():
    from quco.perfmodel import hardware
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    from quco.perfmodel import space
    print("exhaustive search on the H100, one core, by grid size (target <= 1 s at any size), CPU seconds and\n"
          "evaluations: every configuration ranked | the best (branch and bound) | the ten fastest and QuCo's pick\n"
          "ranked (`quco-emu search`'s default):")
    gst = tables.load("h100-sxm")
    for name in track("perfmodel", "grid sizes", ("Dot-Product", "Matrix-Vector", "Elementwise")):
        for wgs in (256, 4096, 32768):
            k = hardware.scaled_kernel(name, wgs)
            work = Work.of(k)
            runs = []
            for top in (0, 1, 10):
                search.evaluate.cache_clear()
                t = time.process_time()
                within = 0.0
                if top == 10:  # as cli/perf.py: QuCo's pick evaluated, and every faster one
                    r = reference.configure(gst, k.record())
                    within = search.evaluate(m, work, Config(r.tile, tuple(r.slots))).cycles
                res = space.search_space(m, g, work, top=top, within=within)
                runs.append((time.process_time() - t, res))
            best = runs[0][1].ranked[0]
            assert all(r.ranked[0].config == best.config for _, r in runs)
            per_wg = (best.outcome.cycles - m.launch) / wgs * 1000 / m.clock_mhz
            print(f"  {name:14s} {wgs:6d} work-groups {runs[0][1].searched:3d} configurations: "
                  + " | ".join(f"{dt:5.2f} s {r.evaluations:3d}" for dt, r in runs)
                  + f"; best {best.config.label(work)}, {per_wg:8.1f} ns a work-group beyond the launch")


def whisper():
    print("quco-emu run whisper-tiny.json with baselines (target: a few seconds):")
    wl = ROOT / "quco" / "examples" / "workloads" / "whisper-tiny.json"
    t = time.perf_counter()
    r = subprocess.run([str(Path(sys.executable).with_name("quco-emu")), "run", str(wl)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    res = os.times()
    print(f"  {time.perf_counter() - t:.1f} s wall, {res.children_user + res.children_system:.1f} s CPU "
          f"(exit {r.returncode})")


def whole_evaluate():
    print(f"quco-emu evaluate, every preset x bundled kernel, ablations and portability, {os.cpu_count()} cores "
          "(target <= 120 s):")
    t = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("quco-emu")), "evaluate", "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"  {time.perf_counter() - t:.1f} s")


def _distinct(n: int, length: int) -> Work:
    from quco.perfmodel.work import Queue
    return Work(f"{n} distinct queues of about {length:,}",
                tuple(Queue(length + 64 * i, 0 if i < n - 1 else 1, 2) for i in range(n)), 10.0, 7)


def search_spaces():
    from quco.perfmodel import space
    from quco.workloads import format as wformat
    print(f"search spaces (quco/perfmodel/space.py): exhaustive up to {space.EXHAUSTIVE_MAX:,} fitting configurations, "
          f"else coordinate descent ({space.SWEEPS} sweeps at most); refused past {space.WORK_MAX:,} tiles walked")
    print("  the bound: at most tiles x (slots + sweeps x runs x (slots - 1)) evaluations = "
          f"{8 * (8 + space.SWEEPS * 16 * 7):,} for 16 distinct queues; seconds below are this machine's")
    worst = 0.0
    print("  preset x bundled kernel: evaluations and seconds of the default method; the descent's answer against "
          "the exhaustive one")
    for gpu in track("perfmodel", "search spaces", tables.preset_names()):
        g = tables.unpack(tables.load(gpu))
        own = ROOT / "quco" / "examples" / "kernels" / gpu
        for path in sorted((own if own.is_dir() else ROOT / "quco" / "examples" / "kernels").glob("*.json")):
            k = load_kernel(path)
            m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
            search.evaluate.cache_clear()
            t = time.perf_counter()
            exact = space.search_space(m, g, work)
            dt = time.perf_counter() - t
            search.evaluate.cache_clear()
            heur = space.search_space(m, g, work, space.DESCENT)
            gap = 100 * (heur.ranked[0].outcome.cycles / exact.ranked[0].outcome.cycles - 1)
            worst = max(worst, gap)
            print(f"    {gpu:11s} {k.name:26s} {exact.plan.size:6,} ({exact.plan.fitting:4,} fit) {exact.plan.method:10s} "
                  f"{exact.evaluations:4d} ev {dt:5.2f} s | descent {heur.evaluations:4d} ev "
                  f"{heur.ranked[0].config.label(work):11s} {gap:+.3f}%")
    print(f"  descent vs exhaustive, worst over every preset x bundled kernel: {worst:+.3f}%")
    print("  bundled workloads, each layer shape on its GPU (run's ATT/Fine-Tuned baselines):")
    for path in track("perfmodel", "workloads' layer shapes", sorted((ROOT / "quco" / "examples" / "workloads").glob("*.json")),
                      lambda p: p.stem):
        w = wformat.load(str(path))
        g = tables.unpack(tables.load(w.gpu or "r9-nano"))
        shapes = {lay.type: lay.kernel for lay in w.layers}
        search.evaluate.cache_clear()
        t = time.perf_counter()
        plans, evaluations = [], 0
        for k in shapes.values():
            res = space.search_space(machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), g, Work.of(k))
            plans.append(res.plan)
            evaluations += res.evaluations
        print(f"    {w.name:28s} {len(shapes):3d} shapes, runs {max(p.runs for p in plans)} at most, "
              f"{sum(p.method == space.DESCENT for p in plans)} by descent, {evaluations:5,} evaluations "
              f"{time.perf_counter() - t:6.2f} s")
    g = tables.unpack(tables.load("r9-nano"))
    m = machine(g)
    for n, length in ((8, 1024), (8, 4096), (16, 1024)):
        work = _distinct(n, length)
        p = space.plan(m, g, work)
        search.evaluate.cache_clear()
        t = time.perf_counter()
        res = space.search_space(m, g, work)
        print(f"  {work.name}: {p.size:,} configurations, {p.method}, {res.evaluations:,} evaluations "
              f"(bound {p.max_evaluations:,}), {time.perf_counter() - t:.2f} s")
    try:
        space.check(space.plan(m, g, _distinct(16, 65536)), "16 distinct queues of about 65,536")
    except space.SpaceTooLarge as e:
        print(f"  refused: {str(e)[:160]}...")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the whole evaluate run")
    ap.add_argument("--search", action="store_true", help="only the search spaces (5)")
    ap.add_argument("--grids", action="store_true", help="only the grid sizes and whisper-tiny (3, 4)")
    args = ap.parse_args()
    parts = [one_evaluation, exhaustive, grid_sizes, whisper, search_spaces] + ([] if args.quick else [whole_evaluate])
    if args.search:
        parts = [search_spaces]
    elif args.grids:
        parts = [grid_sizes, whisper]
    # progress on stderr (each part, and a part's loop beneath it on a terminal); stdout as without it
    with Steps("perfmodel", "part", len(parts)) as steps:
        for part in parts:
            steps.step(part.__name__.replace("_", " "))
            part()
