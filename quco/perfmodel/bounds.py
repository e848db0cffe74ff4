"""A lower bound on the cycles `sim.simulate` gives a configuration, without simulating it
(issue #29 item 3): the search skips a configuration whose bound is already slower than
the configurations it must rank, so its results are those of evaluating every one.

Every term is work the simulation charges to one server of the busiest CU, which no
schedule can overlap with itself (each server starts at cycle 0 and the run ends after
its last request):

- **DRAM**: every byte of a tile that misses the L2 takes `1 / (rate x efficiency of the
  descriptor's size)` on the CU's DRAM share, every result byte `1 / rate` (memory.Pipes);
- **L2**: every byte a tile moves passes the CU's L2 share (`Pipes.l2_rate`);
- **ATT**: the unit is busy `descriptors x att_issue` per tile it issues, and a tile is
  consumed after its issue;
- **SIMDs** (where the resident work-groups share them): every step's compute and barrier
  code, and every work-group's stage set-up, on `capacity` servers;
- **a resident slot's chain**: its work-groups run one after another, each step at least
  its compute plus the longer of its barrier code and its chain of dependent instructions
  (`Model._consumer`), each phase's end an LDS round trip, each work-group's first step
  after its stage set-up and after its first tile's round trip; and each work-group at least
  its tiles' round trips, `slots` of a queue's at a time (a slot is reused only once its tile
  has been consumed and released).

Which tiles a work-group loads (stationary operands once per slot, L2 hits by pass) is
read from the same `Model` the simulation builds, not recomputed. The simulation
extrapolates long grids, long loop nests and long passes (cu_model.py, sim.py, window.py) from
simulated parts, linearly, so its result can fall below work it would charge in a full
run (by up to 6.5% seen): the search multiplies the bound by SAFETY, a measured margin, not a
proof. `bench/bounds.py` checks it on every configuration of `bench/model_digest.py`'s set
(`--exact`: the unscaled bound against full runs; `--grids`: larger grids and the workloads'
layers) and prints the tightest ratio; tests/test_bounds.py on a sample.
"""
from __future__ import annotations

import math

from .cu_model import Model  # it holds what a run charges; building one simulates nothing
from .params import Machine, const, dram_efficiency
from .work import Config, Work

# The extrapolated runs fall up to 6.6% below the work a full run charges (Matrix-Matrix
# 512 / 7+8 on the H100 at 8,192 work-groups: 0.935 of the bound; Matrix-Vector 256 / 4+8 at
# 32,768: 0.976), measured by bench/bounds.py (--grids); 0.9 leaves a margin below that.
SAFETY = 0.9


def lower_bound(m: Machine, work: Work, cfg: Config, mode: str = "att", max_occupancy: int = 0,
                safety: float = SAFETY) -> float:
    """Cycles `sim.simulate(m, work, cfg, mode, max_occupancy=...)` cannot go below: the run's
    bound times `safety` (1: below the exact run, `simulate(..., exact=True)`), plus the launch
    and a split K's reduction. Raises ValueError where the configuration does not fit, as the
    model does."""
    model = Model(m, work, cfg, mode, max_occupancy=max_occupancy)
    return safety * _run_bound(model) + _after_grid(m, work)


def _after_grid(m: Machine, work: Work) -> float:
    """What Model.outcome adds after the run: the launch and a split K's reduction."""
    end = m.launch
    if work.split_k > 1:
        partials = (work.work_groups or m.cus) * work.output_bytes
        end += m.lat_dram + (1 + 1 / work.split_k) * partials / m.dram_bytes_per_cycle
    return end


