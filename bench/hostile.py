"""The hostile-input corpus of issues #13 and #24: about a thousand command lines a hostile
user would try, each stating what should happen, run in-process through `quco-emu`
(surface_cases: the sweeps, tenants, gdb options, workloads, DVFS traces and output kinds
added since #13).

    .venv/bin/python bench/hostile.py [--timeout 20] [--show 10] [-k WORD]

A case expects either an accept (exit 0) or a clean error: one of the stated exit codes,
the stated words in the message, nothing on stdout (exit 2), no traceback, no control
character on the terminal, and an output file that was there before left as it was.
Prints the counts: clean errors, correct accepts, tracebacks, hangs, nonsense accepted
(an error expected, exit 0), wrong errors (other code or message) and good input refused.
Cases that belong to issue #13's items 8 and 10 (gst pack validation, host checks of the
firmware's output) are counted apart, as residuals of that work.
"""
from __future__ import annotations

import argparse
import collections
import os
import stat
import sys
import tempfile
from pathlib import Path

from rich.table import Table

from _console import Console
from _progress import track
from hostile_corpus import Case, corpus
from quco.cli.fuzz_files import run_cli

OLD = b"the previous output, which a failed run must leave alone\n"
PLACES = ("{k}", "{g}", "{p}", "{dir}", "{fifo}", "{tmp}", "{out}")


def materialize(case: Case, folder: Path) -> dict:
    """Write the case's files into `folder`; returns placeholder -> path."""
    (folder / "d").mkdir()
    os.mkfifo(folder / "fifo")
    os.symlink("nowhere", folder / "dangling.csv")
    if os.geteuid() == 0:
        os.mknod(folder / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    (folder / "out.gst").write_bytes(OLD)
    names = {"{k}": "k.json", "{g}": next((n for n in case.files if n.startswith("g.")), "g.toml"),
             "{p}": "p.toml", "{dir}": "d", "{fifo}": "fifo", "{out}": "out.gst"}
    where = {key: str(folder / n) for key, n in names.items()} | {"{tmp}": str(folder)}
    for name, data in case.files.items():
        for key, path in where.items():
            data = data.replace(key.encode(), path.encode())
        (folder / names.get(f"{{{name}}}", name)).write_bytes(data)
    return where


def judge(case: Case, folder: Path) -> tuple[str, str]:
    """(class, detail) of one case, run in `folder`."""
    where = materialize(case, folder)
    argv = [a for a in case.argv]
    for i, a in enumerate(argv):
        for key, path in where.items():
            a = a.replace(key, path)
        argv[i] = a
    o = run_cli(argv, ARGS.timeout)
    detail = f"quco-emu {' '.join(repr(a)[:80] if not a.isprintable() or len(a) > 80 else a for a in argv)} -> " \
             f"{o.kind} {o.code}: {(o.trace or o.err or o.out)[-600:]}"
    out_now = (folder / "out.gst").read_bytes() if (folder / "out.gst").is_file() else b""
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    if (folder / "full").exists() and not stat.S_ISCHR(os.lstat(folder / "full").st_mode):
        leftovers.append("full (the device was replaced)")
    if o.kind in ("traceback", "hang"):
        return o.kind, detail
    if o.leaked_control():
        return "control character shown", detail
    if not case.codes:
        if o.code != 0:
            return "good input refused", detail
        return ("correct accept" if all(w in o.out for w in case.words) else "accept, wrong output"), detail
    if o.code == 0:
        return "nonsense accepted", detail
    ok = (o.code in case.codes and all(w.lower() in o.err.lower() for w in case.words)
          and (o.code != 2 or o.out == "") and out_now == OLD and not leftovers and "Traceback" not in o.err)
    return ("clean error" if ok else "wrong error"), detail


ARGS = argparse.Namespace(timeout=20.0)
GOOD = ("clean error", "correct accept")


def main(argv=None) -> int:
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a case may take before it counts as a hang")
    ap.add_argument("--show", type=int, default=10, help="print this many failing cases")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ARGS = ap.parse_args(argv)
    con = Console()
    cases = [c for c in corpus() if ARGS.k in c.name]
    mine, residual, bad = collections.Counter(), collections.Counter(), []
    with tempfile.TemporaryDirectory() as top:
        # progress on stderr (the bar pinned to the real stderr: each case's own is captured)
        for i, case in enumerate(track("hostile", "case", cases, lambda c: c.name)):
            folder = Path(top) / str(i)
            folder.mkdir()
            kind, detail = judge(case, folder)
            (residual if case.item else mine)[kind] += 1
            if kind not in GOOD:
                bad.append((case, kind, detail))
    t = Table(title=f"hostile corpus: {len(cases)} cases through quco-emu")
    t.add_column("outcome")
    t.add_column("this work", justify="right")
    t.add_column("items 8/10 (residual)", justify="right")
    for kind in ("clean error", "correct accept", "traceback", "hang", "nonsense accepted", "wrong error",
                 "good input refused", "accept, wrong output", "control character shown"):
        t.add_row(kind, f"{mine[kind]:,}", f"{residual[kind]:,}")
    con.print(t)
    for case, kind, detail in [b for b in bad if not b[0].item][:ARGS.show] + [b for b in bad if b[0].item][:3]:
        con.print(f"[{kind}]{' (item ' + case.item + ')' if case.item else ''} {case.name}: {detail}",
                  markup=False, highlight=False)
    return 1 if any(not c.item for c, _, _ in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
