"""The model's predicted time for every TMA configuration of a measurement file's grid, on a
preset, written before that GPU's measurements are seen (issue #29's pre-registered predictions).

    .venv/bin/python bench/predict_hardware.py --gpu h200 -o OUT.csv [FILE.csv]
        [--work-groups N[,N...] | --work-groups KERNEL=N[,N...] ...] [--label NAME]

FILE (default: quco/examples/hardware/h100-tma-sweep.csv) gives the grid: per kernel and size
its work-groups and every (tile, slots) of its `att` rows. OUT has FILE's columns plus
`model_us`, one row per configuration: `time_us` and `gbps` empty (nothing measured), `bytes`
FILE's for the same row, `fits` whether the measured kernel's shared-memory layout
(hardware.measured_residency) holds at least one work-group on the preset's SM, with
`smem_required` where it does not. A one-step tile FILE shows was not pipelined (the compiler
drops a one-iteration loop with constant bounds: hardware.unpipelined_tiles) is predicted as
FILE ran it. Only the kernels the model compares (hardware.COMPARED); Matrix-Matrix's measured
loop nest is not the model's. `--work-groups` adds every kernel's (tile, slots) at further
grid sizes, labelled wg<N> (`--label` names a kernel's only further size), `bytes` empty there. The first lines are `# `
comments: the preset, the git commit of the model that made them, FILE and its sha256.
Compare with the real file later: bench/hardware.py REAL.csv --gpu PRESET (which reads the
measured format only; this file is not one).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import io
import subprocess
import sys
from pathlib import Path

from quco.gst import tables
from quco.perfmodel import hardware
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work
from quco.util import atomic
from quco.util.userinput import whole_number

ROOT = Path(__file__).resolve().parent.parent
FIELDS = hardware.FIELDS + ("model_us",)


def commit() -> str:
    """HEAD of this checkout, '+dirty' when a tracked file differs from it (the model that
    made the predictions is then not that commit's)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    head = git("rev-parse", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def work_groups(specs: list[str]) -> dict:
    """--work-groups values: {kernel or None (every kernel): [N, ...]} (repeat the option, or
    give N,N,... , for several further sizes)."""
    out: dict = {}
    for s in specs:
        name, _, ns = s.rpartition("=")
        if name and name not in hardware.COMPARED:
            raise ValueError(f"--work-groups {s!r}: kernel {name!r}: expected one of {', '.join(hardware.COMPARED)}")
        for n in ns.split(","):
            n = whole_number(n, 1, 1 << 31, f"--work-groups {s!r}:")
            sizes = out.setdefault(name or None, [])
            if n not in sizes:
                sizes.append(n)
    return out


def predict(m, rows: list[hardware.Measurement], grid: dict, label: str | None) -> list[dict]:
    """One output row per `att` row of a compared kernel in `rows` (file order), then per
    kernel every (tile, slots) of its rows at grid's work-groups (their `fits` kept from the
    file: what the compiler did with a one-step loop, hardware.unpipelined_tiles)."""
    groups: dict = {}
    for r in rows:
        if r.variant == "att" and r.kernel in hardware.COMPARED and r.tile and r.slots:
            groups.setdefault((r.kernel, r.size, r.work_groups), []).append(r)
    extra: dict = {}
    for (name, _, _), rs in groups.items():
        sizes = grid.get(name, grid.get(None, []))
        for n in sizes:
            tag = label if label and len(sizes) == 1 else f"wg{n}"
            extra.setdefault((name, tag, n), {}).update({(r.tile, r.slots): r for r in rs})
    todo = list(groups.items())
    todo += [((name, size, n), [dataclasses.replace(r, size=size, work_groups=n, bytes=None) for _, r in sorted(by.items())])
             for (name, size, n), by in extra.items()]
    out = []
    for (name, size, wgs), rs in todo:
        work = Work.of(hardware.scaled_kernel(name, wgs))
        flat = hardware.unpipelined_tiles(m, work, rs)
        for r, p in zip(rs, hardware.points(m, work, rs)):
            occ = hardware.measured_residency(m, work, r.tile, r.slots, pipelined=r.tile not in flat)
            out.append({"kernel": name, "variant": "att", "size": size, "work_groups": wgs, "tile": r.tile,
                        "slots": r.slots, "fits": "yes" if occ >= 1 else "no",
                        "bytes": "" if r.bytes is None else r.bytes,
                        "smem_required": "" if occ >= 1 else hardware.measured_smem(m, work, r.tile, r.slots),
                        "model_us": f"{p.model_us:.3f}" if p.model_us is not None else ""})
    return out


def render(out: list[dict], header: list[str]) -> str:
    buf = io.StringIO()
    for line in header:
        buf.write(f"# {line}\n")
    w = csv.DictWriter(buf, FIELDS, restval="", lineterminator="\n")
    w.writeheader()
    w.writerows(out)
    return buf.getvalue()


def check_label(label: str | None, grid: dict, rows: list[hardware.Measurement]) -> None:
    """--label names a kernel's one further size: it must name one (a kernel with one further size
    to take it; with several they are wg<N>) and not a size FILE has (its rows would merge)."""
    if label is None:
        return
    if not any(len(ns) == 1 for ns in grid.values()):
        given = ", ".join(f"{k or 'every kernel'}: {len(ns)}" for k, ns in grid.items()) or "none"
        raise ValueError(f"--label {label!r}: names a kernel's one further size; --work-groups gives {given} "
                         "(several sizes are labelled wg<N>)")
    if label in {r.size for r in rows}:
        raise ValueError(f"--label {label!r}: a size the grid file already has; expected another name")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(hardware.DEFAULT_DATA))
    ap.add_argument("--gpu", required=True, choices=tables.preset_names())
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--work-groups", action="append", default=[], metavar="[KERNEL=]N")
    ap.add_argument("--label", help="the size label of the --work-groups rows where a kernel has one further "
                    "size (default, and with several: wg<N>)")
    args = ap.parse_args(argv)
    try:
        grid = work_groups(args.work_groups)
        atomic.check_target(args.output)
        rows, data = hardware.read_with_bytes(args.file)   # the rows and the bytes hashed below: one read
        check_label(args.label, grid, rows)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    m = machine(tables.unpack(tables.load(args.gpu)))
    out = predict(m, rows, grid, args.label)
    source = Path(args.file)
    header = [f"predicted by bench/predict_hardware.py: preset {args.gpu}, model at git commit {commit()}; made before "
              f"any measurement of these rows on that GPU, except the rows {source.name} itself holds (the "
              "model's constants may be fitted on those)",
              f"grid of {source.name} (sha256 {hashlib.sha256(data).hexdigest()})"
              + ("".join(f"; {k or 'every kernel'} also at {', '.join(map(str, ns))} work-groups"
                         for k, ns in grid.items())),
              "time_us and gbps empty: nothing measured; model_us: the model's time (us); compare: "
              "bench/hardware.py REAL.csv --gpu " + args.gpu]
    try:
        atomic.write_text(args.output, render(out, header))
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}: {len(out)} configurations on {args.gpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
