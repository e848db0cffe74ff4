"""Issue #29's grid-size independence: a grid of 256 and of 32,768 work-groups give the same
per-work-group time within 0.5%, the measured kernels (hardware.scaled_kernel) on the H100.

On the whole H100, 256 work-groups are under two waves of 132 SMs: the tail and the first
round trip are part of their time (as the measured paper grid shows), so the comparison is on a
one-SM partition, where 256 work-groups are already 256 / resident rounds, the steady state the
model extrapolates at 32,768. tests/test_perf_mechanisms.py compares 2,112 and 33,792 on the
whole GPU by the time a round adds."""
from __future__ import annotations

import pytest

from quco.gst import tables
from quco.perfmodel import hardware
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import Work

ONE_SM = machine(tables.unpack(tables.load("h100-sxm")), active_cus=1)


def run(kernel: str, work_groups: int, tile: int, slots: int):
    work = Work.of(hardware.scaled_kernel(kernel, work_groups))
    return simulate(ONE_SM, work, hardware.measured_config(work, tile, slots))


@pytest.mark.parametrize("tile, slots", [(64, 8), (1024, 4)])
@pytest.mark.parametrize("kernel", hardware.COMPARED)
def test_256_and_32768_work_groups_take_the_same_time_a_work_group(kernel, tile, slots):
    """(cycles - launch) / work-groups within 0.5%, and the 32,768 grid extrapolated from as
    many events as the 256 one (the cost does not grow with the grid)."""
    small, large = run(kernel, 256, tile, slots), run(kernel, 32768, tile, slots)
    per = [(o.cycles - ONE_SM.launch) / n for o, n in ((small, 256), (large, 32768))]
    assert per[1] == pytest.approx(per[0], rel=0.005)
    assert large.extrapolated and large.events <= small.events


@pytest.mark.parametrize("kernel, tile, slots", [("Dot-Product", 8192, 3), ("Matrix-Vector", 2048, 2)])
def test_one_tile_work_groups_add_the_same_time_at_256_and_32768(kernel, tile, slots):
    """A work-group of one tile (about 510 cycles) pays its first round trip once per grid,
    about 1.2% of 256 work-groups' time: the time 256 more work-groups add at a grid of 256 and
    32,768 more at 32,768 is the same within 0.5%."""
    t = {n: run(kernel, n, tile, slots).cycles for n in (256, 512, 32768, 65536)}
    assert (t[65536] - t[32768]) / 32768 == pytest.approx((t[512] - t[256]) / 256, rel=0.005)
