"""The search's lower bound (quco/perfmodel/bounds.py) against the model, on the set of
bench/model_digest.py: every preset x bundled kernel x configuration of its searched space
(ATT), the NoATT pool and the Ideal case's tiles x resident counts, and Dot-Product,
Matrix-Vector and Elementwise on the H100 at 256, 4,096 and 32,768 work-groups. Prints the
tightest ratio of the simulated cycles to the bound before its SAFETY factor (it must stay
above SAFETY, and the bound with it below every simulated time), where it is, and how many
configurations each search evaluates with the bound (the best alone, the top 10).

    .venv/bin/python bench/bounds.py            # everything (about a minute of CPU)
    .venv/bin/python bench/bounds.py --quick    # grids of 256 work-groups only
    .venv/bin/python bench/bounds.py --exact    # the bound before SAFETY against runs without
                                                # extrapolation (bundled kernels, 256-work-group grids)
    .venv/bin/python bench/bounds.py --grids    # every preset x bundled kernel at 1,024, 8,192 and
                                                # 65,536 work-groups, and every distinct layer of
                                                # the bundled workloads (ATT; several minutes)
"""
import argparse
import dataclasses
import sys
import time
from pathlib import Path

from quco.gst import tables
from quco.kernel.format import load_kernel
from quco.paper.ours import kernel_dir
from quco.perfmodel import bounds, hardware, search, space
from quco.perfmodel.params import machine
from quco.perfmodel.residency import occupancy
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work
from quco.workloads import format as wformat

from _progress import track

ROOT = Path(__file__).resolve().parent.parent
GRIDS = (1024, 8192, 65536)


def cases(quick: bool, grids: bool):
    """(tag, machine, work, [(config, mode, max_occupancy)]) over the digest's set, or (grids)
    every preset x bundled kernel at GRIDS work-groups."""
    for gpu in tables.preset_names() if not grids else ():
        g = tables.unpack(tables.load(gpu))
        for path in sorted(kernel_dir(gpu).glob("*.json")):
            k = load_kernel(path)
            m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
            p = space.plan(m, g, work)
            evals = [(c, "att", 0) for c in search.candidates(work, m, p.tiles, p.slot_choices)]
            evals += [(Config(t, (1,) * len(work.queues)), "noatt", 0) for t in search.tiles(g)
                      if occupancy(m, work, Config(t, (1,) * len(work.queues)), "noatt") >= 1]
            yield f"{gpu} {path.stem}", m, work, evals
            mi = machine(g, k.core_clock_mhz, k.active_cus, unlimited_lds=True)
            ideal = []
            for t in search.tiles(g):
                cfg = Config(t, tuple(work.tiles(i, t) * q.passes for i, q in enumerate(work.queues)))
                ideal += [(cfg, "ideal", cap) for cap in range(1, occupancy(mi, work, cfg) + 1)]
            yield f"{gpu} {path.stem} ideal", mi, work, ideal
    if grids:  # every preset x bundled kernel on grids the digest does not hold
        for gpu in tables.preset_names():
            g = tables.unpack(tables.load(gpu))
            for path in sorted(kernel_dir(gpu).glob("*.json")):
                k0 = load_kernel(path)
                for wgs in GRIDS:
                    k = hardware.regrid(k0, wgs)  # an operand every work-group shares stays shared
                    m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
                    p = space.plan(m, g, work)
                    yield (f"{gpu} {path.stem} {wgs}", m, work,
                           [(c, "att", 0) for c in search.candidates(work, m, p.tiles, p.slot_choices)])
        # and every distinct layer of the bundled workloads on its GPU (run's ATT/Fine-Tuned baselines)
        for path in sorted((ROOT / "quco" / "examples" / "workloads").glob("*.json")):
            w = wformat.load(str(path))
            g = tables.unpack(tables.load(w.gpu or "r9-nano"))
            seen = set()
            for lay in w.layers:
                k = lay.kernel
                m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
                if (m, dataclasses.replace(work, name="")) in seen:
                    continue
                seen.add((m, dataclasses.replace(work, name="")))
                p = space.plan(m, g, work)
                if p.method == space.EXHAUSTIVE:
                    yield (f"{path.stem} {k.name}"[:44], m, work,
                           [(c, "att", 0) for c in search.candidates(work, m, p.tiles, p.slot_choices)])
        return
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    for name in ("Dot-Product", "Matrix-Vector", "Elementwise"):
        for wgs in (256,) if quick else (256, 4096, 32768):
            work = Work.of(hardware.scaled_kernel(name, wgs))
            p = space.plan(m, g, work)
            yield f"grid {name} {wgs}", m, work, [(c, "att", 0) for c in search.candidates(work, m, p.tiles, p.slot_choices)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="grids of 256 work-groups only")
    ap.add_argument("--exact", action="store_true", help="against runs without extrapolation (sim.simulate's "
                    "exact), the bound before SAFETY; the bundled kernels at their own grids")
    ap.add_argument("--grids", action="store_true", help=f"every preset x bundled kernel at {GRIDS} work-groups and "
                    "every distinct layer of the bundled workloads instead")
    args = ap.parse_args()
    t0 = time.process_time()
    worst, where, n, below = float("inf"), None, 0, 0
    print(f"{'space':44s} {'configs':>7s} {'tightest':>8s} {'evaluated: best':>15s} {'top 10':>6s}")
    # progress on stderr, a step a space (listed first: the count); stdout as without it
    for tag, m, work, evals in track("bounds", "space", list(cases(args.quick or args.exact, args.grids)), lambda c: c[0]):
        rows = []
        for cfg, mode, cap in evals:
            if args.exact:
                sim = simulate(m, work, cfg, mode, exact=True, max_occupancy=cap).cycles
            else:
                sim = search.evaluate(m, work, cfg, mode, cap).cycles
            # exact runs: the bound before SAFETY must hold
            lb = bounds.lower_bound(m, work, cfg, mode, cap, safety=1.0 if args.exact else bounds.SAFETY)
            after = bounds.lower_bound(m, work, cfg, mode, cap, safety=0.0)  # the launch and a reduction
            raw = bounds.lower_bound(m, work, cfg, mode, cap, safety=1.0) - after
            ratio = (sim - after) / raw if raw > 0 else float("inf")
            n += 1
            below += sim < lb
            if ratio < worst:
                worst, where = ratio, f"{tag} {mode} {cfg.label(work)} cap {cap}"
            rows.append((lb, sim, ratio, mode))
        att = sorted((lb, sim) for lb, sim, _, mode in rows if mode == "att")
        sims = sorted(s for _, s in att)
        tight = min(r[2] for r in rows) if rows else float("nan")
        if att:
            done = [sum(lb <= sims[min(k, len(sims)) - 1] for lb, _ in att) for k in (1, 10)]
            print(f"{tag:44s} {len(att):7d} {tight:8.4f} {done[0]:15d} {done[1]:6d}")
        else:
            print(f"{tag:44s} {len(rows):7d} {tight:8.4f}")
        search.evaluate.cache_clear()
    print(f"{n:,} evaluations, {time.process_time() - t0:.1f} s CPU; simulated / bound before SAFETY "
          f"({bounds.SAFETY}): tightest {worst:.4f} at {where}; simulated below the bound: {below}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
