"""The model's extrapolation error: sim.simulate (rounds of work-groups, the pass window and
the step window simulated in part and extrapolated) against the full run (exact=True), on a
deterministic sample (issue #29).

The set: every preset x bundled kernel (its own folder's where the preset has one) at 256,
2,048 and 8,192 work-groups (an operand the file's whole grid shares stays shared by the new
one, as hardware.regrid does), SAMPLE configurations of its searched ATT space evenly
spaced in the search's order, and the streaming kernels (Dot-Product, Matrix-Vector,
Elementwise, Sumvectors) on the H100 at 4,096 and 32,768 work-groups, every one of their
configurations. A full run whose work (steps a CU's busiest slot walks) exceeds MAX_STEPS is
left out and counted. Prints the distribution of |extrapolated / exact - 1| (max, p99,
median) per extrapolation at work (rounds, pass window, step window) and the worst cases.

    .venv/bin/python bench/extrapolation.py           # about two minutes of CPU
    .venv/bin/python bench/extrapolation.py --quick   # 256 work-groups and the 4,096 rows only
    .venv/bin/python bench/extrapolation.py --only passes   # the runs the pass window extrapolates
"""
import argparse
import math
import sys
import time

import numpy as np

from quco.gst import tables
from quco.kernel.format import load_kernel
from quco.paper.ours import kernel_dir
from quco.perfmodel import cu_model, hardware, residency, search, sim, space
from quco.perfmodel.params import machine
from quco.perfmodel.window import STEP_RUNS, streams_privately
from quco.perfmodel.work import Work

from _progress import track

GRIDS = (256, 2048, 8192)
STREAMING = ("Dot-Product", "Matrix-Vector", "Elementwise", "Sumvectors")
SAMPLE = 6
MAX_STEPS = 60_000  # steps of one resident slot in the full run (its cost)


def sample(configs: list, n: int) -> list:
    if len(configs) <= n:
        return configs
    return [configs[round(i * (len(configs) - 1) / (n - 1))] for i in range(n)]


def cases(quick: bool):
    for gpu in tables.preset_names():
        g = tables.unpack(tables.load(gpu))
        for path in sorted(kernel_dir(gpu).glob("*.json")):
            k0 = load_kernel(path)
            for wgs in GRIDS[:1] if quick else GRIDS:
                k = hardware.regrid(k0, wgs)
                m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
                p = space.plan(m, g, work)
                for cfg in sample(search.candidates(work, m, p.tiles, p.slot_choices), SAMPLE):
                    yield f"{gpu} {path.stem} {wgs}", m, work, cfg
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    for name in STREAMING:
        for wgs in (4096,) if quick else (4096, 32768):
            work = Work.of(hardware.scaled_kernel(name, wgs))
            p = space.plan(m, g, work)
            for cfg in search.candidates(work, m, p.tiles, p.slot_choices):
                yield f"h100-sxm {name} {wgs}", m, work, cfg


def mechanisms(m, work: Work, cfg) -> tuple[str, int]:
    """Which extrapolations simulate() applies (as it decides) and the full run's steps a slot."""
    steps = max(work.tiles(i, cfg.tile) for i in range(len(work.queues)))
    per_slot = math.ceil(residency.per_cu(m, work.work_groups or m.cus) / residency.residents(m, work, cfg))
    used = []
    if steps > STEP_RUNS[1] * 2 and max(cfg.slots) < STEP_RUNS[0] and streams_privately(work, cfg.tile):
        used.append("steps")
    elif work.passes > 1:
        used.append("passes")
    if per_slot > cu_model.ROUNDS + 2:
        used.append("rounds")
    return "+".join(used) or "none", per_slot * work.passes * steps


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="256 work-groups and the 4,096 rows only")
    ap.add_argument("--only", help="only the runs whose extrapolations include this one (rounds, passes, steps)")
    ap.add_argument("--worst", type=int, default=12, help="worst cases printed")
    args = ap.parse_args()
    t0 = time.process_time()
    rows, skipped = [], 0
    # progress on stderr, a step a case (listed first: the count); stdout as without it
    for tag, m, work, cfg in track("extrapolation", "case", list(cases(args.quick)), lambda c: c[0]):
        kind, cost = mechanisms(m, work, cfg)
        if kind == "none" or (args.only and args.only not in kind.split("+")):
            continue
        if cost > MAX_STEPS:
            skipped += 1
            continue
        a = sim.simulate(m, work, cfg)
        b = sim.simulate(m, work, cfg, exact=True)
        rows.append((a.cycles / b.cycles - 1, kind, f"{tag} {cfg.label(work)}", a.cycles, b.cycles, a.events, b.events))
    print(f"{len(rows)} extrapolated runs against full runs ({skipped} full runs over {MAX_STEPS:,} steps a slot "
          f"left out), {time.process_time() - t0:.1f} s CPU")
    print(f"{'extrapolation':16s} {'runs':>5s} {'max |err|':>9s} {'p99':>7s} {'median':>7s} {'mean err':>8s} "
          f"{'>0.5%':>5s} {'>1%':>4s}")
    for kind in sorted({r[1] for r in rows}) + ["all"]:
        errs = np.array([r[0] for r in rows if kind in ("all", r[1])])
        ab = np.abs(errs)
        print(f"{kind:16s} {len(errs):5d} {ab.max():9.3%} {np.percentile(ab, 99):7.3%} {np.median(ab):7.3%} "
              f"{errs.mean():+8.3%} {int((ab > 0.005).sum()):5d} {int((ab > 0.01).sum()):4d}")
    print("worst:")
    for err, kind, where, a, b, ea, eb in sorted(rows, key=lambda r: -abs(r[0]))[:args.worst]:
        print(f"  {err:+7.3%} {kind:14s} {where:48s} {a:14,.0f} vs {b:14,.0f} cycles; events {ea:,} vs {eb:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
