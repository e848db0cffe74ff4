"""Long fuzzing campaign: firmware against the reference model, and the command line
against mutated input files.

    .venv/bin/python bench/fuzz.py [--cases 100000] [--seed 1] [--records-per-gst 50] [--file-cases 3000]

Each GST (mostly valid, some near-valid or corrupted, a few raw bytes) boots a fresh unit,
which then serves a batch of launch records (valid, near-valid, raw). Every launch is held
to the model by quco.host.fuzz.compare: same status and detail, same LDS bytes, nothing
changed by a failed launch. Prints cases run, statuses seen, disagreements (expected 0),
faults (expected 0), the most instructions one launch took and the stack high-water mark.

Then `--file-cases` mutated kernel.json, GST (.toml and .gst) and timing-profile files (byte
and structure mutations, quco.cli.fuzz_files) go through `quco-emu` in-process: each must
end with a documented exit code, no traceback, no hang (--timeout) and no control
character on the terminal. Prints the outcomes per file kind and the failures (expected 0).
"""
from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from quco.emulator.faults import Fault
from quco.gst import abi, tables
from quco.cli import fuzz_files
from quco.host import fuzz
from quco.host.device import Device, firmware_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--records-per-gst", type=int, default=50)
    ap.add_argument("--file-cases", type=int, default=3000, help="mutated input files through the CLI")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds one CLI run may take")
    args = ap.parse_args(argv)
    con, rng, elf = Console(width=None if sys.stdout.isatty() else 110), random.Random(args.seed), firmware_path()
    statuses, boots = collections.Counter(), collections.Counter()
    disagreements, faults, cases, max_instr, max_stack = [], [], 0, 0, 0
    t0 = time.perf_counter()
    with Progress(console=con, transient=True) as progress:
        task = progress.add_task("fuzzing", total=args.cases)
        while cases < args.cases:
            raw = fuzz.gst(rng)
            dev = Device(raw, elf)
            boots[dev.boot_status.name] += 1
            g = tables.unpack(raw)
            for _ in range(min(args.records_per_gst, args.cases - cases)):
                record = fuzz.record(rng, g)
                cases += 1
                try:
                    res = fuzz.compare(dev, record)
                    statuses[res.status.name] += 1
                    max_instr = max(max_instr, res.instructions)
                except fuzz.Disagreement as e:
                    disagreements.append(str(e))
                except Fault as e:
                    faults.append(f"{e} gst={raw.hex()} record={record.hex()}")
                    dev.reset()
            max_stack = max(max_stack, dev.stack_high_water())
            progress.update(task, completed=cases)
    seconds = time.perf_counter() - t0
    t = Table(title=f"{cases:,} launches on {sum(boots.values()):,} GSTs, seed {args.seed}, {seconds:.0f} s")
    t.add_column("launch status")
    t.add_column("count", justify="right")
    for name, n in statuses.most_common():
        t.add_row(name, f"{n:,}")
    con.print(t)
    con.print("GST boot statuses: " + ", ".join(f"{k} {v:,}" for k, v in boots.most_common()))
    con.print(f"disagreements: {len(disagreements)}; faults: {len(faults)}; most instructions in one "
              f"launch: {max_instr:,} (budget {dev.budget:,}); stack high-water {max_stack} B of "
              f"{abi.STACK_RESERVE} reserved")
    for line in (disagreements + faults)[:5]:
        con.print(line, markup=False, highlight=False)
    return max(1 if disagreements or faults else 0, files(con, args))


def files(con, args) -> int:
    """The CLI against mutated input files; 1 if any run failed."""
    if args.file_cases <= 0:
        return 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, Progress(console=con, transient=True) as progress:
        task = progress.add_task("input files", total=args.file_cases)
        counts, failures = fuzz_files.campaign(random.Random(args.seed), args.file_cases, folder, args.timeout,
                                               lambda done: progress.update(task, completed=done))
    t = Table(title=f"{args.file_cases:,} mutated input files through quco-emu, seed {args.seed}, "
                    f"{time.perf_counter() - t0:.0f} s")
    outcomes = ("ok", "error", "traceback", "hang", "bad-exit", "leaked")
    t.add_column("file")
    for o in outcomes:
        t.add_column(o, justify="right")
    for kind in sorted({k for k, _ in counts}):
        t.add_row(kind, *(f"{counts[(kind, o)]:,}" for o in outcomes))
    con.print(t)
    con.print(f"failures (traceback, hang, undocumented exit code, control character shown): {len(failures)}")
    for argv, o in failures[:5]:
        con.print(f"{o.kind}: quco-emu {' '.join(argv)}\n{(o.trace or o.err)[-1500:]}", markup=False, highlight=False)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
