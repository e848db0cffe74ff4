"""quco-emu paper: the paper's claims, claim by claim, against this tree (quco.paper).

    quco-emu paper --out paper-out/                  # the summary; figures, report.md, rows.csv
    quco-emu paper --table                           # + every row in a table
    quco-emu paper --gpu r9-nano --json              # the claims that run on the R9 Nano only, as JSON
    quco-emu paper --gpu h100-sxm                    # the real-hardware section alone (H100 measurements)
    quco-emu paper --claims fig6-quco-gap-mean,table3-mi100-quco-matrix-matrix
    quco-emu paper --list                            # every claim's id and statement
    quco-emu paper --baseline old/rows.csv           # + what changed since an earlier run

Exit 0 whatever the verdicts (it is a report); 2 for bad input, 5 for a firmware image that
cannot be loaded (checked before any work, like every command that runs the firmware).
cli/main.py registers it.
"""
from __future__ import annotations

import json
import os
import shlex
import time

from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from . import common
from ..paper import claims as claims_mod
from ..paper import scorecard
from ..paper.measures import MEASURES
from ..paper.ours import GPUS, HARDWARE_GPU

VERDICT_STYLE = {"holds": "green", "within tolerance": "yellow", "differs": "red", "no verdict": "dim",
                 "could not compute": "magenta"}


def _ids(text: str) -> list[str]:
    ids = [i.strip() for i in text.split(",") if i.strip()]
    if not ids:
        raise common.UserError("--claims: no claim id given; expected ID,ID,... (`quco-emu paper --list`)")
    return ids


def _table(rows: list[dict]) -> Table:
    t = Table(title=Text("The QuCo paper, claim by claim"))
    for col in ("claim", "source", "paper", "ours", "verdict", "weight"):
        t.add_column(col, no_wrap=col in ("claim", "verdict"), overflow="fold")
    for r in rows:
        verdict = r["verdict"] + (f" ({r['way']})" if r["way"] else "")
        t.add_row(Text(r["id"]), Text(r["source"]), Text(r["paper"]), Text(r["ours"]),
                  Text(verdict, style=VERDICT_STYLE[r["verdict"]]), Text(_weight(r)))
    return t


def _weight(r: dict) -> str:
    return r["weight"] + (f" (chance {r['chance']:.0%})" if r.get("chance") is not None else "")


def _by_source(rows: list[dict]) -> Table:
    """One line per source of the paper: holds / claims for each weight, and which way the misses go."""
    t = Table(title=Text("By source of the paper: holds / claims per weight; misses (differs or within "
                         "tolerance) by which way they go"))
    for col in ("source", *scorecard.WEIGHTS, "no verdict", "against", "in our favour", "neither way"):
        t.add_column(col, justify="left" if col == "source" else "right")
    for source in dict.fromkeys(r["source"] for r in rows):
        mine = [r for r in rows if r["source"] == source]
        w = scorecard.weighted(mine)
        cells = [f"{w[k]['holds']}/{w[k]['claims']}" if w[k]["claims"] else "" for k in scorecard.WEIGHTS]
        ways = [sum(w[k]["ways"][way] for k in scorecard.WEIGHTS) for way in ("against", "in our favour", "neither way")]
        t.add_row(Text(source), *map(Text, cells), Text(str(w["no verdict"] or "")), *(Text(str(n or "")) for n in ways))
    return t


def _summary(rows: list[dict], console, out_dir, seconds: float) -> None:
    """The terminal's view: the count line, the weights, the table by source, the evidence that
    holds, and where every row is explained."""
    lines = scorecard.summary_lines(rows)
    console.print(Text(f"scorecard: {lines[0]} ({seconds:.0f} s)", style="bold"))
    for line in lines[1:]:
        console.print(Text(line))
    console.print(_by_source(rows))
    held = [r["id"] for r in rows if r["weight"] == "evidence" and r["verdict"] == "holds"]
    console.print(Text(f"evidence that holds ({len(held)}): " + (", ".join(held) or "none")))
    where = f"{out_dir}/report.md" if out_dir is not None else "report.md (`--out DIR` writes it)"
    console.print(Text("A 'differs' is a finding about this tree, not a failed test: the paper's number or direction "
                       f"is not what our firmware and model give, and the row says which way. {where} explains every "
                       "row (our value, the tolerance and why, the weight and why); `--table` prints every row here."))


