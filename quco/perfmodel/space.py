"""How big the tile x slots space of a kernel is, and how it is searched (issue #35).

The space is every power-of-two tile in the GST's range x 1..8 slots for each run of identical
queues: tiles x slots^runs. With two runs (every bundled kernel) that is at most 512
configurations and each is evaluated; with eight distinct queues it is 134 million, which no
one evaluates. `plan()` counts the space (how many configurations fit one work-group is counted
without listing them) and picks the method; `search()` runs it:

- **exhaustive** when at most `EXHAUSTIVE_MAX` configurations fit: every one is evaluated.
- **coordinate descent** otherwise: for each tile, start from the best configuration that gives
  every run the same slots, then change one run's slots at a time to the count that ranks best
  with the others held, sweep over the runs until a sweep changes nothing (at most `SWEEPS`
  sweeps). At most tiles x (slots + SWEEPS x runs x (slots - 1)) evaluations: 2,752 for 16
  distinct queues. A heuristic: `bench/perfmodel.py` prints its distance to the exhaustive
  answer on every bundled kernel and preset, and `tests/test_search_space.py` holds it equal.
- **refused** (`SpaceTooLarge`) when even the chosen method would walk more than `WORK_MAX`
  tiles in all: evaluations x the tiles one evaluation walks at the smallest tile (the measure
  of cli/perf.py's `model_bound`, whose per-evaluation limit it extends to a whole search).

Every count here is of model evaluations, not seconds, so the bound is the same on any
machine; bench/perfmodel.py prints what it costs in seconds.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from ..gst import abi
from . import bounds, search
from .params import Machine
from .residency import occupancy
from .work import BARRIERS_PER_SLOT, Config, Work, fits, meta_bytes

EXHAUSTIVE_MAX = 1024   # fitting configurations evaluated one by one (a 3-run kernel: 8 x 8^3 = 4,096)
SWEEPS = 3              # coordinate-descent sweeps over the runs, at most, per tile
# 64 evaluations x 65,536 tiles: the single-queue search cli/perf.py's MAX_MODEL_TILES allowed
# (about a minute on the reference machine); a search planned to walk more is refused.
WORK_MAX = 64 * 65_536

EXHAUSTIVE, DESCENT = "exhaustive", "coordinate descent"


class SpaceTooLarge(ValueError):
    """No method covers the space within WORK_MAX; the message says its size and why."""


@dataclass(frozen=True)
class Plan:
    tiles: tuple[int, ...]
    slot_choices: tuple[int, ...]
    runs: int
    size: int            # tiles x slots^runs
    fitting: int         # of those, configurations that fit one work-group on a CU
    method: str
    max_evaluations: int
    walked: int          # tiles one evaluation walks at the smallest tile (model_bound's measure)

    @property
    def work(self) -> int:
        return self.max_evaluations * self.walked

    def describe(self) -> str:
        s = len(self.slot_choices)
        head = (f"space: {len(self.tiles)} tiles x {s}^{self.runs} slot choices = {self.size:,} configurations, "
                f"{self.fitting:,} fit one work-group")
        if self.method == EXHAUSTIVE:
            return (f"{head}; exhaustive (at most {self.fitting:,} evaluations: one whose lower bound is slower than "
                    f"the configurations asked for is skipped)")
        return (f"{head}; coordinate descent over the {self.runs} runs of identical queues "
                f"(at most {self.max_evaluations:,} evaluations; docs/perf-model.md, Search)")


def slot_choices(g: dict) -> tuple[int, ...]:
    return tuple(range(search.SLOT_RANGE[0], min(search.SLOT_RANGE[1], g["max_slots"]) + 1))


def fitting(work: Work, m: Machine, tile: int, choices) -> int:
    """How many slot choices per run fit one work-group at `tile`, counted run by run over
    (LDS bytes, barriers) used so far instead of listing them (8^16 would not end)."""
    if m.max_waves // (work.consumer_wavefronts + 1) < 1:
        return 0
    lds, bars = m.lds_bytes - meta_bytes(len(work.queues)), m.barrier_limit
    states = {(0, 0): 1}
    for first, n in work.runs():
        q = work.queues[first]
        nxt: dict = {}
        for (b, r), count in states.items():
            for s in choices:
                b2, r2 = b + n * abi.lds_align(s * tile * q.elem_size), r + n * s * BARRIERS_PER_SLOT
                if b2 <= lds and r2 <= bars:
                    nxt[(b2, r2)] = nxt.get((b2, r2), 0) + count
        states = nxt
    return sum(states.values())


def walked(work: Work, tile: int) -> int:
    return sum(work.tiles(first, tile) for first, _ in work.runs())


def plan(m: Machine, g: dict, work: Work, method: str | None = None) -> Plan:
    """The space's size and the method for it; `method` forces one (the bench and the tests
    run the descent where the exhaustive search would be chosen, to compare the two)."""
    tiles, choices, runs = tuple(search.tiles(g)), slot_choices(g), len(work.runs())
    fit = sum(fitting(work, m, t, choices) for t in tiles)
    chosen = method or (EXHAUSTIVE if fit <= EXHAUSTIVE_MAX else DESCENT)
    most = fit if chosen == EXHAUSTIVE else len(tiles) * (len(choices) + SWEEPS * runs * (len(choices) - 1))
    return Plan(tiles, choices, runs, len(tiles) * len(choices) ** runs, fit, chosen, most,
                walked(work, tiles[0]) if tiles else 0)


def check(p: Plan, where: str) -> None:
    """Refuse, before any evaluation, a search planned to walk more than WORK_MAX tiles."""
    if p.work > WORK_MAX:
        raise SpaceTooLarge(
            f"{where}: {p.describe()}; each evaluation walks {p.walked:,} tiles, {p.work:,} in all, over the "
            f"bound of {WORK_MAX:,}. Narrow it: --config TILE/SLOTS evaluates one configuration; queues of "
            f"the same type, length and element size in a row share one slot choice (fewer runs), and "
            f"shorter queues walk fewer tiles")


@dataclass
class Result:
    plan: Plan
    ranked: list          # search.Ranked, fastest first: every evaluated configuration
    evaluations: int
    skipped: int = 0      # configurations of the space not evaluated: their lower bound is slower
                          # than the `top` fastest and than `within` (exhaustive search only)

    @property
    def searched(self) -> int:
        """Configurations the search covers: evaluated, or skipped as provably slower."""
        return self.evaluations + self.skipped


def _key(r: search.Ranked) -> tuple:
    return (r.outcome.cycles, -r.config.tile, sum(r.config.slots), r.config.slots)  # as search.rank


def _descent(m: Machine, work: Work, tile: int, choices, seen: dict) -> None:
    runs = work.runs()

    def cfg_of(per_run) -> Config:
        return Config(tile, tuple(s for (_, n), s in zip(runs, per_run) for _ in range(n)))

    def score(per_run):
        cfg = cfg_of(per_run)
        if cfg not in seen:
            if not (fits(work, cfg, m.lds_bytes, m.barrier_limit) and occupancy(m, work, cfg) >= 1):
                return None
            seen[cfg] = search.Ranked(cfg, search.evaluate(m, work, cfg))
        return seen[cfg]

    starts = [(r, (s,) * len(runs)) for s in choices if (r := score((s,) * len(runs)))]
    if not starts:   # the fewest slots do not fit: nothing at this tile does
        return
    best, current = min(starts, key=lambda x: _key(x[0]))
    for _ in range(SWEEPS):
        changed = False
        for i in range(len(runs)):
            for s in choices:
                trial = current[:i] + (s,) + current[i + 1:]
                r = score(trial)
                if r is not None and _key(r) < _key(best):
                    best, current, changed = r, trial, True
        if not changed:
            break


def _pruned(m: Machine, work: Work, configs: list, top: int, within: float) -> tuple[list, int]:
    """Branch and bound: the configurations in increasing order of their lower bound on the
    cycles (quco.perfmodel.bounds), evaluated until the next one's bound is slower than the
    `top`-th fastest evaluated so far and than `within`; every one left is slower than that
    (its cycles are at least its bound), so the `top` fastest, and the rank of any
    configuration of at most `within` cycles, are those of evaluating them all. Returns
    (ranked evaluated configurations, skipped)."""
    order = sorted((bounds.lower_bound(m, work, c), i) for i, c in enumerate(configs))
    fastest: list = []   # the `top` fastest cycles so far, negated (a max-heap)
    done = []
    for n, (lb, i) in enumerate(order):
        if len(fastest) == top and lb > max(-fastest[0], within):
            return sorted(done, key=_key), len(order) - n
        r = search.Ranked(configs[i], search.evaluate(m, work, configs[i]))
        done.append(r)
        heapq.heappush(fastest, -r.outcome.cycles)
        if len(fastest) > top:
            heapq.heappop(fastest)
    return sorted(done, key=_key), 0


def search_space(m: Machine, g: dict, work: Work, method: str | None = None, where: str = "",
                 top: int = 0, within: float = 0.0) -> Result:
    """ATT/Fine-Tuned by the planned method; raises SpaceTooLarge past the bound. `top` 0:
    every configuration evaluated and ranked; else the exhaustive search ranks exactly only
    the `top` fastest and every configuration of at most `within` cycles (the others it may
    skip by their lower bound: `Result.skipped`)."""
    p = plan(m, g, work, method)
    check(p, where or work.name)
    skipped = 0
    if p.method == EXHAUSTIVE:
        configs = search.candidates(work, m, p.tiles, p.slot_choices)
        if top:
            ranked, skipped = _pruned(m, work, configs, top, within)
        else:
            ranked = search.rank(m, work, configs)
    else:
        seen: dict = {}
        for t in p.tiles:
            _descent(m, work, t, p.slot_choices, seen)
        ranked = sorted(seen.values(), key=_key)
    return Result(p, ranked, len(ranked), skipped)
