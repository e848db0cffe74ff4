"""How long the whole scorecard takes (issue #19's target: 120 s or less on this 2-core machine),
printed, not asserted.

    .venv/bin/python bench/paper.py                 # quco-emu paper --out <temporary folder>
    .venv/bin/python bench/paper.py --workers 1     # one process (no pool)
    .venv/bin/python bench/paper.py --scheduler local-dask

Runs `quco-emu paper` in a fresh process (the model caches evaluations per process), with the
figures and report into a temporary folder, and prints the wall time, the load average before
and after (others' processes share the cores: a loaded machine gives a pessimistic figure) and
the scorecard's summary line.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 120


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int)
    ap.add_argument("--scheduler")
    args = ap.parse_args()
    extra = (["--workers", str(args.workers)] if args.workers else []) + \
            (["--scheduler", args.scheduler] if args.scheduler else [])
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "quco.cli.main", "paper", "--out", out, *extra]
        load_before = os.getloadavg()
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        load_after = os.getloadavg()
        files = len(os.listdir(out))
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        print(f"quco-emu paper exited with {done.returncode}", file=sys.stderr)
        return 1
    summary = next((line for line in done.stdout.splitlines() if line.startswith("scorecard: ")), "(no summary line)")
    print(f"quco-emu paper{' ' if extra else ''}{' '.join(extra)}: {wall:.1f} s wall (target {TARGET_S} s) on "
          f"{os.cpu_count()} cores; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
          f"{files} files written")
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
