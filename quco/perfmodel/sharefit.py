"""dram_queueing 3 and 4 calibrated jointly (issue #29; evaluated, not shipped: docs/perf-model-not-shipped.md,
"Latency under load"): the DRAM's service time S and the stream cost by least squares of
log(model / measured) over the bandwidth-bound rows fit.stream_rows picks, the model there being
the DRAM bound at the closed loop's utilisation u(S) (dram_load.closed_loop_utilisation: 3 the
open-queue form, 4 exact MVA) plus the launch, times 1 + cost x streams. fit.fit,
fit.leave_one_out, fit.fit_size and fit.leave_size_out take it as their stream stage
(share=fit_share for mode 3, share=fit_mva for mode 4; passed in, so that fit.py does not import
this module; each carries the dram_queue_mode the model runs with, as its dram_queue_mode).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize

from .dram_load import closed_loop, utilisation_at
from .fit import _dram_us, _residencies, measured_model, stream_rows
from .hardware import COMPARED, Measurement, scaled_kernel
from .params import Machine
from .residency import per_cu
from .work import Work


def share_terms(m: Machine, rows: list[Measurement], size: str = "big", kernels=COMPARED) -> list[tuple]:
    """stream_rows' rows with what the DRAM share at any S needs: (measurement, streams, DRAM
    bound us, launch us, R0 cycles, w cycles): R0 and w, the closed loop's bytes in flight over
    its share's rate, from dram_load.closed_loop (neither depends on S); w = 0 where nothing is in
    flight (share 1)."""
    m0 = dataclasses.replace(m, dram_queue_mode=0)
    out, residency = [], _residencies(m, rows)
    for r, streams, _ in stream_rows(m0, rows, size, kernels):
        work = Work.of(scaled_kernel(r.kernel, r.work_groups))
        occ = min(residency(work, r), per_cu(m, r.work_groups))
        r0, w = closed_loop(measured_model(m0, work, r.tile, r.slots, occ))
        out.append((r, streams, _dram_us(m, work, r.work_groups), m.launch / m.clock_mhz, r0, w))
    return out


def share_residuals(x, terms, mode: int = 3) -> np.ndarray:
    """log(model / measured) of each row of share_terms at (S cycles, stream cost) = x: the model
    is the DRAM bound at the share's utilisation plus the launch, times 1 + cost x streams (the
    bound stream_rows / fit_streams take)."""
    s, cost = x
    return np.array([math.log((dram / utilisation_at(mode, s, r0, w) + launch) * (1.0 + cost * n) / r.time_us)
                     for r, n, dram, launch, r0, w in terms])


def fit_cost_at(terms: list[tuple], s: float, mode: int = 3) -> tuple[float, float]:
    """(stream cost, rms log error) at a given S (cycles): the profile of fit_share_terms' objective
    (the share's u read once per row at this S; only the cost varies)."""
    base = np.array([math.log((dram / utilisation_at(mode, s, r0, w) + launch) / r.time_us)
                     for r, n, dram, launch, r0, w in terms])
    streams = np.array([float(t[1]) for t in terms])
    res = optimize.least_squares(lambda c: base + np.log1p(c[0] * streams), [1e-5], bounds=([0.0], [np.inf]),
                                 x_scale=[1e-5])
    return float(res.x[0]), math.sqrt(2.0 * float(res.cost) / len(terms))


SHARE_S_MAX = 4.0  # the S scanned, in idle round trips (R0): past it u sits at its S -> infinity limit
MVA_S_MAX = 1.0    # mode 4: S is part of the round trip (Z = R0 - S >= 0); at S = R0 u is the knee again


def fit_share_terms(terms: list[tuple], mode: int = 3) -> tuple[float, float, float]:
    """(S cycles, stream cost, rms log error): least squares of share_residuals over S in
    [0, SHARE_S_MAX x R0] (mode 4: [0, MVA_S_MAX x R0]) and cost >= 0 (scipy.optimize.least_squares,
    bounded); started from the best of a scan of S in 160 steps, the cost fitted at each (the
    objective is not convex in S), so the result does not hang on a starting guess."""
    if len(terms) < 3:
        raise ValueError(f"{len(terms)} bandwidth-bound rows: at least 3 needed to fit S and the stream cost")
    r0 = max(t[4] for t in terms)
    hi = (MVA_S_MAX if mode == 4 else SHARE_S_MAX) * r0

    def at(s):
        c, rms = fit_cost_at(terms, s, mode)
        return rms * rms * len(terms) / 2.0, c
    scan = [(at(s), s) for s in np.linspace(0.0, hi, 161)]
    (_, c0), s0 = min(scan)
    res = optimize.least_squares(lambda x: share_residuals(x, terms, mode), [max(s0, 1e-9), c0],
                                 bounds=([0.0, 0.0], [hi, np.inf]), x_scale=[r0 / 10, 1e-5],
                                 xtol=1e-12, ftol=1e-12, gtol=1e-12)
    s, c = (float(v) for v in res.x)
    best = min((float(np.sum(share_residuals((s, c), terms, mode) ** 2)), s, c), (2 * min(scan)[0][0], s0, c0))
    return best[1], best[2], math.sqrt(best[0] / len(terms))


def fit_share(m: Machine, rows: list[Measurement], kernels=COMPARED, size: str = "big",
              mode: int = 3) -> tuple[dict, list]:
    """S (dram_queue_cycles) and dram_stream_cost jointly with the DRAM share at the closed loop's
    utilisation (dram_queueing `mode`, 3 or 4): fit_share_terms over share_terms of `size`'s rows
    (the rows fit_streams uses). Returns ({dram_queue_cycles, dram_stream_cost, rms_log}, rows used)."""
    terms = share_terms(m, rows, size, kernels)
    s, c, rms = fit_share_terms(terms, mode)
    return {"dram_queue_cycles": s, "dram_stream_cost": c, "rms_log": rms}, [t[0] for t in terms]


def fit_mva(m: Machine, rows: list[Measurement], kernels=COMPARED, size: str = "big") -> tuple[dict, list]:
    """fit_share for dram_queueing 4 (the share at exact MVA's utilisation)."""
    return fit_share(m, rows, kernels, size, mode=4)


fit_share.dram_queue_mode = 3  # the mode fit.fit runs the model with under each stream stage
fit_mva.dram_queue_mode = 4
