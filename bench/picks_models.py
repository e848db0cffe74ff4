"""Whole models on the performance model: QuCo's picks (the paper's rule set and quco+) against
per-layer ATT/Fine-Tuned, as `quco-emu run` has it (issue #30).

    .venv/bin/python bench/picks_models.py        # about a minute

For every layer: the reference model's pick (the firmware matches it bit for bit) with the
launch flags of each rule set, timed by the model (`workloads.runner.model_ns`), against the
model's exhaustive best for that layer (`workloads.baselines.fine_tuned`, what `quco-emu run`
reports as ATT/Fine-Tuned). Printed: Fine-Tuned time / QuCo time over the whole model (run
time only: the unit's reconfiguration, hidden on all but a few layers, is left out) and the
layer type that loses most. The judge is today's performance model, which another task is
changing; these figures move with it.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from quco.gst import abi, tables
from quco.host import reference
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work
from quco.workloads.baselines import fine_tuned, gst_key
from quco.workloads.format import load
from quco.workloads.runner import model_ns

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("whisper-tiny", "t5-small", "albert-v2")
GPUS = ("r9-nano", "mi100")
RULES = {"quco (the paper's)": 0, "quco+": abi.FLAG_QUCO_PLUS}


def whole_model(gpu: str, name: str) -> dict:
    gst = tables.load(gpu)
    g = tables.unpack(gst)
    g_items = gst_key(g)
    layers = load(ROOT / "quco" / "examples" / "workloads" / f"{name}.json").layers
    out = {}
    for label, flags in RULES.items():
        quco = fine = 0.0
        loss: dict = {}
        for lay in layers:
            k = dataclasses.replace(lay.kernel, flags=lay.kernel.flags | flags)
            m = machine(g, lay.clock_mhz or g["core_clock_mhz"], lay.active_cus, lay.lds_bytes)
            r = reference.configure(gst, k.record())
            work = dataclasses.replace(Work.of(k), name="")
            ns = model_ns(m, work, Config(r.tile, tuple(r.slots)))
            best = fine_tuned(m, g_items, work)
            if ns is None or best is None:
                raise SystemExit(f"{name} on {gpu}: layer {lay.name}: no time for {r.tile}/{r.slots}")
            quco, fine = quco + ns, fine + best[1]
            loss[lay.type] = loss.get(lay.type, 0.0) + ns - best[1]
        worst = max(loss, key=loss.get)
        out[label] = (fine / quco, worst, loss[worst] / max(quco - fine, 1e-9))
    return out


def main() -> int:
    print("Fine-Tuned / QuCo over the whole model (target >= 0.95), today's performance model")
    for name in WORKLOADS:
        for gpu in GPUS:
            res = whole_model(gpu, name)
            print(f"  {name:13s} {gpu:8s} " + "   ".join(
                f"{label}: {ratio:.3f} (most lost: {worst}, {100 * share:.0f}%)"
                for label, (ratio, worst, share) in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
