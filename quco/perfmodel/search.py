"""Configurations to compare: the exhaustive space, the paper's baselines, the ideal bound.

Every candidate is judged by `quco.perfmodel.sim` on the same machine; an evaluation is a
pure function of (machine, work, configuration, mode) and is cached on that key.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from .params import Machine, machine
from .residency import occupancy
from .sim import simulate
from .sim_data import Outcome
from .work import Config, Work, fits

TILE_RANGE = (64, 8192)        # QuCo Sec. V: tiles 64..8,192 elements
SLOT_RANGE = (1, 8)            # QuCo Sec. V: slots 1..8
INFORMED_TILES = (64, 256)     # Informed-Tuned: tiles 64..256 (QuCo Sec. V)
INFORMED_SLOTS = (2, 4)        #   with 2 or 4 slots (NVIDIA's double/quadruple buffering)
NON_TUNED_SLOTS = 2            # Non-Tuned: the smallest tile, double-buffered (our reading)


@functools.lru_cache(maxsize=65536)
def evaluate(m: Machine, work: Work, cfg: Config, mode: str = "att", max_occupancy: int = 0) -> Outcome:
    return simulate(m, work, cfg, mode, max_occupancy=max_occupancy)


def tiles(g: dict, lo: int = TILE_RANGE[0], hi: int = TILE_RANGE[1]) -> list[int]:
    """Powers of two in [lo, hi] within the GST's tile range."""
    lo, hi = max(lo, g["min_tile_elems"]), min(hi, g["max_tile_elems"])
    out, t = [], 1
    while t <= hi:
        if t >= lo:
            out.append(t)
        t *= 2
    return out


def candidates(work: Work, m: Machine, tile_list, slot_choices) -> list[Config]:
    """Every tile x slots-per-run-of-identical-queues that fits one work-group on a CU
    (LDS, barriers and wavefront slots)."""
    runs = work.runs()
    out = []
    for t in tile_list:
        for choice in itertools.product(slot_choices, repeat=len(runs)):
            slots = tuple(s for (a, n), s in zip(runs, choice) for _ in range(n))
            cfg = Config(t, slots)
            if fits(work, cfg, m.lds_bytes, m.barrier_limit) and occupancy(m, work, cfg) >= 1:
                out.append(cfg)
    return out


@dataclass
class Ranked:
    config: Config
    outcome: Outcome


def rank(m: Machine, work: Work, configs, mode: str = "att") -> list[Ranked]:
    """Configurations by modelled cycles, fastest first. Exact ties (common once a kernel
    saturates DRAM) go to the larger tile (fewer descriptors), then to fewer slots (less LDS)."""
    scored = [Ranked(c, evaluate(m, work, c, mode)) for c in configs]
    scored.sort(key=lambda r: (r.outcome.cycles, -r.config.tile, sum(r.config.slots), r.config.slots))
    return scored


def exhaustive(m: Machine, g: dict, work: Work, top: int = 0) -> list[Ranked]:
    """ATT/Fine-Tuned: the space the paper explores, every configuration where at most
    `space.EXHAUSTIVE_MAX` fit, else coordinate descent (perfmodel/space.py says which and why;
    it raises space.SpaceTooLarge for a space no method covers in its bound). `top` 0: every
    configuration, ranked; `top` n: the n fastest are exact and first, the list may lack
    slower ones (skipped by their lower bound: space.search_space)."""
    from .space import search_space  # space.py builds on this module
    return search_space(m, g, work, top=top).ranked


def informed(m: Machine, g: dict, work: Work) -> Ranked | None:
    """ATT/Informed-Tuned: best of tiles 64..256 with 2..4 slots."""
    ranked = rank(m, work, candidates(work, m, tiles(g, *INFORMED_TILES), INFORMED_SLOTS))
    return ranked[0] if ranked else None


def non_tuned(m: Machine, g: dict, work: Work) -> Ranked | None:
    """ATT/Non-Tuned: the smallest tile, double-buffered (one slot if two do not fit)."""
    t = tiles(g)[0]
    for s in (NON_TUNED_SLOTS, 1):
        cfg = Config(t, (s,) * len(work.queues))
        if fits(work, cfg, m.lds_bytes, m.barrier_limit):
            return Ranked(cfg, evaluate(m, work, cfg))
    return None


def noatt(m: Machine, g: dict, work: Work, tuned: bool) -> Ranked | None:
    """NoATT: synchronous loads; Non-Tuned takes the smallest tile, Fine-Tuned the best."""
    pool = [Config(t, (1,) * len(work.queues)) for t in tiles(g)]
    pool = [c for c in pool if occupancy(m, work, c, "noatt") >= 1]
    if not pool:
        return None
    return rank(m, work, pool if tuned else pool[:1], "noatt")[0]


def ideal(g: dict, work: Work, core_clock_mhz: int = 0, active_cus: int = 0) -> Ranked:
    """ATT with unlimited LDS and barriers: every tile of every queue and pass has a slot, so
    loading never waits for the consumers, and data a work-group re-reads stays in its LDS
    (mode "ideal"); the best tile and number of resident work-groups. What the paper
    normalises to."""
    m = machine(g, core_clock_mhz, active_cus, unlimited_lds=True)
    best = None
    for t in tiles(g):
        cfg = Config(t, tuple(work.tiles(i, t) * q.passes for i, q in enumerate(work.queues)))
        # more work-groups at once is not always faster: each loads its own stationary copy
        for cap in range(1, occupancy(m, work, cfg) + 1):
            r = Ranked(cfg, evaluate(m, work, cfg, "ideal", cap))
            if best is None or r.outcome.cycles < best.outcome.cycles:
                best = r
    return best
