"""The scorecard's files: report.md (the table and the figures, readable on its own),
rows.csv, the figures; all built in a temporary folder inside the output folder and moved
in at the end, one rename per file, report.md last. An interrupted run leaves no partial
file and no temporary folder.
"""
from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..util.atomic import write_text
from . import figures
from .scorecard import counts, summary_lines, trend_line
from .verdict import VERDICTS

CSV_COLUMNS = ("id", "source", "statement", "paper", "ours", "verdict", "way", "weight", "chance", "kind", "lo", "hi",
               "tolerance", "tiles", "slots", "reason", "weight_reason", "note", "quote", "detail", "why_missing",
               "value")


def check_out_dir(path) -> Path:
    """--out: a folder that exists or can be made, and that we can write in. OSError
    (with a message naming the folder) otherwise, before any work is done."""
    if str(path) == "":
        raise OSError(errno.ENOENT, "--out: no output folder given (an empty name)")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise OSError(e.errno, f"--out {out}: cannot write there: {e.strerror}") from None
    return out


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({**r, "value": json.dumps(r["value"]), "tiles": _list(r["tiles"]), "slots": _list(r["slots"]),
                    "chance": "" if r.get("chance") is None else f"{r['chance']:.4f}"})
    return buf.getvalue()


def _list(v):
    return "" if v is None else " ".join(map(str, v))


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _verdict(r: dict) -> str:
    text = r["verdict"] + (f" ({r['way']})" if r.get("way") else "")
    return f"**{text}**" if r["verdict"] == "differs" else text


def _weight(r: dict) -> str:
    return r.get("weight", "") + (f" ({r['chance']:.0%})" if r.get("chance") is not None else "")


def markdown(rows: list[dict], figs: list[tuple], command: str, changed: list[dict] | None = None,
             removed: list[str] | None = None) -> str:
    n = counts(rows)
    summary = summary_lines(rows)
    held = [r["id"] for r in rows if r.get("weight") == "evidence" and r["verdict"] == "holds"]
    lines = ["# The QuCo paper (HPCA'26), claim by claim", "",
             f"`{command}`", "",
             f"**{summary[0]}**", "", "```", *summary[1:], "```", "",
             "Only an **evidence** row that holds counts as reproduced. A row's weight says what its \"holds\" is "
             "worth: **fitted** rows are the calibration targets (QuCo's own Table III column for the algorithm, "
             "the Fine-Tuned column for the performance model), so a hold there is a residual; **derived** rows "
             "follow from other rows; an evidence row is **weak** when a random configuration of the space our "
             "Fine-Tuned searches would pass it with 25% or more (the share is shown after the weight); "
             "**extension** rows (`plus-*`, the section \"quco+ (ours, not the paper's rule set)\") put the paper's "
             "claim to quco+, our second rule set, and are never counted as reproduced. Each row's "
             "weight has its reason (at the end). A **differs** is a finding about this tree, not a failed test: "
             "it says which way it goes: *against* (QuCo does worse here than the paper says), *in our favour* "
             "(better), or *neither way* (another pick, or a claim neither side of which favours QuCo).", "",
             "**Which rule set is the paper's:** every row judges the firmware's default rule set, `quco`, the "
             "paper's (its Section IV and Algorithms 2/3, read as docs/algorithm.md argues), except the extension "
             "rows, which judge `quco+` (`FLAG_QUCO_PLUS` in the launch record: integer slots, no CU step, a ring "
             "deepened while the CU keeps its work-groups, each queue's passes read), ours and not the paper's, "
             "argued from the H100 sweep it is judged on.", "",
             f"Evidence that holds ({len(held)}): " + (", ".join(f"`{i}`" for i in held) or "none") + ".", "",
             "Each row is one claim of the paper that a number or a direction can check (the claims are data: "
             "`paper/claims.toml`). *paper* is the paper's value, *ours* what this tree computes: picks from the "
             "firmware on the emulated unit, cases and ablations from the performance model, models and DVFS from "
             "the workload runner. Verdicts: **holds** (ours is the paper's), **within tolerance** (within the "
             "claim's written tolerance), **differs**, **no verdict** (the Radeon 530's Table III column is withheld "
             "from us: our picks are shown, never judged; Fig. 11, a distribution with no number), "
             "**could not compute**. docs/paper.md explains the tolerances; every claim's reason is listed at "
             "the end.", ""]
    if changed is not None:
        lines += ["## Changed since the baseline", "", trend_line(changed) + ".", ""]
        if changed:
            lines += ["| claim | verdict before | verdict | weight before | weight | ours before | ours | trend |",
                      "|---|---|---|---|---|---|---|---|"]
            lines += [f"| `{c['id']}` | {c['verdict_before']} | {c['verdict']} | {c['weight_before']} | {c['weight']} | "
                      f"{_cell(c['ours_before'])} | {_cell(c['ours'])} | {c['trend']} |" for c in changed]
            lines.append("")
        if removed:
            lines += ["Removed from the claims file since the baseline: " + ", ".join(f"`{i}`" for i in removed) + ".", ""]
    lines += _figures([f for f in figs if f[0] is None])
    sources = list(dict.fromkeys(r["source"] for r in rows))
    for source in sources:
        mine = [r for r in rows if r["source"] == source]
        lines += [f"## {source}", "", "| claim | statement | paper | ours | verdict | weight |", "|---|---|---|---|---|---|"]
        lines += [f"| `{r['id']}` | {_cell(r['statement'])} | {_cell(r['paper'])} | {_cell(r['ours'])} | "
                  f"{_verdict(r)} | {_weight(r)} |" for r in mine]
        lines.append("")
        lines += _figures([f for f in figs if f[0] == source])
    rest = [f for f in figs if f[0] is not None and f[0] not in sources]
    if rest:   # drawn from sources that other claims needed
        lines += ["## Other figures", ""] + _figures(rest)
    lines += ["## Every claim: tolerance, reason, our comparisons", ""]
    for r in rows:
        bounds = _bounds(r)
        lines += [f"- `{r['id']}` ({r['source']}, {_verdict(r)}, {_weight(r)}): {_cell(r['statement'])}. "
                  + (f"The paper: \"{_cell(r['quote'])}\" " if r.get("quote") else "")
                  + f"Paper: {_cell(r['paper'])}; "
                  f"ours: {_cell(r['detail'])}.{(' Judged: ' + bounds + '.') if bounds else ''} "
                  f"Why: {_cell(r['reason'])} Weight: {_cell(r.get('weight_reason', ''))}"
                  + (f" Note: {_cell(r['note'])}" if r["note"] else "")
                  + (f" Could not compute: {_cell(r['why_missing'])}" if r["why_missing"] else "")]
    lines += ["", "Counts: " + ", ".join(f"{v} {n[v]}" for v in VERDICTS), ""]
    return "\n".join(lines)