def _changes_table(changed: list[dict], baseline: str) -> Table:
    t = Table(title=Text(f"Changed since {baseline}"))
    for col in ("claim", "verdict before", "verdict", "weight before", "weight", "ours before", "ours", "trend"):
        t.add_column(col, no_wrap=col == "claim", overflow="fold")
    for c in changed:
        t.add_row(Text(c["id"]), Text(c["verdict_before"]), Text(c["verdict"], style=VERDICT_STYLE[c["verdict"]]),
                  Text(c["weight_before"]), Text(c["weight"]), Text(c["ours_before"]), Text(c["ours"]),
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
        if args.json:
            print(json.dumps([{"id": c.id, "source": c.source, "statement": c.statement, "paper": c.paper,
                               "kind": c.kind, "weight": c.weight, "weight_reason": c.weight_reason,
                               "quote": c.quote} for c in chosen], indent=2, ensure_ascii=False))
            return 0
        for c in chosen:
            common.out.print(Text(f"{c.id}  [{c.source}, {c.weight}]  {c.statement}"))
        return 0
    if not chosen:
        raise fail(f"no claim runs on {', '.join(args.gpu)} alone"
                   + (" among those given to --claims" if args.claims else ""))
    common.check_sweep_options(args)
    out_dir = report.check_out_dir(args.out) if args.out is not None else None   # refused before any work
    # the firmware every source runs, loaded once here: a missing, empty or foreign image exits 5
    # now (as for launch, run, evaluate) instead of turning every claim into "could not compute"
    from ..emulator import elf
    from ..host.device import firmware_path
    elf.load(firmware_path(args.firmware))
    before = None
    if args.baseline is not None:
        from ..util.userinput import UserFileError
        try:
            before = scorecard.read_baseline(args.baseline)
        except UserFileError as e:
            raise fail(f"--baseline: {e}") from None
    from ..util.parallel import SweepError
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
        removed = [i for i in (before or {}) if i not in {c.id for c in every}]   # gone from the claims file
        written = []
        if out_dir is not None:
            job = bar.add_task("figures and report", total=len(report.figures.FIGURES))
            written = report.write(out_dir, rows, sources, command_line(args), changed,
                                   progress=lambda: bar.advance(job), removed=removed)
    if args.json:
        doc = {"summary": scorecard.counts(rows), "weighted": scorecard.weighted(rows),
               "reproduced": scorecard.summary_line(rows), "rows": rows}
        print(json.dumps(doc if changed is None else {**doc, "changes": changed, "removed": removed}, indent=2))
        return 0
    if args.table:
        common.out.print(_table(rows))
    if changed:
        common.out.print(_changes_table(changed, args.baseline))
    _summary(rows, common.out, out_dir, time.monotonic() - start)
    if changed is not None:
        common.out.print(Text(f"since {args.baseline}: {scorecard.trend_line(changed)}"
                              + (f"; removed from the claims file: {', '.join(removed)}" if removed else "")))
    if written:
        common.out.print(Text(f"wrote {len(written)} files to {out_dir} (report.md, rows.csv, figures)"))
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("paper", help="the paper's claims, claim by claim: table, figures, report.md, rows.csv")
    p.add_argument("--out", metavar="DIR", help="write report.md, rows.csv and the figures (PNG, SVG) here")
    p.add_argument("--json", action="store_true", help="the rows as JSON on stdout")
    p.add_argument("--claims", metavar="ID,...", help="only these claims (ids: --list)")
    p.add_argument("--gpu", action="append", choices=GPUS + (HARDWARE_GPU,),
                   help="only the claims that run on this GPU alone (repeat for several; "
                        f"{HARDWARE_GPU}: the real-hardware section)")
    p.add_argument("--list", action="store_true", help="print the claims' ids and statements, compute nothing "
                   "(with --json: as JSON)")
    p.add_argument("--table", action="store_true", help="print every row in a table before the summary")
    p.add_argument("--baseline", metavar="ROWS.csv",
                   help="an earlier run's rows.csv: list the claims whose verdict or value changed since")
    common.add_sweep_options(p)
    p.add_argument("--firmware", help="firmware ELF (default $QUCO_FIRMWARE, else the installed quco.elf)")
    p.set_defaults(func=cmd_paper)
