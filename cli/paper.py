"""quco-emu paper: the paper's claims, claim by claim, against this tree (quco.paper).

    quco-emu paper --out paper-out/                  # the table, figures, report.md, rows.csv
    quco-emu paper --gpu r9-nano --json              # the claims that run on the R9 Nano only, as JSON
    quco-emu paper --claims fig6-quco-gap-mean,table3-mi100-quco-matrix-matrix
    quco-emu paper --list                            # every claim's id and statement
    quco-emu paper --baseline old/rows.csv           # + what changed since an earlier run

Exit 0 whatever the verdicts (it is a report); 2 for bad input. cli/main.py registers it.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import time

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from . import common
from ..paper import claims as claims_mod
from ..paper import scorecard
from ..paper.measures import MEASURES
from ..paper.ours import GPUS

VERDICT_STYLE = {"holds": "green", "within tolerance": "yellow", "differs": "red", "no verdict": "dim",
                 "could not compute": "magenta"}


def _ids(text: str) -> list[str]:
    ids = [i.strip() for i in text.split(",") if i.strip()]
    if not ids:
        raise common.UserError("--claims: no claim id given; expected ID,ID,... (`quco-emu paper --list`)")
    return ids


def _table(rows: list[dict]) -> Table:
    t = Table(title=Text("The QuCo paper, claim by claim"))
    for col in ("claim", "source", "paper", "ours", "verdict"):
        t.add_column(col, no_wrap=col in ("claim", "verdict"), overflow="fold")
    for r in rows:
        t.add_row(Text(r["id"]), Text(r["source"]), Text(r["paper"]), Text(r["ours"]),
                  Text(r["verdict"], style=VERDICT_STYLE[r["verdict"]]))
    return t


def _changes_table(changed: list[dict], baseline: str) -> Table:
    t = Table(title=Text(f"Changed since {baseline}"))
    for col in ("claim", "verdict before", "verdict", "ours before", "ours", "trend"):
        t.add_column(col, no_wrap=col == "claim", overflow="fold")
    for c in changed:
        t.add_row(Text(c["id"]), Text(c["verdict_before"]), Text(c["verdict"], style=VERDICT_STYLE[c["verdict"]]),
                  Text(c["ours_before"]), Text(c["ours"]),
                  Text(c["trend"], style={"better": "green", "worse": "red"}.get(c["trend"], "")))
    return t


def command_line(args) -> str:
    """The command as the report quotes it (what was asked, not how it was spelled)."""
    words = ["quco-emu", "paper"]
    for flag, value in (("--claims", args.claims), ("--workers", args.workers), ("--scheduler", args.scheduler),
                        ("--baseline", args.baseline), ("--out", args.out)):
        if value is not None:
            words += [flag, str(value)]
    for gpu in args.gpu or []:
        words += ["--gpu", gpu]
    return " ".join(shlex.quote(w) for w in words)


def cmd_paper(args) -> int:
    from ..paper import report  # imports matplotlib (about 1 s): only the command that draws pays for it
    fail = common.UserError
    try:
        every = claims_mod.load(measures=MEASURES)
        chosen = scorecard.select(every, _ids(args.claims) if args.claims is not None else None, args.gpu)
    except claims_mod.ClaimsError as e:
        raise fail(str(e)) from None
    if args.list:
        for c in chosen:
            common.out.print(Text(f"{c.id}  [{c.source}]  {c.statement}"))
        return 0
    if not chosen:
        raise fail(f"no claim runs on {', '.join(args.gpu)} alone"
                   + (" among those given to --claims" if args.claims else ""))
    common.check_sweep_options(args)
    out_dir = report.check_out_dir(args.out) if args.out else None   # refused before any work
    before = None
    if args.baseline is not None:
        from ..gst.userinput import UserFileError
        try:
            before = scorecard.read_baseline(args.baseline)
        except UserFileError as e:
            raise fail(f"--baseline: {e}") from None
    from ..perfmodel.sweep import SweepError
    start = time.monotonic()
    show = not args.json and os.isatty(2)
    with Progress(console=common.err, transient=True, disable=not show) as bar:
        job = bar.add_task("sources (firmware, model, workloads)", total=None)
        try:
            rows, sources = scorecard.run(chosen, args.firmware, args.workers, args.scheduler,
                                          progress=lambda done, total: bar.update(job, completed=done, total=total))
        except SweepError as e:
            raise fail(f"--scheduler: {e}") from None
        changed = scorecard.changes(rows, before) if before is not None else None
        written = []
        if out_dir is not None:
            job = bar.add_task("figures and report", total=len(report.figures.FIGURES))
            written = report.write(out_dir, rows, sources, command_line(args), changed,
                                   progress=lambda: bar.advance(job))
    if args.json:
        doc = {"summary": scorecard.counts(rows), "rows": rows}
        print(json.dumps(doc if changed is None else {**doc, "changes": changed}, indent=2))
        return 0
    # the ids are long: a file or pipe gets room for them (a terminal keeps its width)
    wide = Console(width=None if sys.stdout.isatty() else 160, markup=False, emoji=False, highlight=False)
    wide.print(_table(rows))
    if changed:
        wide.print(_changes_table(changed, args.baseline))
    wide.print(Text(f"scorecard: {scorecard.summary_line(rows)} ({time.monotonic() - start:.0f} s)"))
    if changed is not None:
        wide.print(Text(f"since {args.baseline}: {scorecard.trend_line(changed)}"))
    if written:
        common.out.print(Text(f"wrote {len(written)} files to {out_dir} (report.md, rows.csv, figures)"))
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("paper", help="the paper's claims, claim by claim: table, figures, report.md, rows.csv")
    p.add_argument("--out", metavar="DIR", help="write report.md, rows.csv and the figures (PNG, SVG) here")
    p.add_argument("--json", action="store_true", help="the rows as JSON on stdout")
    p.add_argument("--claims", metavar="ID,...", help="only these claims (ids: --list)")
    p.add_argument("--gpu", action="append", choices=GPUS,
                   help="only the claims that run on this GPU alone (repeat for several)")
    p.add_argument("--list", action="store_true", help="print the claims' ids and statements, compute nothing")
    p.add_argument("--baseline", metavar="ROWS.csv",
                   help="an earlier run's rows.csv: list the claims whose verdict or value changed since")
    common.add_sweep_options(p)
    p.add_argument("--firmware", help="firmware ELF (default $QUCO_FIRMWARE, else the installed quco.elf)")
    p.set_defaults(func=cmd_paper)