def _loads(model, first_wg: bool):
    """The tiles one work-group loads over its passes, as counts {(group index, bytes, L2 hit
    fraction): tiles}: a group takes part in one pass in `every` and brings new data in one of
    its own passes in `period` (Group.in_pass, skipped, hit), counted without walking them."""
    out: dict = {}
    for gi, g in enumerate(model.groups):
        own = -(-model.passes // g.every)      # passes p < passes with p % every == 0
        fresh = -(-own // g.period)            # of those, own passes o with o % period == 0
        if g.resident:                         # loaded once per slot: its first pass, fresh
            passes = [(g.hit_fresh, 1 if first_wg else 0)]
        elif g.kept:                           # loaded in its fresh passes only
            passes = [(g.hit_fresh, fresh)]
        else:
            passes = [(g.hit_fresh, fresh), (g.hit_again, own - fresh)]
        for hit, n in passes:
            if n <= 0:
                continue
            if g.tiles > 1:
                key = (gi, g.tile_bytes, hit)
                out[key] = out.get(key, 0) + n * (g.tiles - 1)
            key = (gi, g.last_bytes, hit)
            out[key] = out.get(key, 0) + n
    return out


def _run_bound(model) -> float:
    pipes = model.pipes
    occ, wgs = model.occ, model.wgs
    att = model.mode != "noatt"
    dram = l2 = issue = 0.0
    for first_wg, count in ((True, occ), (False, wgs - occ)):  # each slot's first work-group, the others
        if count <= 0:
            continue
        d = b = a = 0.0
        for (gi, nbytes, hit), n in _loads(model, first_wg).items():
            d += n * nbytes * (1.0 - hit) / (pipes.dram_rate * dram_efficiency(model.request_bytes))
            b += n * nbytes / pipes.l2_rate
            a += n * model.att_cost[model.groups[gi].first]
        dram, l2, issue = dram + count * d, l2 + count * b, issue + count * a
    steps = model.passes * model.steps
    dram += wgs * steps * model.out_per_step / pipes.dram_rate  # the results, written step by step
    terms = [dram, l2]
    if att:
        terms.append(issue)
        terms += _consumer_bounds(model)
    return max(terms)


def _in_flight(model, first_wg: bool) -> float:
    """A work-group's time by its slots (ATT and Ideal): a group's tile i + slots is issued only
    once tile i's slot is released (consumed, then an LDS round trip) and arrives at least its
    ATT issue, the ATT latency and an L2 round trip (a DRAM one where none of its tiles all
    hits) after that, so the group's n tiles take ceil(n / slots) such round trips."""
    m, lds = model.m, const("LDS_LATENCY")
    tiles: dict = {}
    for (gi, _, hit), n in _loads(model, first_wg).items():
        count, all_hit = tiles.get(gi, (0, False))
        tiles[gi] = (count + n, all_hit or hit >= 1.0)
    out = 0.0
    for gi, (n, all_hit) in tiles.items():
        g = model.groups[gi]
        trips = -(-n // g.slots)
        trip = model.att_cost[g.first] + m.lat_att + (m.lat_l2 if all_hit else m.lat_dram)
        out = max(out, trips * trip + (trips - 1) * lds)
    return out


def _consumer_bounds(model) -> list[float]:
    """The SIMD servers' work and one resident slot's chain (ATT and Ideal: Model._consumer)."""
    m, work = model.m, model.work
    code_sum = chain_sum = 0.0
    # which groups take part in pass p repeats every lcm(every) passes: count each residue's passes
    cycle = min(math.lcm(*(g.every for g in model.groups)), model.passes)
    for r in range(cycle):
        n = -(-(model.passes - r) // cycle)
        code, chain = _pass_code(model, [g for g in model.groups if g.in_pass(r)])
        code_sum, chain_sum = code_sum + n * code, chain_sum + n * chain
    # the step's FLOPs are in proportion to the bytes it uses: a work-group's whole FLOPs
    flops_sum = model.flops_per_byte * sum(
        ((g.tiles - 1) * g.tile_bytes + g.last_bytes) * -(-model.passes // g.every)
        for g in model.groups) / model.flops_per_cycle
    # a work-group's first step waits for its set-up and, where every work-group loads a tile in
    # it (not only a slot's first), for that tile (issue, ATT latency, at least an L2 round
    # trip); each phase but the last ends in an LDS round trip
    loads = any(g.in_pass(0) and not g.skipped(0, False) for g in model.groups)
    first = min(model.att_cost.values()) + m.lat_att + m.lat_l2 if loads else 0.0
    per_wg = max(model.setup, first) + chain_sum + flops_sum + (work.phases - 1) * const("LDS_LATENCY")
    # the slot's first work-group, then the others, each at least the longer of the two
    chain = max(per_wg, _in_flight(model, True)) + (math.ceil(model.wgs / model.occ) - 1) * max(
        per_wg, _in_flight(model, False))
    out = [chain]
    if model.simd is not None:  # the resident work-groups share `capacity` SIMD servers
        out.append(model.wgs * (model.setup + code_sum + flops_sum) / len(model.simd))
    return out


def _pass_code(model, taking: list) -> tuple[float, float]:
    """One pass's barrier code on the pools and its steps' longer of that and their chain of
    dependent instructions, summed over its steps: a step waits for the descriptors of every
    group with a tile k in it (runs of steps with the same groups cost the same)."""
    m, waves = model.m, model.work.consumer_wavefronts
    code_sum = chain_sum = 0.0
    k = 0
    for end in sorted({g.tiles for g in taking} | {model.steps}):
        if end <= k:
            continue
        descs = sum(g.descriptors(m.att_box_rows) for g in taking if g.tiles > k)
        instrs = m.step_instr + m.queue_instr * descs + m.store_instr * model.stores
        code = m.code_on_pools * instrs * waves * m.wave_instr / model.active_pools
        code_sum += (end - k) * code
        chain_sum += (end - k) * max(code, instrs * m.dep_instr)
        k = end
    return code_sum, chain_sum
