"""How long the whole scorecard takes (issue #31's target: 120 s or less on this 2-core machine
when nothing else runs), and where the time goes; printed, not asserted.

    .venv/bin/python bench/paper.py                 # quco-emu paper --out <temporary folder>
    .venv/bin/python bench/paper.py --workers 1     # one process (no pool)
    .venv/bin/python bench/paper.py --scheduler local-dask
    .venv/bin/python bench/paper.py --top 15        # the 15 costliest sources

Runs the scorecard as `quco-emu paper --out` does (quco.paper.scorecard.run, then report.write)
in this process, in phases, timing each: loading the claims, computing the sources (a process
pool: each source's CPU seconds are measured in its worker, so the sum is the work and the
wall time is what the pool made of it), judging the rows, drawing the figures and writing the
files. It prints the wall time of each phase, the CPU seconds per kind of source and the
costliest sources, the load average before and after (other processes share the cores: a
loaded machine gives a pessimistic wall time; the CPU seconds are what the work costs), and the
summary line. The first import of the model and the firmware is included in "start".
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

TARGET_S = 120


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int)
    ap.add_argument("--scheduler")
    ap.add_argument("--top", type=int, default=10, help="how many of the costliest sources to list")
    args = ap.parse_args()
    load_before = os.getloadavg()
    phases = {}
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    from _progress import Steps   # progress on stderr (a bar on a terminal); stdout as without it
    with Steps("paper", "phase", 4) as steps:
        steps.step("start (imports, claims)")
        from quco.paper import claims, ours, report, scorecard
        from quco.paper.measures import MEASURES
        chosen = scorecard.select(claims.load(measures=MEASURES))
        phases["start (imports, claims)"] = time.perf_counter() - t0
        steps.step("sources (pool)")
        t = time.perf_counter()
        keys = [k for c in chosen for k in scorecard.needs(c)]
        with Steps("paper", "sources") as pool:
            sources = ours.compute(keys, workers=args.workers, scheduler=args.scheduler, progress=pool.update)
        phases["sources (pool)"] = time.perf_counter() - t
        steps.step("verdicts and chances")
        t = time.perf_counter()
        rows = [scorecard.row(c, sources) for c in chosen]
        phases["verdicts and chances"] = time.perf_counter() - t
        steps.step("figures and files")
        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            written = report.write(out, rows, sources, "bench/paper.py")
            phases["figures and files"] = time.perf_counter() - t
    wall = time.perf_counter() - t0
    main_cpu = time.process_time() - cpu0
    # each worker's CPU before its first task: its start-up (imports), which no task's time includes
    first = {}
    for v in sources.values():
        if isinstance(v, dict) and ours.WORKER in v:
            pid, before = v[ours.WORKER]
            first[pid] = min(first.get(pid, before), before)
    startup = sum(first.values())
    load_after = os.getloadavg()

    per_source = {k: v.get(ours.SECONDS, 0.0) for k, v in sources.items() if isinstance(v, dict)}
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for k, s in per_source.items():
        by_kind[k[0]][0] += 1
        by_kind[k[0]][1] += s
    work = sum(per_source.values())
    print(f"quco-emu paper (in process, workers {args.workers or 'default'}): {wall:.1f} s wall (target {TARGET_S} s "
          f"on an idle machine) on {os.cpu_count()} cores; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after; {len(chosen)} claims, {len(sources)} sources, {len(written)} files")
    print("phases (wall s):  " + ", ".join(f"{name} {s:.1f}" for name, s in phases.items()))
    print(f"CPU s: sources {work:.1f} in the workers, {main_cpu:.1f} in this process (verdicts, chances, figures, "
          f"and the pool's own bookkeeping); sources / pool wall = {work / max(phases['sources (pool)'], 1e-9):.2f} "
          "cores busy")
    cores = min(os.cpu_count() or 1, args.workers or os.cpu_count() or 1)
    print(f"workers: {len(first)}, their start-up {startup:.1f} CPU s; on {cores} idle cores the run would take about "
          f"{phases['start (imports, claims)'] + (work + startup) / cores + main_cpu:.0f} s (start + the workers' "
          "CPU / cores + this process's CPU: an estimate from CPU seconds, not a measurement)")
    print("sources by kind (CPU s):  " + ", ".join(f"{kind} {n} x = {s:.1f}" for kind, (n, s) in
                                                sorted(by_kind.items(), key=lambda kv: -kv[1][1])))
    print(f"costliest {args.top}:  " + ", ".join(f"{'/'.join(k)} {s:.1f}" for k, s in
                                             sorted(per_source.items(), key=lambda kv: -kv[1])[:args.top]))
    print("scorecard: " + scorecard.summary_line(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
