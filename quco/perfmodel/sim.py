"""simulate: a kernel's work on the model of one CU (cu_model.Model), run whole or, for a long
loop nest, over a few passes or steps and extrapolated linearly to all of them (the rounds of
work-groups are extrapolated inside the model: Model.run)."""
from __future__ import annotations

import math

from .cu_model import EXTENSIVE, Model
from .params import Machine
from .residency import residents
from .sim_data import Outcome
from .window import STEP_RUNS, extrapolate_steps, streams_privately
from .work import Config, Work

WARM_PASSES = 0   # passes simulated, beyond the first and the producer's run-ahead, before the steady state
WARM_STEPS = 48  # steps (whole periods) simulated before the pass window when several work-groups are resident
WINDOW_STEPS = 48  # steps over which the steady per-pass time is measured (simulate): the
                   # interleaving of work-groups and pipes repeats within a few dozen steps


def pass_period(work: Work) -> int:
    """Passes after which the loop nest repeats itself (after the first pass)."""
    period = work.passes // work.phases if work.phases > 1 else 1
    for q in work.queues:
        every = work.passes // q.passes
        period = math.lcm(period, every * (q.passes // q.fresh_passes if q.fresh_passes > 1 else 1))
    return period


def simulate(m: Machine, work: Work, cfg: Config, mode: str = "att", trace: bool = False,
             exact: bool = False, max_occupancy: int = 0) -> Outcome:
    """Run the kernel's work on one CU of `m` with configuration `cfg` (at most
    `max_occupancy` work-groups at once when given). Unless `exact` (or tracing), a loop nest
    of many passes is simulated over about 1 + WARM_PASSES passes (plus WARM_STEPS' worth
    where several work-groups are resident) and over that plus whole periods of its loop nest
    worth at least WINDOW_STEPS steps, and extrapolated linearly to all of them: once the
    pipeline is full and the resident work-groups interleave steadily every period does the
    same work (bench/extrapolation.py measures it against full runs); a long single pass,
    over the step window (quco.perfmodel.window)."""
    exact = exact or trace
    if not exact:
        steps = max(work.tiles(i, cfg.tile) for i in range(len(work.queues)))
        # the ideal run's slots hold the whole pass: in the cut queue too, so its producer is
        # never held there either
        if steps > STEP_RUNS[1] * 2 and (mode == "ideal" or max(cfg.slots) < STEP_RUNS[0]) \
                and streams_privately(work, cfg.tile):
            return extrapolate_steps(m, work, cfg, mode, max_occupancy, steps)
    period = pass_period(work)
    # the producer runs ahead by up to its slots: leave that many passes for the pipe to fill.
    # In the ideal run no slot ever holds it (each tile of every pass has its own): it issues
    # at the ATT's pace from the start and the pipes are full within the first pass, as in a
    # run with a slot for every tile of one pass
    ahead = 1 if mode == "ideal" else max(math.ceil(s / work.tiles(i, cfg.tile)) for i, s in enumerate(cfg.slots))
    short = 1 + WARM_PASSES + ahead
    short += (work.passes - short) % period  # the passes left are whole periods
    steps = max(work.tiles(i, cfg.tile) for i in range(len(work.queues)))
    def periods(n: int) -> int:  # passes, in whole periods, of at least n steps
        return period * math.ceil(math.ceil(n / steps) / period)
    # several resident work-groups start in step and settle into their interleaving over
    # some passes (H100 Matrix-Matrix 512/6+5: 6): the window starts after WARM_STEPS more
    if WARM_STEPS and residents(m, work, cfg, mode, max_occupancy) > 1:
        short += periods(WARM_STEPS)
    long_ = short + periods(WINDOW_STEPS)
    a = None if exact or short + long_ >= work.passes else Model(m, work, cfg, mode, False, max_occupancy, short)
    # Not the ideal run of several resident work-groups: each one's producer queues every tile
    # of every pass in the CU's ATT unit and pipes at once (first come, first served), so the
    # others wait behind all of it and the time is not linear in the passes (a cut run would
    # give Matrix-Matrix's Ideal up to 4x faster: docs/perf-model.md)
    if a is None or (mode == "ideal" and a.occ > 1):  # (else two short runs cost more than the whole)
        model = Model(m, work, cfg, mode, trace, max_occupancy)
        return model.outcome(model.run(exact))
    b = Model(m, work, cfg, mode, False, max_occupancy, long_)
    ta, tb = a.run(), b.run()
    per = (work.passes - long_) / (long_ - short)
    total = dict(tb)
    for key in EXTENSIVE:
        total[key] = tb[key] + per * (tb[key] - ta[key])
    total["events"] = ta["events"] + tb["events"]
    total["extrapolated"] = True
    return b.outcome(total)

