"""The scorecard: claims -> the sources they need -> our values -> verdicts, as rows.

    chosen = select(claims.load(measures=MEASURES), ids=None, gpus={"r9-nano"})
    rows, sources = run(chosen, workers=2)

A row is a flat dict (id, source, statement, paper, ours, verdict, ...) ready for the
table, the CSV and the JSON.
"""
from __future__ import annotations

import collections
from dataclasses import asdict

from quco.paper import claims as claims_mod
from quco.paper import ours
from quco.paper.measures import MEASURES, SourceFailed, compute
from quco.paper.verdict import MISSING, VERDICTS, Check, Pick, judge, show


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
    except (KeyError, IndexError, StopIteration, TypeError, ValueError, ZeroDivisionError) as e:
        # a source whose shape changed under us: said on the row, not a crash of the report
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
