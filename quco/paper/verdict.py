"""A claim and our value -> a verdict. Pure functions, no model, no firmware.

Verdicts (docs/paper.md):
- holds: ours is the paper's (the same pick; inside the paper's range; every comparison
  goes the paper's way);
- within tolerance: not that, but within the claim's written tolerance;
- differs: outside the tolerance, or a comparison goes the other way;
- no verdict: the claim is shown, never judged (the Radeon 530's withheld picks);
- could not compute: ours is missing (a computation failed or has no value).

Our value, by kind: a `Pick` (pick), a number or a list of numbers (range), a list of
`Check`s (all / any).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

HOLDS, WITHIN, DIFFERS, NO_VERDICT, MISSING = "holds", "within tolerance", "differs", "no verdict", "could not compute"
VERDICTS = (HOLDS, WITHIN, DIFFERS, NO_VERDICT, MISSING)
OPS = ("<", "<=", ">", ">=", "==", "!=")
_EPS = 1e-9   # float noise: 1.04 computed as 1.0400000000000003 is still 1.04


@dataclass(frozen=True)
class Pick:
    tile: int
    slots: int | None    # the streaming queues' slots; None when they differ from queue to queue
    label: str           # as shown: tile / slots per run of identical queues


@dataclass(frozen=True)
class Check:
    """One comparison `lhs op rhs`; None on either side: it could not be computed."""
    label: str
    lhs: float | str | None
    op: str
    rhs: float | str | None


def judge(claim, ours) -> str:
    if claim.kind == "no_verdict":
        return NO_VERDICT
    if ours is None:
        return MISSING
    if claim.kind == "pick":
        return judge_pick(claim.tiles, claim.slots, ours)
    if claim.kind == "range":
        return judge_range(claim.lo, claim.hi, claim.tolerance, ours)
    if claim.kind in ("all", "any"):
        return judge_checks(ours, claim.tolerance, claim.kind)
    raise ValueError(f"claim {claim.id}: unknown kind {claim.kind!r}")


def judge_pick(tiles, slots, pick: Pick | None) -> str:
    """Exact: the tile among `tiles` and the streaming slots among `slots` (None: any)."""
    if pick is None:
        return MISSING
    tile_ok = tiles is None or pick.tile in tiles
    slots_ok = slots is None or (pick.slots is not None and pick.slots in slots)
    return HOLDS if tile_ok and slots_ok else DIFFERS


def _margin(bound: float) -> float:
    return _EPS * max(1.0, abs(bound))


def judge_value(lo, hi, tolerance: float, v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    below = lo - v if lo is not None else -math.inf
    above = v - hi if hi is not None else -math.inf
    miss = max(below, above)        # how far outside lo..hi (<= 0: inside)
    if miss <= _margin(lo if miss == below else hi):
        return HOLDS
    return WITHIN if miss <= tolerance + _margin(tolerance) else DIFFERS


def judge_range(lo, hi, tolerance: float, ours) -> str:
    """`ours` a number or a list of numbers, every one of which must be in lo..hi."""
    values = ours if isinstance(ours, (list, tuple)) else [ours]
    return _combine_all([judge_value(lo, hi, tolerance, v) for v in values])


def check_result(c: Check, tolerance: float) -> str:
    """HOLDS, WITHIN (passes only with `tolerance`, a fraction of |rhs|), DIFFERS or MISSING."""
    if c.op not in OPS:
        raise ValueError(f"check {c.label!r}: unknown operator {c.op!r}; expected one of {', '.join(OPS)}")
    if c.lhs is None or c.rhs is None:
        return MISSING
    if c.op in ("==", "!="):   # picks and labels: no tolerance
        return HOLDS if (c.lhs == c.rhs) == (c.op == "==") else DIFFERS
    strict = _compare(c.lhs, c.op, c.rhs)
    if strict:
        return HOLDS
    slack = tolerance * abs(c.rhs)
    loose = _compare(c.lhs, c.op, c.rhs + slack if c.op in ("<", "<=") else c.rhs - slack)
    return WITHIN if loose and tolerance > 0 else DIFFERS


def _compare(a, op: str, b) -> bool:
    """With the float-noise margin: 3.0000000000000027 <= 3 holds, and is no more than 3 for ">"."""
    m = _margin(b)
    return {"<": a < b - m, "<=": a <= b + m, ">": a > b + m, ">=": a >= b - m}[op]


def _combine_all(results: list[str]) -> str:
    if not results:
        return MISSING
    for v in (DIFFERS, MISSING, WITHIN):   # a known failure outweighs a missing value
        if v in results:
            return v
    return HOLDS


def judge_checks(checks: list[Check], tolerance: float, mode: str = "all") -> str:
    """all: every check must pass; any: one passing is enough."""
    results = [check_result(c, tolerance) for c in checks]
    if mode == "all":
        return _combine_all(results)
    if mode != "any":
        raise ValueError(f"mode {mode!r}: expected 'all' or 'any'")
    for v in (HOLDS, WITHIN, MISSING):    # one pass is enough; a missing one might have passed
        if v in results:
            return v
    return DIFFERS


# ---------------------------------------------------------------- which way a miss goes
FAVOUR, AGAINST, NEITHER = "in our favour", "against", "neither way"


def way(claim, ours, verdict: str) -> str:
    """Which way a row that does not hold goes, "" for one that does (or has no verdict):
    FAVOUR (QuCo looks better here than in the paper), AGAINST, or NEITHER (another pick, or a
    claim whose either side favours no one: the claim's `better` = "none")."""
    if verdict not in (WITHIN, DIFFERS):
        return ""
    if claim.kind == "pick" or claim.better == "none":
        return NEITHER
    if claim.kind in ("all", "any"):
        return AGAINST    # the paper's direction, which favours QuCo, does not hold
    values = ours if isinstance(ours, (list, tuple)) else [ours]
    sides = {("below" if claim.lo is not None and v < claim.lo else "above") for v in values
             if v is not None and judge_value(claim.lo, claim.hi, 0.0, v) != HOLDS}
    if len(sides) != 1:
        return NEITHER    # misses on both sides of the range
    favoured = "above" if claim.better == "higher" else "below"
    return FAVOUR if sides.pop() == favoured else AGAINST


# ---------------------------------------------------------------- showing ours
def number(v, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if unit == "x":
        return f"{v:.3f}x"
    if unit == "%":
        return f"{v:+.2f}%"
    text = f"{int(v):,}" if float(v).is_integer() else f"{v:.3g}"
    return f"{text} {unit}" if unit else text


def _operand(v) -> str:
    return "n/a" if v is None else (v if isinstance(v, str) else f"{v:.4g}")


def show(claim, ours, detail: bool = False) -> str:
    """Our value as text: short for the table, every comparison with `detail`."""
    if ours is None:
        return "n/a"
    if isinstance(ours, Pick):
        return ours.label
    if isinstance(ours, (list, tuple)) and ours and isinstance(ours[0], Check):
        results = [(c, check_result(c, claim.tolerance)) for c in ours]
        if detail:
            return "; ".join(f"{c.label}: {_operand(c.lhs)} {c.op} {_operand(c.rhs)} ({r})" for c, r in results)
        if len(results) == 1:   # one comparison: its two sides say more than "0/1"
            return f"{_operand(ours[0].lhs)} vs {_operand(ours[0].rhs)}"
        return f"{sum(r == HOLDS for _, r in results)}/{len(results)} hold"
    if isinstance(ours, (list, tuple)):
        known = [v for v in ours if v is not None]
        if not known:
            return "n/a"
        lo, hi = min(known), max(known)
        if lo == hi:
            text = number(lo, claim.unit)
        else:  # the unit once, at the end: "261 to 1,176 instructions"
            text = f"{number(lo, claim.unit if claim.unit in ('x', '%') else '')} to {number(hi, claim.unit)}"
        return text + (f" ({len(ours)} values)" if len(ours) > 1 else "")
    return number(ours, claim.unit)
