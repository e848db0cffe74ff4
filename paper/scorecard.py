"""The scorecard: claims -> the sources they need -> our values -> verdicts, as rows.

    chosen = select(claims.load(measures=MEASURES), ids=None, gpus={"r9-nano"})
    rows, sources = run(chosen, workers=2)

A row is a flat dict (id, source, statement, paper, ours, verdict, ...) ready for the
table, the CSV and the JSON.
"""
from __future__ import annotations

import collections
import csv
import io
from dataclasses import asdict

from . import claims as claims_mod
from . import ours
from .measures import MEASURES, SourceFailed, compute
from .verdict import MISSING, VERDICTS, Check, Pick, judge, show


def needs(claim) -> list[tuple]:
    return MEASURES[claim.measure].needs(claim.args)


def select(claims: list, ids=None, gpus=None) -> list:
    """The claims named by `ids` (None: all) that run only on `gpus` (None: any GPU)."""
    chosen = claims_mod.select(claims, ids)
    if gpus is not None:
        chosen = [c for c in chosen if all(ours.gpus_of(k) <= set(gpus) for k in needs(c))]
    return chosen


def run(claims: list, firmware=None, workers=None, scheduler=None, progress=None) -> tuple[list[dict], dict]:
    keys = [k for c in claims for k in needs(c)]
    sources = ours.compute(keys, firmware, workers, scheduler, progress)
    return [row(c, sources) for c in claims], sources


def row(claim, sources: dict) -> dict:
    why = ""
    try:
        value = compute(claim.measure, sources, claim.args)
    except SourceFailed as e:
        value, why = None, str(e)
    except Exception as e:
        # a source whose shape changed under us (the model and the workloads change often):
        # said on the row with the error, not a crash of the whole report
        value, why = None, f"{claim.measure}: {type(e).__name__}: {e}"
    verdict = judge(claim, value)
    if verdict == MISSING and not why:
        why = "no value (nothing fits, or a case has no configuration)"
    return {"id": claim.id, "source": claim.source, "statement": claim.statement, "paper": claim.paper,
            "ours": show(claim, value), "verdict": verdict, "kind": claim.kind,
            "tolerance": claim.tolerance, "lo": claim.lo, "hi": claim.hi,
            "tiles": list(claim.tiles) if claim.tiles else None, "slots": list(claim.slots) if claim.slots else None,
            "reason": claim.reason, "note": claim.note, "detail": show(claim, value, detail=True),
            "why_missing": why, "value": plain(value)}


def plain(value):
    """Our value as JSON-able data."""
    if isinstance(value, Pick):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return [asdict(v) if isinstance(v, Check) else v for v in value]
    return value


def counts(rows: list[dict]) -> dict:
    c = collections.Counter(r["verdict"] for r in rows)
    return {v: c.get(v, 0) for v in VERDICTS}


def summary_line(rows: list[dict]) -> str:
    n = counts(rows)
    return f"{len(rows)} claims: " + ", ".join(f"{n[v]} {v}" for v in VERDICTS)


# ---------------------------------------------------------------- against an earlier run
RANK = {"holds": 2, "within tolerance": 1, "differs": 0}   # no verdict / could not compute: unranked
BASELINE_LIMIT = 16 << 20


def read_baseline(path) -> dict[str, dict]:
    """An earlier run's rows.csv: {id: row}. UserFileError names the file, the line and the
    field: a row with more or fewer fields than the header, a field past csv's limit or an
    unterminated quote, CR-only line ends. Values come back with control characters escaped
    (they are shown in the changes table)."""
    from ..gst.userinput import UserFileError, printable, read_text
    text, where = read_text(path, BASELINE_LIMIT, "rows.csv of an earlier `quco-emu paper --out`"), printable(str(path))
    if "\r" in text.replace("\r\n", ""):
        line = text.replace("\r\n", "\n").split("\r")[0].count("\n") + 1
        raise UserFileError(f"{where}: line {line}: a line ends in a lone CR (\\r); expected LF or CRLF line ends, as "
                            "`quco-emu paper --out` writes them")
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    out, last = {}, 0  # last: the line the last whole row ended on
    try:
        missing = [c for c in ("id", "verdict", "ours") if c not in (reader.fieldnames or [])]
        last = reader.line_num
        if missing:
            raise UserFileError(f"{where}: no column {missing[0]!r}; expected the rows.csv that `quco-emu paper --out` "
                                "writes")
        width = len(reader.fieldnames)
        for r in reader:
            line = reader.line_num
            extra, short = r.pop(None, None), [k for k, v in r.items() if v is None]
            if extra or short:
                n = width + len(extra or []) - len(short)
                raise UserFileError(f"{where}: line {line}: {n} fields; expected {width}, one per column of the header"
                                    + (f" (no {short[0]!r})" if short else ""))
            r = {k: printable(v) for k, v in r.items()}
            if r["verdict"] not in VERDICTS:
                raise UserFileError(f"{where}: line {line}: verdict {r['verdict'][:40]!r} is not one of: "
                                    f"{', '.join(VERDICTS)}")
            out[r["id"]] = r
            last = line
    except csv.Error as e:  # a field past csv.field_size_limit(), an unterminated quote, a NUL
        raise UserFileError(f"{where}: line {last + 1}: not CSV as `quco-emu paper --out` writes it: "
                            f"{printable(str(e))}") from None
    return out


def changes(rows: list[dict], before: dict[str, dict]) -> list[dict]:
    """Claims whose verdict or value changed since `before` (read_baseline), new ones included;
    `trend`: better / worse (holds > within tolerance > differs) / changed."""
    out = []
    for r in rows:
        old = before.get(r["id"])
        if old is not None and (old["verdict"], old["ours"]) == (r["verdict"], r["ours"]):
            continue
        was = old["verdict"] if old else "(new claim)"
        a, b = RANK.get(was), RANK.get(r["verdict"])
        trend = "changed" if a is None or b is None or a == b else ("better" if b > a else "worse")
        out.append({"id": r["id"], "verdict_before": was, "verdict": r["verdict"],
                    "ours_before": old["ours"] if old else "", "ours": r["ours"], "trend": trend})
    return out


def trend_line(changed: list[dict]) -> str:
    n = collections.Counter(c["trend"] for c in changed)
    return (f"{len(changed)} claims changed: {n['better']} better, {n['worse']} worse, "
            f"{n['changed']} otherwise (new, unjudged, or the value only)")
