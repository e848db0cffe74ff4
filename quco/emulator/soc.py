"""The QuCo unit as a Unicorn RV32 SoC: memory map with protections, firmware loading,
boot and launch steps with exact retired-instruction counts, typed faults.

Counting is per translated basic block (UC_HOOK_BLOCK): RV32IMF has no compressed
instructions, so a block of `size` bytes retires size/4 instructions when it runs to the
end, which every block does unless a fault stops it (then the step raises anyway). The
hooks that count and record faults are in emulator/hooks.py; this module maps the memory,
runs the steps and speaks the unit's protocol.
"""
from __future__ import annotations

import ctypes
import mmap
import time
from dataclasses import dataclass
from pathlib import Path

from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV32, UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE, Uc, UcError
from unicorn.riscv_const import UC_RISCV_REG_PC

from . import fastcount, faults, isa, protocol, quirks, timing
from .elf import Image
from .hooks import COUNTED_REGIONS, Hooks, pages
from ..gst import abi

STOP_ADDRESS = 0xFFFF_FFF0  # never executed: emu_start runs until wfi or a fault
DEFAULT_BUDGET = 200_000    # instructions per step before the firmware counts as runaway
WALL_BUDGET = 2.0           # seconds per step in the uncounted mode (a step takes microseconds)
STACK_CANARY = b"\xa5\x5a\xc3\x3c"


class _Window:
    """A region Unicorn runs on memory the Soc owns (uc.mem_map_ptr): the host reads and
    writes it by slicing, with no call into Unicorn; the core sees the same bytes."""
    __slots__ = ("base", "size", "mem")

    def __init__(self, uc, base: int, size: int, prot: int):
        self.base, self.size, self.mem = base, size, mmap.mmap(-1, size)  # anonymous: page-aligned, zeroed
        uc.mem_map_ptr(base, size, prot, ctypes.addressof(ctypes.c_char.from_buffer(self.mem)))


def _protection(perms: str) -> int:
    """Unicorn's protection bits for a Region's "rwx" subset."""
    return sum(bit for letter, bit in (("r", UC_PROT_READ), ("w", UC_PROT_WRITE), ("x", UC_PROT_EXEC))
               if letter in perms)


@dataclass(slots=True)  # slots: made at every step, a little cheaper
class Step:
    """One boot or launch: what the core retired until it slept again.

    `cycles` is None without a timing profile; `reads`/`writes` (per region name:
    ROM, DATA, GST; ROM reads include one instruction fetch per instruction) are None
    unless the Soc counts memory accesses. `trace` lists (address, size, cycles) of every
    executed block when tracing."""
    instructions: int
    blocks: int
    cycles: int | None = None
    reads: dict | None = None
    writes: dict | None = None
    trace: list | None = None
    answer: protocol.Answer | None = None  # boot() and launch(): what the firmware answered


