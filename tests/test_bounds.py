"""The search's lower bound (quco/perfmodel/bounds.py) and the branch and bound it drives
(space.search_space with `top`): the bound never exceeds the model's cycles, and the pruned
search ranks the configurations asked for exactly as evaluating every one does. Counts of
evaluations, never seconds. bench/bounds.py checks the bound on the whole digest set."""
import pytest

from conftest import EXAMPLES_DIR
from quco.gst import tables
from quco.kernel.format import load_kernel
from quco.perfmodel import bounds, hardware, search, space
from quco.perfmodel.params import machine
from quco.perfmodel.residency import occupancy
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Config, Work

KERNELS = sorted(EXAMPLES_DIR.glob("*.json"))


def setup(gpu: str, path):
    g = tables.unpack(tables.load(gpu))
    k = load_kernel(path)
    return g, machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)


def sample(m, g, work, every: int) -> list[Config]:
    """Every `every`-th configuration of the searched space, the smallest tiles among them."""
    p = space.plan(m, g, work)
    return search.candidates(work, m, p.tiles, p.slot_choices)[::every]


@pytest.mark.parametrize("gpu", ["h100-sxm", "r9-nano", "mi300x"])
def test_the_bound_is_below_the_exact_run(gpu):
    """Without its safety factor the bound is work the run charges on one server: below the
    run without extrapolation, on every bundled kernel (ATT, the NoATT pool and Ideal)."""
    n = 0
    for path in KERNELS:
        g, m, work = setup(gpu, path)
        for cfg in sample(m, g, work, 23):
            exact = simulate(m, work, cfg, exact=True).cycles
            assert bounds.lower_bound(m, work, cfg, safety=1.0) <= exact, (path.stem, cfg)
            n += 1
        cfg = Config(search.tiles(g)[2], (1,) * len(work.queues))
        if occupancy(m, work, cfg, "noatt") >= 1:
            assert bounds.lower_bound(m, work, cfg, "noatt", safety=1.0) <= simulate(m, work, cfg, "noatt", exact=True).cycles
        mi = machine(g, unlimited_lds=True)
        t = search.tiles(g)[3]
        ideal = Config(t, tuple(work.tiles(i, t) * q.passes for i, q in enumerate(work.queues)))
        assert bounds.lower_bound(mi, work, ideal, "ideal", 1, safety=1.0) <= simulate(mi, work, ideal, "ideal", exact=True,
                                                                                       max_occupancy=1).cycles
    assert n >= 40


def test_the_bound_with_its_safety_is_below_the_extrapolated_runs_on_large_grids():
    """The extrapolated runs (rounds, step window) on 32,768 work-groups: below them too."""
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    for name in ("Matrix-Vector", "Elementwise"):
        work = Work.of(hardware.scaled_kernel(name, 32768))
        for cfg in sample(m, g, work, 9):
            o = search.evaluate(m, work, cfg)
            assert o.extrapolated and bounds.lower_bound(m, work, cfg) <= o.cycles, (name, cfg)


def test_the_bound_is_tight_where_dram_binds():
    """Not a trivial bound: a streaming kernel's DRAM-bound configurations on the H100 run
    within 3% of it (their DRAM share busy from the first cycle to the last)."""
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    work = Work.of(hardware.scaled_kernel("Elementwise", 4096))
    best = search.exhaustive(m, g, work)[0]
    assert best.outcome.cycles <= 1.03 * bounds.lower_bound(m, work, best.config, safety=1.0)


@pytest.mark.parametrize("gpu,path,top", [
    ("h100-sxm", EXAMPLES_DIR / "matrix-vector.json", 10),
    ("mi100", EXAMPLES_DIR / "mi100" / "matrix-matrix.json", 1),
    ("r9-nano", EXAMPLES_DIR / "batched-matrix-matrix.json", 3),
])
def test_the_pruned_search_ranks_what_it_is_asked_for_as_the_whole_one(gpu, path, top):
    g, m, work = setup(gpu, path)
    whole = space.search_space(m, g, work)
    pruned = space.search_space(m, g, work, top=top)
    assert whole.skipped == 0 and whole.evaluations == len(whole.ranked)
    assert pruned.searched == whole.evaluations and pruned.evaluations == len(pruned.ranked)
    pick = [(r.config, r.outcome.cycles) for r in whole.ranked[:top]]
    assert [(r.config, r.outcome.cycles) for r in pruned.ranked[:top]] == pick
    # a configuration of at most `within` cycles keeps its rank: every faster one is evaluated
    slow = whole.ranked[len(whole.ranked) // 2]
    within = space.search_space(m, g, work, top=top, within=slow.outcome.cycles)
    faster = sum(r.outcome.cycles < slow.outcome.cycles for r in within.ranked)
    assert faster == sum(r.outcome.cycles < slow.outcome.cycles for r in whole.ranked)
    assert within.evaluations >= pruned.evaluations


def test_the_bound_skips_the_costliest_configurations_of_a_large_grid_search(fresh_evaluations):
    """Elementwise on the H100 at 32,768 work-groups: for the best alone, the search skips
    every configuration of the three smallest tiles (the most steps, the costliest to
    simulate; issue-bound on the H100) and evaluates only the others."""
    g = tables.unpack(tables.load("h100-sxm"))
    m = machine(g)
    work = Work.of(hardware.scaled_kernel("Elementwise", 32768))
    res = space.search_space(m, g, work, top=1)
    assert res.searched == 63 and res.skipped == 3 * 8
    assert {r.config.tile for r in res.ranked} == {512, 1024, 2048, 4096, 8192}
    assert search.evaluate.cache_info().misses == res.evaluations