def _figures(figs: list) -> list[str]:
    lines = []
    for _, caption, paths in figs:
        for png in (Path(p) for p in paths if Path(p).suffix == ".png"):
            lines += [f"![{caption}]({png.name})", "", f"*{caption}* (`{png.name}`, `{png.with_suffix('.svg').name}`)", ""]
    return lines


def _bounds(r: dict) -> str:
    if r["kind"] == "range":
        lo = "" if r["lo"] is None else f"{r['lo']:g}"
        hi = "" if r["hi"] is None else f"{r['hi']:g}"
        span = f"{lo} to {hi}" if lo and hi else (f"at least {lo}" if lo else f"at most {hi}")
        return f"holds {span}, within tolerance {r['tolerance']:g} beyond"
    if r["kind"] == "pick":
        return "exact: tile " + ("any" if r["tiles"] is None else " or ".join(map(str, r["tiles"]))) + \
               ", streaming slots " + ("any" if r["slots"] is None else " or ".join(map(str, r["slots"])))
    if r["kind"] in ("all", "any"):
        return f"{r['kind']} of the comparisons, relative tolerance {r['tolerance']:g}"
    return ""


def write(out_dir, rows: list[dict], sources: dict, command: str, changed: list[dict] | None = None,
          progress=None, removed: list[str] | None = None) -> list[Path]:
    """Every file into `out_dir`; returns their paths. The same rows give the same bytes."""
    out = Path(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix=".paper-", dir=out))
    try:
        figs = figures.draw(sources, rows, tmp, progress)
        write_text(tmp / "rows.csv", csv_text(rows))
        write_text(tmp / "report.md", markdown(rows, figs, command, changed, removed))
        names = sorted((p.name for p in tmp.iterdir()), key=lambda n: (n == "report.md", n))
        for name in names:   # report.md last: once it is there, everything it shows is
            os.replace(tmp / name, out / name)
        return [out / n for n in names]
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
