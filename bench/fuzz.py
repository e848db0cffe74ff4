"""Long fuzzing campaign: firmware against the reference model, and the command line
against mutated input files.

    .venv/bin/python bench/fuzz.py [--cases 100000] [--seed 1] [--records-per-gst 50] [--file-cases 3000]

Each GST (mostly valid, some near-valid or corrupted, a few raw bytes) boots a fresh unit,
which then serves a batch of launch records (valid, near-valid, raw). Every launch is held
to the model by quco.host.fuzz.compare: same status and detail, same LDS bytes, nothing
changed by a failed launch. Prints cases run, statuses seen, disagreements (expected 0),
faults (expected 0), the most instructions one launch took and the stack high-water mark.

Half the records are fuzz.shaped launches: the queue shapes the algorithm branches on,
moved to a decision boundary of the model (Little's rounding points and others) a third of
the time. Then the same GSTs and records go through the firmware's C built for the host with
gcov (bench/fuzz_coverage.py): its answers must equal the emulator's, byte for byte, and it
prints the branches of quco/firmware/src/*.c the campaign reached and lists each one it did not
(--no-coverage skips it; expected: none but the documented ones of docs/testing.md).

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
from pathlib import Path

from rich.table import Table

import fuzz_coverage
from _console import Console
from _progress import Steps
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
    ap.add_argument("--shaped", type=float, default=0.5, help="share of records drawn by fuzz.shaped")
    ap.add_argument("--no-coverage", action="store_true", help="skip the host build's branch coverage")
    args = ap.parse_args(argv)
    con, rng, elf = Console(), random.Random(args.seed), firmware_path()
    statuses, boots = collections.Counter(), collections.Counter()
    disagreements, faults, cases, max_instr, max_stack, batches = [], [], 0, 0, 0, []
    t0 = time.perf_counter()
    # progress on stderr (a bar on a terminal, a line a quarter without): stdout holds the tables alone
    with Steps("fuzz", "launches", args.cases) as progress:
        while cases < args.cases:
            raw = fuzz.gst(rng)
            dev = Device(raw, elf)
            boots[dev.boot_status.name] += 1
            g = tables.unpack(raw)
            batch = fuzz_coverage.Batch(raw, boot=(int(dev.boot_status), dev.boot_detail))
            batches.append(batch)
            for _ in range(min(args.records_per_gst, args.cases - cases)):
                if batch.records and rng.random() < 0.1:  # a relaunch: the cache, the configuration in the LDS
                    record = rng.choice(batch.records[-6:])
                else:
                    record = fuzz.shaped(rng, raw, steer_p=0.33) if rng.random() < args.shaped else fuzz.record(rng, g)
                cases += 1
                try:
                    res = fuzz.compare(dev, record)
                    statuses[res.status.name] += 1
                    max_instr = max(max_instr, res.instructions)
                except fuzz.Disagreement as e:
                    disagreements.append(str(e))
                    res = e.result
                except Fault as e:
                    faults.append(f"{e} gst={raw.hex()} record={record.hex()}")
                    dev.reset()  # a fresh unit: so is the host build's next batch
                    batch = fuzz_coverage.Batch(raw, boot=(int(dev.boot_status), dev.boot_detail))
                    batches.append(batch)
                    continue
                batch.records.append(record)
                batch.answers.append((int(res.status), res.detail, res.generation, int(res.cache_hit),
                                      res.lds if res.ok else b""))
            max_stack = max(max_stack, dev.stack_high_water())
            progress.update(cases)
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
    covered = 0 if args.no_coverage else coverage(con, batches)
    return max(1 if disagreements or faults else 0, covered, files(con, args))


def coverage(con, batches) -> int:
    """The campaign's inputs through the host build with gcov: 1 if it disagrees with the
    emulator or a branch nobody documented as unreachable was not reached."""
    if not fuzz_coverage.available():
        con.print("coverage: skipped (gcc or gcov missing)")
        return 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, Steps("fuzz", "coverage", 1) as progress:
        progress.step("the firmware built for the host with gcov, every launch again")
        exe = fuzz_coverage.build(Path(folder))
        host = fuzz_coverage.run(exe, batches)
        bad = fuzz_coverage.mismatches(batches, host)
        found = fuzz_coverage.branches(Path(folder))
    launches = sum(len(b.records) for b in batches)
    t = Table(title=f"branches of quco/firmware/src/*.c reached (gcov, host build, {launches:,} launches, "
                    f"{time.perf_counter() - t0:.0f} s)")
    for col in ("file", "branches", "reached", "unreachable (documented)", "not reached"):
        t.add_column(col, justify="left" if col == "file" else "right")
    known = fuzz_coverage.UNREACHABLE
    missed = [b for b in found if b.count == 0 and b.key not in known]
    stale = [k for k in known if not any(b.key == k and b.count == 0 for b in found)]
    for name in sorted({b.file for b in found}):
        mine = [b for b in found if b.file == name]
        t.add_row(name, str(len(mine)), str(sum(b.count > 0 for b in mine)),
                  str(sum(b.count == 0 and b.key in known for b in mine)), str(sum(b in missed for b in mine)))
    con.print(t)
    con.print(f"host build vs emulator: {launches - len(bad):,} of {launches:,} launches and "
              f"{len(batches):,} boots byte for byte the same; mismatches {len(bad)}")
    for line in bad[:5]:
        con.print(line, markup=False, highlight=False)
    for b in missed:
        con.print(f"not reached: {b.file}:{b.line} branch {b.index + 1} of {b.of}: {b.text.strip()}",
                  markup=False, highlight=False)
    for k in stale:
        con.print(f"documented as unreachable but reached or gone: {k}", markup=False, highlight=False)
    return 1 if bad or missed or stale else 0


def files(con, args) -> int:
    """The CLI against mutated input files; 1 if any run failed."""
    if args.file_cases <= 0:
        return 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, Steps("fuzz", "input files", args.file_cases) as progress:
        counts, failures = fuzz_files.campaign(random.Random(args.seed), args.file_cases, folder, args.timeout,
                                               progress.update)
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
