"""Residency: how many work-groups the busiest CU runs (the grid spread over the CUs that get
work) and how many it holds at once (occupancy: its LDS, barriers and wavefront slots)."""
from __future__ import annotations

import math

from .params import Machine
from .work import Config, Work, barriers, meta_bytes, queue_bytes


def occupancy(m: Machine, work: Work, cfg: Config, mode: str = "att") -> int:
    """Work-groups one CU holds at once: LDS (the metadata once, the queue blocks per
    work-group), barriers, and wavefront slots (consumers plus the producer)."""
    waves = m.max_waves // (work.consumer_wavefronts + (1 if mode == "att" else 0))
    if mode == "noatt":
        per_wg = sum(cfg.tile * q.elem_size for q in work.queues)
        return max(0, min(m.lds_bytes // per_wg, waves))
    free = m.lds_bytes - meta_bytes(len(work.queues))
    # each resident work-group also costs the LDS the GPU reserves for it (H100: 1 KB a block)
    by_lds = free // max(queue_bytes(work, cfg) + m.lds_reserved + m.barrier_bytes * barriers(cfg), 1)
    # barriers in the LDS (Hopper's mbarriers) cost bytes there, not a count per CU
    by_barriers = m.barrier_limit // max(barriers(cfg), 1) if not m.barrier_bytes else by_lds
    return max(0, min(by_lds, by_barriers, waves))


def per_cu(m: Machine, work_groups: int) -> int:
    """Work-groups the busiest CU runs: the grid spread over the CUs that get work."""
    return math.ceil(work_groups / min(m.cus, work_groups))


def residents(m: Machine, work: Work, cfg: Config, mode: str = "att", max_occupancy: int = 0) -> int:
    """Work-groups the busiest CU holds at once: as many as fit (occupancy), at most those it
    runs and `max_occupancy` when given."""
    wgs = per_cu(m, work.work_groups or m.cus)
    return min(occupancy(m, work, cfg, mode), wgs, max_occupancy or wgs)
