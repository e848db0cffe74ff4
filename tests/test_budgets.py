"""Issue #3's budgets, checked on figures that are exact and deterministic: ROM bytes,
modelled cycles (instruction counts through the default timing profile, no wall clock)
and the measured stack high-water mark. bench/bench.py prints the full tables; these
tests stop a change that silently breaks a target."""
import dataclasses
from pathlib import Path

import pytest

from conftest import EXAMPLE_KERNELS, MM_KERNEL
from quco.emulator import elf
from quco.gst import abi, tables
from quco.host.device import Device
from quco.kernel.format import load_kernel

ROM_BUDGET = 4800             # bytes of code and constants (the unit has 8 KiB; 4,096 until issue #23 added the
                              # length and barrier-aware LDS bounds, Little per kernel and the slot cap: 4,316;
                              # issue #30's quco+ rule set (integer slots, no CU step): 4,428; its follow-up: 4,376;
                              # quco+'s neighbour rule: 4,552; quco+ reading the queues' passes: 4,776; its cap reading passes by group index: 4,724)
MM_COLD_BUDGET = 1500         # cycles, 9-queue Matrix-Matrix on the R9 Nano, cv32e40p profile
MM_CACHED_BUDGET = 250        # cycles, the identical relaunch
# The CV32E40P RTL (Verilator, openhwgroup/cv32e40p with its FPU, zero-wait-state memories) on
# the firmware of 771032e (issue 28), R9 Nano, Matrix-Matrix: boot, cold launch, cached relaunch.
# That ELF is kept as tests/fixtures/firmware/quco-771032e.elf (the build is reproducible: the
# Makefile's rule at that commit gives these bytes from any folder), so the cycle model stays
# checked against the RTL's own run while the firmware moves on.
RTL_ELF = Path(__file__).parent / "fixtures" / "firmware" / "quco-771032e.elf"
RTL_CYCLES = (100_561, 1_483, 231)
STACK_BUDGET = abi.STACK_RESERVE


def test_rom_within_budget(elf_path):
    assert elf.load(elf_path).text_bytes <= ROM_BUDGET


def test_matrix_matrix_launch_within_budget(elf_path):
    mm = load_kernel(MM_KERNEL)
    dev = Device("r9-nano", elf_path, profile="cv32e40p")
    cold, cached = dev.launch(mm), dev.launch(mm)
    assert cold.ok and not cold.cache_hit and cached.cache_hit
    assert cold.cost.cycles <= MM_COLD_BUDGET
    assert cached.cost.cycles <= MM_CACHED_BUDGET
    # a hit that reconfigured anything but the generation would cost hundreds of cycles
    assert cached.cost.cycles < cold.cost.cycles / 4


def test_the_default_profile_gives_the_rtls_cycles():
    """Exact, not within a tolerance: on the firmware the RTL ran, every instruction class
    matches the RTL's, so any change of these counts is a change of the cycle model. Today's
    firmware is held to MM_COLD_BUDGET above, not to this run."""
    # that firmware refuses the queues' passes (its `reserved` field): the record as it was then
    mm = dataclasses.replace(load_kernel(MM_KERNEL), movement=[])
    dev = Device("r9-nano", RTL_ELF, profile="cv32e40p")  # quco-emu's default profile
    cold, cached = dev.launch(mm), dev.launch(mm)
    assert (dev.boot_cost.cycles, cold.cost.cycles, cached.cost.cycles) == RTL_CYCLES
    assert (dev.boot_step.instructions, cold.instructions, cached.instructions) == (80_390, 1_171, 196)


@pytest.mark.parametrize("gpu", tables.preset_names())
def test_stack_high_water_within_reserve(elf_path, gpu):
    dev = Device(gpu, elf_path)
    for path in EXAMPLE_KERNELS:
        dev.launch(load_kernel(path))
    assert 0 < dev.stack_high_water() <= STACK_BUDGET
