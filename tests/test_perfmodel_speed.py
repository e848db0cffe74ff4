"""The performance model's speed work (issue #29 item 3) changes no result: the event kernel
(quco.perfmodel.events) against SimPy itself, event for event; the model's cost against a
bound on the events it schedules, at any grid size (a count, not seconds)."""
import types
from pathlib import Path

import pytest
import simpy

from quco.gst import tables
from quco.host.kernel import load_kernel
from quco.perfmodel import hardware, search, sim
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work

KERNELS = Path(__file__).resolve().parent.parent / "quco" / "examples" / "kernels"


class CountingSimPy(simpy.Environment):
    """SimPy's own environment, counting what it schedules as the model's kernel does."""

    def __init__(self):
        super().__init__()
        self.scheduled = 0

    def schedule(self, event, priority=1, delay=0):
        self.scheduled += 1
        super().schedule(event, priority, delay)


def _cases():
    """A configuration per bundled kernel on two presets in each mode (some with their rounds
    or passes extrapolated, some on the step window, multi-phase and split-K ones among them)."""
    out = []
    for gpu in ("r9-nano", "h100-sxm"):
        g = tables.unpack(tables.load(gpu))
        m = machine(g)
        for path in sorted(KERNELS.glob("*.json")):
            work = Work.of(load_kernel(path))
            cands = search.candidates(work, m, search.tiles(g), (1, 2, 3))
            for cfg in (cands[0], cands[len(cands) // 2]):
                out.append((gpu, m, work, cfg, "att", 0))
            out.append((gpu, m, work, Config(search.tiles(g)[2], (1,) * len(work.queues)), "noatt", 0))
    g = tables.unpack(tables.load("h100-sxm"))
    for name in ("Elementwise", "Dot-Product"):  # a large grid: rounds skipped, the step window
        work = Work.of(hardware.scaled_kernel(name, 32768))
        out.append(("h100-sxm", machine(g), work, Config(64, (2, 2)), "att", 0))
    mi = machine(tables.unpack(tables.load("r9-nano")), unlimited_lds=True)
    work = Work.of(load_kernel(KERNELS / "dot-product.json"))
    out.append(("r9-nano", mi, work, Config(512, tuple(work.tiles(i, 512) for i in range(2))), "ideal", 2))
    return out


@pytest.mark.parametrize("gpu,m,work,cfg,mode,cap", _cases(),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_the_event_kernel_gives_simpys_results_event_for_event(monkeypatch, gpu, m, work, cfg, mode, cap):
    if not sim.occupancy(m, work, cfg, mode):
        pytest.skip("does not fit")
    ours = sim.simulate(m, work, cfg, mode, max_occupancy=cap).as_dict()
    monkeypatch.setattr(sim, "Environment", CountingSimPy)
    monkeypatch.setattr(sim, "events", types.SimpleNamespace(Store=simpy.Store))
    theirs = sim.simulate(m, work, cfg, mode, max_occupancy=cap).as_dict()
    assert ours == theirs  # cycles and every other figure, events scheduled included
