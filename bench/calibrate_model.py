"""The performance model against the only published tuning result we hold: the R9 Nano's
Fine-Tuned column of QuCo Table III (shared/paper-data/quco-algorithms.md). Prints a
Markdown table: the model's best, every configuration within 1% of it, the paper's
Fine-Tuned pick and its slowdown on the model, QuCo's pick (the reference model, which the
firmware matches bit for bit) and its slowdown. Nothing here feeds back into the model.

    .venv/bin/python bench/calibrate_model.py [--gpu r9-nano] [KERNELS...]
"""
import argparse
from pathlib import Path

from quco.gst import tables
from quco.host import reference
from quco.host.kernel import load_kernel
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work, fits

ROOT = Path(__file__).resolve().parent.parent
# QuCo Table III, R9 Nano, "Fine-Tuned" (tile / slots); the paper gives one slot count.
PAPER_FINE = {"ElementwiseK": (2048, 2), "Elementwise": (2048, 8), "Sumvectors": (2048, 8),
              "Dot-Product": (1024, 2), "Matrix-Vector": (512, 2), "Matrix-Matrix": (512, 2),
              "Matrix-Matrix + Reduction": (512, 2), "Batched Matrix-Matrix": (512, 2)}


def paper_pick(m, ranked, work, tile, slots):
    """The paper's pick on the model: its tile and slots on the streaming queues; a
    stationary queue's slots are not given, so the best of them on the model."""
    for r in ranked:
        if r.config.tile == tile and all(s == slots for q, s in zip(work.queues, r.config.slots) if q.type == 0):
            return r
    cfg = Config(tile, (slots,) * len(work.queues))
    return None if not fits(work, cfg, m.lds_bytes, m.barrier_limit) else search.rank(m, work, [cfg])[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--gpu", default="r9-nano")
    args = ap.parse_args()
    gst = tables.load(args.gpu)
    g = tables.unpack(gst)
    m = machine(g)
    print("| kernel | model best | within 1% of best | paper Fine-Tuned | its slowdown | QuCo | its slowdown |")
    print("|---|---|---|---|---|---|---|")
    for path in args.kernels or sorted((ROOT / "examples" / "kernels").glob("*.json")):
        k = load_kernel(path)
        work = Work.of(k)
        ranked = search.exhaustive(m, g, work)
        best = ranked[0].outcome.cycles
        near = [r for r in ranked if r.outcome.cycles <= 1.01 * best]
        tiles = sorted({r.config.tile for r in near})
        paper = PAPER_FINE.get(k.name)
        p = paper_pick(m, ranked, work, *paper) if paper else None
        r = reference.configure(gst, k.record())
        q = search.evaluate(m, work, Config(r.tile, tuple(r.slots))) if r.status == 0 else None
        pct = lambda c: f"{100 * (c / best - 1):+.1f}%"
        print(f"| {k.name} | {ranked[0].config.label(work)} ({best:,.0f} cycles) | {len(near)} configs, tiles "
              f"{', '.join(map(str, tiles))} | {'%d / %d' % paper if paper else '-'} | "
              f"{(pct(p.outcome.cycles) + ' (' + p.config.label(work) + ')') if p else 'does not fit'} | "
              f"{Config(r.tile, tuple(r.slots)).label(work) if q else '-'} | {pct(q.cycles) if q else '-'} |")


if __name__ == "__main__":
    main()
