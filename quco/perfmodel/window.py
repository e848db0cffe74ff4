"""The step window: a work-group's long single pass simulated over a few dozen steps and
extrapolated (quco.perfmodel.sim.simulate calls it). A work-group's time is its fill, then
steady steps, then its drain, so two runs of STEP_RUNS steps give it for any length; tests
check it against full runs."""
from __future__ import annotations

import dataclasses

from .cu_model import EXTENSIVE, Model
from .params import Machine
from .sim_data import Outcome
from .work import Config, Work

STEP_RUNS = (48, 96)  # a long single pass is simulated over this many steps a work-group and
                      # extrapolated linearly (simulate): a work-group's time is its fill, then
                      # steady steps, then its drain


def streams_privately(work: Work, tile: int) -> bool:
    """One pass of private data in whole tiles of equal count for every queue: a work-group's
    steps then all do the same work, so its time is linear in their number."""
    n = {work.tiles(i, tile) for i in range(len(work.queues))}
    return (work.passes == 1 and work.split_k == 1 and work.phases == 1 and len(n) == 1
            and all(work.pass_length(i) % tile == 0 and work.sharers(i) == 1 for i in range(len(work.queues))))


def extrapolate_steps(m: Machine, work: Work, cfg: Config, mode: str, max_occupancy: int, steps: int) -> Outcome:
    """The grid with every work-group's queues cut to STEP_RUNS steps (its results and FLOPs
    in proportion), twice, extrapolated linearly to `steps`: the cost of a long pass no
    longer grows with it (tests check it against the full run)."""
    runs = []
    for s in STEP_RUNS:
        short = dataclasses.replace(
            work, queues=tuple(dataclasses.replace(q, length=s * cfg.tile) for q in work.queues),
            output_bytes=round(work.output_bytes * s / steps), flops=round(work.flops * s / steps))
        model = Model(m, short, cfg, mode, False, max_occupancy)
        runs.append((model, model.run()))
    (_, ta), (b, tb) = runs
    per = (steps - STEP_RUNS[1]) / (STEP_RUNS[1] - STEP_RUNS[0])
    total = dict(tb)
    for key in EXTENSIVE:
        total[key] = tb[key] + per * (tb[key] - ta[key])
    total["events"] = ta["events"] + tb["events"]
    total["extrapolated"] = True
    return b.outcome(total)
