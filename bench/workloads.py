"""Whole-workload figures (issue #11's targets), printed, not asserted.

    .venv/bin/python bench/workloads.py                 # Whisper-Tiny's 827 layers on the MI100
    .venv/bin/python bench/workloads.py --gpu r9-nano --all

For each workload: wall time of the run through the firmware (boot once, every layer launched
with cycle accounting, cv32e40p profile) and the performance model (target for Whisper-Tiny:
within 60 s), the baselines' extra time, the unit's cache hit rate, reconfiguration exposed
time as a fraction of the run, and QuCo against ATT/Semi-Tuned and ATT/Fine-Tuned. The model's
evaluations are cached per process, so each workload runs in a fresh process.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "quco" / "examples" / "workloads"
ALL = ("whisper-tiny", "t5-small", "albert-v2", "norm-project", "attention-score", "residual-mlp")


def one(name: str, gpu: str) -> dict:
    from quco.perfmodel import search
    from quco.workloads import baselines, format, runner
    t0 = time.perf_counter()
    w = format.load(WORKLOADS / f"{name}.json")
    session = runner.Session(gpu)
    steps = runner.run(session, [runner.Tenant(w)])
    t1 = time.perf_counter()
    evaluations = search.evaluate.cache_info().currsize
    summary = baselines.compare(steps, session)[0]
    t2 = time.perf_counter()
    tot = runner.totals(steps)
    return {"workload": w.name, "gpu": gpu, "layers": tot["layers"], "run_s": t1 - t0, "baselines_s": t2 - t1,
            "model_evaluations": evaluations, **tot, **summary}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", default="mi100")
    ap.add_argument("--all", action="store_true", help="every bundled workload, not only Whisper-Tiny")
    ap.add_argument("--one", help=argparse.SUPPRESS)   # the child process
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.gpu)))
        return 0
    for name in ALL if args.all else ALL[:1]:
        out = subprocess.run([sys.executable, __file__, "--one", name, "--gpu", args.gpu],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        print(f"{r['workload']} on {r['gpu']}: {r['layers']} layers through the firmware and the model in "
              f"{r['run_s']:.2f} s (target 60 s for Whisper-Tiny; {r['model_evaluations']} distinct model "
              f"evaluations), baselines +{r['baselines_s']:.2f} s")
        print(f"  cache hit rate {100 * r['cache_hit_rate']:.1f}% ({r['cache_hits']} of {r['layers']}); "
              f"reconfiguration {r['reconf_cycles']:,} cycles = {r['reconf_ns'] / 1e3:,.1f} us, exposed "
              f"{r['exposed_ns'] / 1e3:,.2f} us = {100 * r['exposed_fraction']:.3f}% of the run "
              f"({r['makespan_ns'] / 1e3:,.1f} us); hidden behind the previous layer for {r['hidden_layers']} "
              f"of {r['layers'] - 1}")
        print(f"  QuCo vs ATT/Fine-Tuned {r['speedup_vs_fine']:.3f}x, vs ATT/Semi-Tuned "
              f"{r['speedup_vs_semi']:.3f}x (whole run); per-layer geomean {r['geomean_layer_vs_fine']:.3f}x and "
              f"{r['geomean_layer_vs_semi']:.3f}x; worst layer vs Fine-Tuned: {r['worst_layer_vs_fine']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
