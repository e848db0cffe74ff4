"""Speed figures of the performance model (issue #9's targets), printed, not asserted.

    .venv/bin/python bench/perfmodel.py            # all three
    .venv/bin/python bench/perfmodel.py --quick    # skip the whole evaluate run

1. one model evaluation of each bundled kernel with the firmware's configuration on the
   R9 Nano: events and milliseconds (median of 5);
2. exhaustive search of each 9-queue kernel on one core (target: within 1 s, issue #20);
3. exhaustive search on the H100 at grids of 256 and 32,768 work-groups (issue #29: at most
   1 s at any grid size; the cost is steady state plus first and last waves), with the
   per-work-group time of the fastest configuration at both;
4. `quco-emu run whisper-tiny.json` with baselines (issue #29: a few seconds);
5. `quco-emu evaluate` over every preset x bundled kernel with ablations and portability
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
from quco.host.kernel import load_kernel
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted((ROOT / "examples" / "kernels").glob("*.json"))


def one_evaluation():
    gst = tables.load("r9-nano")
    m = machine(tables.unpack(gst))
    print("one evaluation, R9 Nano, the reference model's configuration (= the firmware's):")
    for path in KERNELS:
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
    for gpu in tables.preset_names():
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
    print("exhaustive search on the H100, one core, by grid size (target <= 1 s at any size):")
    for name in ("Dot-Product", "Matrix-Vector", "Elementwise"):
        for wgs in (256, 32768):
            work = Work.of(hardware.scaled_kernel(name, wgs))
            search.evaluate.cache_clear()
            t = time.process_time()
            ranked = search.exhaustive(m, g, work)
            dt = time.process_time() - t
            best = ranked[0]
            per_wg = (best.outcome.cycles - m.launch) / wgs * 1000 / m.clock_mhz
            print(f"  {name:14s} {wgs:6d} work-groups {len(ranked):3d} configurations {dt:6.2f} s CPU; "
                  f"best {best.config.label(work)}, {per_wg:8.1f} ns a work-group beyond the launch")


def whisper():
    print("quco-emu run whisper-tiny.json with baselines (target: a few seconds):")
    wl = ROOT / "examples" / "workloads" / "whisper-tiny.json"
    t, c = time.perf_counter(), time.process_time()
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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the whole evaluate run")
    args = ap.parse_args()
    one_evaluation()
    exhaustive()
    grid_sizes()
    whisper()
    if not args.quick:
        whole_evaluate()
