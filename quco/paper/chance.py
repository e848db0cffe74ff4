"""How likely a random configuration is to pass a claim: the "weak" test of issue #31.

    chance(claim, sources) -> float in [0, 1], or None where no configuration is under test

For a claim about one configuration (QuCo's pick, an ablation's, the paper's Fine-Tuned pick),
put in its place each point of the space our Fine-Tuned searches (the kernel source's "space":
one tile for every queue, slots per run of identical queues, everything that fits), judge the
claim as it is judged (verdict.judge_value / the comparison's operator, no tolerance) and count
the share that holds; each point counts once (a uniform draw over the space). A claim over
several kernels draws one point per kernel, independently: the share is the product of the
kernels' shares ("all") or one minus the product of their misses ("any"); a mean over kernels
(mean_gap) is counted exactly over every combination when there are at most COMBINATIONS, else
estimated on SAMPLES draws of a fixed seed (the same bytes every run). A row whose chance is at
least claims.WEAK_CHANCE (25%) is "weak": passing it says little about the configuration.
"""
from __future__ import annotations

import itertools
import math
import random

from . import ours
from .measures import Sources, SourceFailed, _cases, _cycles, _perf, _ratio, pick_of
from .verdict import HOLDS, judge_value

COMBINATIONS, SAMPLES = 200_000, 20_000
CHANCES = {}


def _chance(name):
    def register(fn):
        CHANCES[name] = fn
        return fn
    return register


def chance(claim, sources: dict):
    fn = CHANCES.get(claim.measure)
    if fn is None:
        return None
    try:
        return fn(Sources(sources), claim, **claim.args)
    except (SourceFailed, KeyError, TypeError, ZeroDivisionError):
        return None        # the row says why its value is missing; no chance without a space


def _space(src, gpu, kernel) -> list:
    return src[("kernel", gpu, kernel)]["space"]


def _share(points, passes) -> float | None:
    return sum(1 for p in points if passes(p)) / len(points) if points else None


def _in_range(claim, v) -> bool:
    return v is not None and judge_value(claim.lo, claim.hi, 0.0, v) == HOLDS


# ---------------------------------------------------------------- one kernel, one configuration
@_chance("model_pick")
def _pick(src, claim, gpu, kernel, case):
    return _share(_space(src, gpu, kernel), lambda p: (claim.tiles is None or p[0] in claim.tiles)
                  and (claim.slots is None or p[1] in claim.slots))


def _within_best(src, claim, gpu, kernel):
    """The share of the space within the claim's upper bound (a % over the space's best)."""
    space = _space(src, gpu, kernel)
    best = min(p[2] for p in space)
    return _share(space, lambda p: _in_range(claim, 100.0 * (p[2] / best - 1.0)))


@_chance("pick_gap")
def _pick_gap(src, claim, gpu, kernel, tile, slots):
    return _within_best(src, claim, gpu, kernel)


@_chance("gap")
def _gap(src, claim, gpu, kernel, case):
    return _within_best(src, claim, gpu, kernel)


@_chance("case_perf")
def _case_perf(src, claim, gpu, kernel, case):
    ideal = _cases(src, gpu, kernel)[case]["ideal_cycles"]
    return _share(_space(src, gpu, kernel), lambda p: _in_range(claim, ideal / p[2]))


@_chance("cycles_ratio")
def _cycles_ratio(src, claim, gpu, num, den, kernel=None, kernels=None):
    if den not in ("QuCo",) or kernels is not None:
        return None       # a ratio of two fixed cases, or the largest over kernels: no single draw
    ref = _cycles(_cases(src, gpu, kernel).get(num))
    return _share(_space(src, gpu, kernel), lambda p: _in_range(claim, _ratio(ref, p[2])))


@_chance("fig6_order")
def _fig6_order(src, claim, gpu, kernel):
    """QuCo replaced by a random point: above the three cases below it (Fine-Tuned, the space's
    best, is at or above every point)."""
    from .measures import ORDER_BELOW_QUCO
    by = _cases(src, gpu, kernel)
    ideal = by["QuCo"]["ideal_cycles"]
    floor = max(_perf(by.get(c)) for c in ORDER_BELOW_QUCO)
    return _share(_space(src, gpu, kernel), lambda p: ideal / p[2] > floor)


@_chance("slots_above")
def _slots_above(src, claim, gpu, kernel, case, than):
    data = src[("kernel", gpu, kernel)]
    row = _cases(src, gpu, kernel)[than]
    mine = pick_of(row["tile"], [int(x) for x in row["slots"].split("/")], data["streaming"], "").slots
    return _share(_space(src, gpu, kernel), lambda p: p[1] is not None and mine is not None and p[1] > mine)


# ---------------------------------------------------------------- one draw per kernel
def _each(src, gpu, kernels, passes) -> list[float]:
    return [_share(_space(src, gpu, s), lambda p, s=s: passes(s, p)) for s in kernels]


@_chance("faster")
def _faster(src, claim, gpu, kernels, case, than):
    shares = _each(src, gpu, kernels, lambda s, p: p[2] < _cycles(_cases(src, gpu, s).get(than)))
    return _combine(shares, claim.kind)


@_chance("speedups_at_least")
def _speedups_at_least(src, claim, gpu, kernels, num, den, bound):
    if den != "QuCo":
        return None
    shares = _each(src, gpu, kernels, lambda s, p: _ratio(_cycles(_cases(src, gpu, s).get(num)), p[2]) >= bound)
    return _combine(shares, claim.kind)


@_chance("gaps_below")
def _gaps_below(src, claim, gpu, bound, case="QuCo"):
    def passes(s, p):
        best = min(q[2] for q in _space(src, gpu, s))
        return 100.0 * (p[2] / best - 1.0) <= bound
    return _combine(_each(src, gpu, ours.stems(gpu), passes), claim.kind)


def _combine(shares: list, kind: str):
    if any(x is None for x in shares):
        return None
    if kind == "any":
        return 1.0 - math.prod(1.0 - x for x in shares)
    return math.prod(shares)


@_chance("mean_gap")
def _mean_gap(src, claim, gpu):
    """The mean over kernels of a random point's gap to the best, in the claim's range."""
    gaps = []
    for s in ours.stems(gpu):
        space = _space(src, gpu, s)
        best = min(p[2] for p in space)
        gaps.append([100.0 * (p[2] / best - 1.0) for p in space])
    n = len(gaps)
    if math.prod(len(g) for g in gaps) <= COMBINATIONS:
        combos = itertools.product(*gaps)
        total = math.prod(len(g) for g in gaps)
        return sum(_in_range(claim, sum(c) / n) for c in combos) / total
    rng = random.Random(31)     # fixed: the same estimate every run
    return sum(_in_range(claim, sum(rng.choice(g) for g in gaps) / n) for _ in range(SAMPLES)) / SAMPLES


# ---------------------------------------------------------------- the real hardware: a random configuration run
@_chance("hardware_value")
def _hardware_cost(src, claim, column, kernel, size, heldout=False, rules=""):
    """A cost over the measured best (QuCo's pick, the model's best): the share of the measured
    TMA configurations of that kernel x size whose own measured cost passes (the same for either
    rule set: the configurations measured do not depend on it). None for a column with no
    configuration under test (the rank correlation, the error)."""
    if not column.endswith("_cost_pct"):
        return None
    from .hardware import _hw_key
    times = src[_hw_key(heldout, rules)]["measured"][f"{kernel}/{size}"]
    best = min(times)
    return _share(times, lambda t: _in_range(claim, 100 * (t / best - 1)))
