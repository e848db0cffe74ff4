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
from .chance import chance as chance_of
from .claims import WEAK, WEAK_CHANCE
from .measures import MEASURES, SourceFailed, compute
from .verdict import (AGAINST, DIFFERS, FAVOUR, HOLDS, MISSING, NEITHER, NO_VERDICT, VERDICTS, WITHIN, Check, Pick,
                      judge, show, way)

WEIGHTS = ("evidence", WEAK, "fitted", "derived", "model", "extension")   # the summary's order
WEIGHT_MEANING = {"evidence": "count as reproduced when they hold",
                  WEAK: f"a random configuration of the searched space passes with {WEAK_CHANCE:.0%} or more",
                  "fitted": "calibration targets: a residual, not a prediction",
                  "derived": "follow from other rows",
                  "model": "our performance model against measurements it was not fitted to: about the judge, not the paper",
                  "extension": "quco+, our second rule set (FLAG_QUCO_PLUS), not the paper's: the plus-* twins of the "
                               "paper's rows, argued from the H100 sweep they are judged on"}
# which rule set the rows judge: said on the terminal and in report.md
RULE_SETS = ("rule sets: every row judges the firmware's default rule set, `quco`, the paper's (Sec. IV, Algorithms 2/3), "
             "except the extension rows (plus-*), which judge `quco+` (ours, not the paper's) on the same claims")


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
    p = chance_of(claim, sources)
    weight, weight_reason = claim.weight, claim.weight_reason
    if weight == "evidence" and p is not None and p >= WEAK_CHANCE:
        weight = WEAK
        weight_reason = (f"a random configuration of the searched space passes it with probability {p:.0%} "
                         f"(at least {WEAK_CHANCE:.0%}); declared: {claim.weight_reason}")
    return {"id": claim.id, "source": claim.source, "statement": claim.statement, "paper": claim.paper,
            "ours": show(claim, value), "verdict": verdict, "weight": weight, "chance": p,
            "way": way(claim, value, verdict), "kind": claim.kind,
            "tolerance": claim.tolerance, "lo": claim.lo, "hi": claim.hi,
            "tiles": list(claim.tiles) if claim.tiles else None, "slots": list(claim.slots) if claim.slots else None,
            "reason": claim.reason, "note": claim.note, "detail": show(claim, value, detail=True),
            "weight_declared": claim.weight, "weight_reason": weight_reason, "quote": claim.quote,
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


def weighted(rows: list[dict]) -> dict:
    """{weight: {verdict: n, ..., "ways": {way: n}}} over the judged rows; "no verdict" apart."""
    out = {}
    for w in WEIGHTS:
        mine = [r for r in rows if r.get("weight") == w and r["verdict"] != NO_VERDICT]
        n = counts(mine)
        del n[NO_VERDICT]
        ways = collections.Counter(r.get("way") for r in mine if r["verdict"] in (WITHIN, DIFFERS))
        out[w] = {"claims": len(mine), **n, "ways": {k: ways.get(k, 0) for k in (AGAINST, FAVOUR, NEITHER)}}
    out[NO_VERDICT] = sum(r["verdict"] == NO_VERDICT for r in rows)
    return out


def _weight_text(n: dict) -> str:
    parts = [f"{n[v]} {v}" for v in (HOLDS, WITHIN, DIFFERS, MISSING) if n[v]]
    missed = n[WITHIN] + n[DIFFERS]
    if missed:
        ways = ", ".join(f"{k} {c}" for k, c in n["ways"].items() if c)
        parts[-1 if not n[MISSING] else -2] += f" ({ways})"
    return ", ".join(parts) or "none"


def summary_line(rows: list[dict]) -> str:
    """The count line: only `evidence` holds count as reproduced."""
    w = weighted(rows)
    ev = w["evidence"]
    return (f"{ev[HOLDS]} of {ev['claims']} evidence claims reproduced (hold); {len(rows)} claim"
            f"{'' if len(rows) == 1 else 's'} in all, "
            f"{sum(w[k]['claims'] for k in WEIGHTS) - ev['claims']} not counted (weak, fitted, derived, model checks"
            + (", quco+ extension)" if w["extension"]["claims"] else ")")
            + (f" and {w[NO_VERDICT]} without a verdict" if w[NO_VERDICT] else ""))


def summary_lines(rows: list[dict]) -> list[str]:
    """The count line, then one line per weight: its verdicts and, for the misses, which way."""
    w = weighted(rows)
    lines = [summary_line(rows)]
    for k in WEIGHTS:
        if w[k]["claims"]:
            lines.append(f"  {k:<9}{w[k]['claims']:>4}: {_weight_text(w[k])}  [{WEIGHT_MEANING[k]}]")
    if w[NO_VERDICT]:
        lines.append(f"  {'shown':<9}{w[NO_VERDICT]:>4}: no verdict (the Radeon 530's withheld picks, Fig. 11)")
    lines.append(RULE_SETS)
    return lines


# ---------------------------------------------------------------- against an earlier run
RANK = {"holds": 2, "within tolerance": 1, "differs": 0}   # no verdict / could not compute: unranked
BASELINE_LIMIT = 16 << 20


def read_baseline(path) -> dict[str, dict]:
    """An earlier run's rows.csv: {id: row}. UserFileError names the file, the line and the
    field: a row with more or fewer fields than the header, a field past csv's limit or an
    unterminated quote, CR-only line ends. Values come back with control characters escaped
    (they are shown in the changes table)."""
    from ..util.userinput import UserFileError, printable, read_text
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
    """Claims whose verdict, weight or value changed since `before` (read_baseline), new ones
    included; `trend`: better / worse (holds > within tolerance > differs) / changed. A baseline
    from before weights (no column) counts every row as evidence."""
    out = []
    for r in rows:
        old = before.get(r["id"])
        if old is not None and (old["verdict"], old["ours"], old.get("weight") or "evidence") == \
                (r["verdict"], r["ours"], r.get("weight", "evidence")):
            continue
        was = old["verdict"] if old else "(new claim)"
        a, b = RANK.get(was), RANK.get(r["verdict"])
        trend = "changed" if a is None or b is None or a == b else ("better" if b > a else "worse")
        out.append({"id": r["id"], "verdict_before": was, "verdict": r["verdict"],
                    "weight_before": (old.get("weight") or "evidence") if old else "", "weight": r.get("weight", ""),
                    "ours_before": old["ours"] if old else "", "ours": r["ours"], "trend": trend})
    return out


def dropped(rows: list[dict], before: dict[str, dict]) -> list[str]:
    """The baseline's claims this run does not have (removed from the claims file, or not selected)."""
    now = {r["id"] for r in rows}
    return [i for i in before if i not in now]


def trend_line(changed: list[dict]) -> str:
    n = collections.Counter(c["trend"] for c in changed)
    return (f"{len(changed)} claims changed: {n['better']} better, {n['worse']} worse, "
            f"{n['changed']} otherwise (new, unjudged, or the value only)")