class Soc(Hooks):
    def __init__(self, image: Image, gst: bytes, budget: int = DEFAULT_BUDGET,
                 profile: timing.Profile | str | Path | None = None, count_memory: bool = False,
                 trace: bool = False, count: bool = True, wall_budget: float = WALL_BUDGET):
        """`profile` (a Profile, or a built-in profile's name or a TOML file) adds modelled
        cycles: the Soc schedules its own blocks with it. count=False runs without any
        Python hook per block (the fastest mode): no instruction counts, and runaway code is
        stopped after `wall_budget` seconds of host time. Every other mode counts, and the
        budget (instructions per step) is exact: kept by the C block hook, or by Unicorn's
        C-level instruction limit (run_budgeted)."""
        if len(gst) != abi.GST.size:
            raise ValueError(f"GST must be {abi.GST.size} bytes, got {len(gst)}")
        self.gst = abi.GST.unpack(gst)
        if profile is not None and not isinstance(profile, timing.Profile):
            profile = timing.load_profile(profile)
        timer = timing.Timer(profile, self.read) if profile is not None else None
        self.image, self.budget, self.wall_budget = image, budget, wall_budget
        self._deadline, self._timed_out = None, False
        self._reg_buf = ctypes.c_uint64(0)  # Hooks._reg reads registers into it
        self._reg_ref = ctypes.byref(self._reg_buf)
        # the LDS the GST declares, within the window (an invalid GST still gets a SoC)
        lds_real = self.lds_bytes = min(self.gst["lds_bytes"], abi.LDS.size)
        uc = self.uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
        # Each region with the permissions the ABI declares for it. The ones the host reads or
        # writes at every launch (mailbox, LDS; DATA and GST alike) are on memory the Soc owns,
        # found by the address's top nibble (every region has its own: asserted); ROM, which
        # holds code, stays Unicorn's own so that writing it invalidates translated blocks.
        self._windows = {}
        for r in abi.REGIONS:
            size, prot = pages(lds_real if r is abi.LDS else r.size), _protection(r.perms)
            if "x" in r.perms:
                uc.mem_map(r.base, size, prot)
                continue
            assert r.base >> 28 == (r.base + size - 1) >> 28 and r.base >> 28 not in self._windows
            self._windows[r.base >> 28] = _Window(uc, r.base, size, prot)
        uc._quco_windows = self._windows  # the memory lives as long as the Unicorn instance using it
        self._mailbox, self._lds = self._windows[abi.MAILBOX.base >> 28].mem, self._windows[abi.LDS.base >> 28].mem
        # Stack high-water mark: DATA starts out filled with a canary that only the stack
        # above .bss can overwrite; crt0 clears .bss itself.
        uc.mem_write(abi.DATA.base, STACK_CANARY * (abi.DATA.size // 4))
        for addr, data in image.segments:
            uc.mem_write(addr, data)
        uc.mem_write(abi.GST_REGION.base, gst)
        self._install_fault_hooks()  # emulator/hooks.py, like the counting hooks below
        self.minmax = quirks.MinMaxFix(uc, image.segments)
        self.timer, self.count_memory, self.tracing, self.counting = timer, count_memory, trace, count
        self.booted: protocol.Answer | None = None  # the boot's answer, once booted
        self.generation = self.launches = 0         # acknowledged by the firmware so far
        self._verified = set()  # configurations the protocol check passed (protocol.check_config)
        self._raw_hooks, self._blocks = [], {}
        self._succ, self._variants = {None: {}}, {}  # the timed edge graph (emulator/hooks.py)
        self._start_edge = (0, 0, self._succ[None], None, None)  # before a step's first block
        self._fast = None  # the C hooks (emulator/fastcount.py), when built
        self._edge, self._timed_block, self._timed_lats = self._start_edge, -1, ()
        self._operand_timed = self._operand_timed_sites()  # divides and FDIVs timed from their operands (hooks.py)
        self._operand_regs = self._operand_registers()  # the registers each one's latency reads
        self.split_penalty = timer.p.split_access if timer is not None else 0
        self._install_counting()
        if count_memory:
            self._install_access_counting()
        self.pc = image.entry
        self._wfi_pcs = self._wfi_exits()
        self.instructions = self.blocks = self.cycles = self.misaligned = 0
        self.woken = 0  # steps run so far: the first one starts at reset
        self.prev = None  # DebugSoc: the previous block's node
        self.reads, self.writes, self.trace = {}, {}, []
        self._fault = None

    # ---------------------------------------------------------------- running
    def _begin_step(self):
        self._fault = None
        self.instructions = self.blocks = self.misaligned = 0
        self.prev, self._edge, self._timed_block = None, self._start_edge, -1
        if self._fast is not None:
            self._fast.take()  # from edge 0 (a step that faulted left its counts)
        if self.count_memory or self.tracing:
            self.reads, self.writes, self.trace = {}, {}, []
        self.cycles = self._wake_cycles()

    def run(self) -> Step:
        """Run from the saved PC until the firmware sleeps (wfi) again."""
        self._begin_step()
        try:
            if self._fast is not None:  # the C block hook keeps the budget (below)
                self._run_budgeted()
            elif self.counting:  # Unicorn's own instruction limit (counted in C) stops runaway code
                self.uc.emu_start(self.pc, STOP_ADDRESS, count=self.budget)
            else:
                self._timed_out = False
                self._deadline = time.monotonic() + self.wall_budget
                try:
                    self.uc.emu_start(self.pc, STOP_ADDRESS)
                finally:
                    self._deadline = None
            pc = self._read_pc()
            self.minmax.settle(pc)
            if self._fast is not None:
                self._take_counts()
            if not self._fault and (self._timed_out or pc not in self._wfi_pcs):
                limit = (f"{self.budget} instructions" if self.counting
                         else f"{self.wall_budget:g} s (uncounted mode)")
                self._set_fault(faults.BudgetExceeded, f"did not sleep within {limit}", None)
        except UcError as e:
            self._raise_fault(self._fault_from(e))
        if self._fault is not None:
            self._raise_fault(pc)
        return self._end_step(pc)

    def _run_budgeted(self):
        """A step under the C hooks: their block hook stops the core before a block that could
        take the step past its budget, and what is left of the budget then runs under
        Unicorn's instruction limit, exact to the instruction like a whole step under it (the
        limit costs a callback per instruction, so only the rare last blocks pay for it)."""
        c = self._fast.c
        c.budget, c.over = self.budget, 0
        try:
            self.uc.emu_start(self.pc, STOP_ADDRESS)
        finally:
            c.budget = fastcount.NO_BUDGET
        left = self.budget - c.insns
        if c.over and not self._fault and left > 0:  # left 0: stopped where the limit would have
            # Unicorn counts through a code hook compiled into each block it translates while a
            # limit is set, and keeps blocks translated before: drop them, or the limit would
            # not see their instructions (the next step without a limit drops these in turn)
            self.uc.ctl_flush_tb()
            self.uc.emu_start(self._read_pc(), STOP_ADDRESS, count=left)

    def _end_step(self, pc: int) -> Step:
        """The step slept at pc: its counts."""
        self.pc = pc
        self.woken += 1
        if self.tracing and self.trace and self.timer:  # the wake-up belongs to the first block
            self.trace[0] = self.trace[0].plus(self._wake_cycles(self.woken - 1))
        reads = writes = None
        if self.count_memory:
            reads = {r.name: self.reads.get(r.name, 0) for r in COUNTED_REGIONS}
            reads["ROM"] += self.instructions  # one 32-bit fetch per instruction
            writes = {r.name: self.writes.get(r.name, 0) for r in COUNTED_REGIONS}
        return Step(self.instructions, self.blocks, self.cycles if (self.timer or self.tracing) else None,
                    reads, writes, self.trace if self.tracing else None)

    def _wake_cycles(self, steps_before: int | None = None) -> int:
        """Cycles before the step's first instruction issues: from reset release for the
        first step, from the doorbell interrupt for every later one (profile [wake])."""
        if self.timer is None:
            return 0
        first = (self.woken if steps_before is None else steps_before) == 0
        return self.timer.p.wake_reset if first else self.timer.p.wake_interrupt

    def _read_pc(self) -> int:
        return self._reg(UC_RISCV_REG_PC)

    def _wfi_exits(self) -> frozenset:
        """PCs just after a wfi in the firmware image: where a clean step stops."""
        return frozenset(addr + off + 4 for addr, data in self.image.segments for off in range(0, len(data) - 3, 4)
                         if int.from_bytes(data[off:off + 4], "little") == isa.WFI)

    # ---------------------------------------------------------------- the unit's protocol
    def boot(self) -> Step:
        """Release reset: the firmware checks the GST and sleeps. step.answer is its boot
        status and detail."""
        if self.woken:
            raise RuntimeError("the Soc has booted already (make a new one to reset)")
        step = self.run()
        step.answer = self.booted = protocol.boot_answer(self._mailbox)
        return step

    def ring(self, record: bytes) -> None:
        """The host's half of a launch (quco.emulator.protocol); the next step serves it."""
        protocol.ring(self._mailbox, record)

    def launch(self, record: bytes) -> Step:
        """One launch through the mailbox: ring, run until the firmware sleeps, read its
        answer (mailbox, and the LDS configuration once) and hold it to the ABI. Raises
        FirmwareMisbehaved for an answer the ABI does not allow."""
        if self.booted is None:
            raise RuntimeError("boot() the Soc before a launch")
        self.ring(record)
        step = self.run()
        self.launches += 1
        step.answer = protocol.launch_answer(self._mailbox, self._lds, record, self.gst, self.booted,
                                             self.generation, self.launches, self._verified)
        self.generation = step.answer.generation
        return step

    # ---------------------------------------------------------------- host side of the bus
    def read(self, address: int, size: int) -> bytes:
        """Bytes at address: from the Soc's own memory, else (ROM, or past a region's
        mapping: Unicorn's error) through Unicorn."""
        w = self._windows.get(address >> 28)
        if w is not None and w.base <= address and address + size <= w.base + w.size:
            return w.mem[address - w.base:address - w.base + size]
        return bytes(self.uc.mem_read(address, size))

    def write(self, address: int, data: bytes) -> None:
        if type(data) is not bytes:
            data = bytes(data)
        w = self._windows.get(address >> 28)
        if w is not None and w.base <= address and address + len(data) <= w.base + w.size:
            w.mem[address - w.base:address - w.base + len(data)] = data
            return
        self.uc.mem_write(address, data)

    def stack_high_water(self) -> int:
        """Deepest stack use since reset, in bytes, from the canary left untouched."""
        bottom = self.image.addresses.get("__bss_end", abi.DATA.base)
        top = abi.DATA.base + abi.DATA.size
        data = self.read(bottom, top - bottom)
        for off in range(0, len(data), 4):
            if data[off:off + 4] != STACK_CANARY:
                return top - (bottom + off)
        return 0

    def lds(self, size: int | None = None) -> bytes:
        return self.read(abi.LDS.base, self.lds_bytes if size is None else size)
