"""How precise a measurement file is, read from the file itself (issue #29): what a model equal
to the truth could score against it, so that a target is known to be above the noise.

- **Twin kernels.** Elementwise (c = a * b) and Sumvectors (c = a + b) move the same bytes
  through the same loop; only the arithmetic differs, and both are memory-bound. At the same
  grid and configuration their times differ by the noise of two measurements plus what a
  multiply costs over an add (the median ratio shows that part). The spread of the log ratio
  (median absolute deviation, scaled to a standard deviation, over sqrt 2) is the noise of
  one measurement; robust, so that a few disturbed rows do not set it.
- **Glitches.** A twin pair that differs by more than GLITCH (at least 20 standard deviations
  here) is one disturbed measurement: listed, not used to estimate the noise.
- **Same code.** A tile whose one-step loop the compiler folded (hardware.unpipelined_tiles)
  runs the same code at every slot count, so the spread of its rows is that kernel's own noise
  at that grid (standard deviation of the log times, glitches left out): the one estimate for
  kernels shorter than the twins (Matrix-Vector at the paper's size).
- **Ceiling.** Given that noise, a model that knew the true times would still not rank one
  noisy measurement perfectly, and the configuration it calls best would measure above the
  measured best by chance. `ceiling` draws the noise (log-normal, seeded: deterministic) and
  gives both, taking the measured times as the truth.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

TWINS = ("Elementwise", "Sumvectors")
GLITCH = 0.05      # |log ratio| of a twin pair above which one of the two was disturbed
MAD_TO_SD = 1.4826  # a normal distribution's standard deviation over its median absolute deviation


@dataclass(frozen=True)
class TwinNoise:
    size: str
    pairs: int               # twin configurations compared (glitches included)
    median_ratio_pct: float  # first twin over second, median, in percent above 1
    sigma_pct: float         # noise of one measurement (robust), percent
    glitches: tuple          # (tile, slots, first twin's us, second's us) of the pairs past GLITCH


def twin_noise(rows, variant: str = "att") -> list[TwinNoise]:
    """One TwinNoise per grid size that has both twins measured at common configurations."""
    times = {(r.kernel, r.size, r.tile, r.slots): r.time_us for r in rows
             if r.kernel in TWINS and r.variant == variant and r.fits and r.tile and r.time_us}
    out = []
    for size in dict.fromkeys(s for _, s, _, _ in times):
        pairs = [(t, s, times[(TWINS[0], size, t, s)], times[(TWINS[1], size, t, s)])
                 for (k, z, t, s) in times if k == TWINS[0] and z == size and (TWINS[1], size, t, s) in times]
        logs = np.array([math.log(a / b) for _, _, a, b in pairs])
        clean = logs[np.abs(logs) <= GLITCH]
        if len(clean) < 3:  # too few undisturbed pairs for a spread
            continue
        centre = float(np.median(clean))
        sigma = MAD_TO_SD * float(np.median(np.abs(clean - centre))) / math.sqrt(2)
        out.append(TwinNoise(size, len(pairs), 100 * math.expm1(centre), 100 * sigma,
                             tuple(sorted(p for p, d in zip(pairs, logs) if abs(d) > GLITCH))))
    return out


@dataclass(frozen=True)
class SameCode:
    tile: int
    rows: int                # slot counts measured at this tile (glitches included)
    sigma_pct: float         # noise of one measurement, percent
    glitches: tuple          # (slots, us) slower than the median by more than GLITCH


def same_code_noise(rows, tile: int) -> SameCode | None:
    """The spread of `rows` (one kernel x size) at a `tile` that runs the same code at every slot
    count; None with fewer than three rows left."""
    times = {r.slots: r.time_us for r in rows if r.tile == tile and r.fits and r.time_us}
    centre = float(np.median(np.log(list(times.values())))) if times else 0.0
    # a disturbed run is slow (the twins' glitches all are): only the slow side is left out
    glitches = tuple(sorted((s, t) for s, t in times.items() if math.log(t) - centre > GLITCH))
    logs = [math.log(t) for s, t in times.items() if (s, t) not in glitches]
    if len(logs) < 3:
        return None
    return SameCode(tile, len(times), 100 * float(np.std(logs, ddof=1)), glitches)


def ceiling(times, sigma: float, draws: int = 1000, seed: int = 0) -> dict:
    """What a model equal to `times` (the truth) scores against one measurement of them with
    log-normal noise `sigma` (a fraction): the median Spearman rank correlation (None with fewer
    than two times: nothing to rank), and the median and 90th percentile of the measured cost of
    its best over the measured best (percent)."""
    t = np.asarray(times, dtype=float)
    if len(t) < 2:
        return {"rank": None, "cost_pct": 0.0, "cost_p90_pct": 0.0}
    rng = np.random.default_rng(seed)
    best = int(np.argmin(t))
    rho, cost = [], []
    for _ in range(draws):
        m = t * np.exp(sigma * rng.standard_normal(len(t)))
        rho.append(stats.spearmanr(t, m).statistic)
        cost.append(100 * (m[best] / m.min() - 1))
    return {"rank": float(np.median(rho)), "cost_pct": float(np.median(cost)),
            "cost_p90_pct": float(np.percentile(cost, 90))}
