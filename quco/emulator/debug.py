"""The Soc under a debugger: breakpoints, single steps and watchpoints that leave the
instruction and cycle counts exactly what an undisturbed run gives.

A normal Soc counts per translated block, which a debugger cannot use: resuming in the
middle of a block makes Unicorn translate a new block from there, and counting it again
would count its instructions twice. `DebugSoc` counts per instruction instead (a code hook
on every instruction: a few hundred thousand instructions a second, ample for a person at
a debugger):

- The block hook still names the block the timing model would see. After a stop in the
  middle of block B, the first block Unicorn reports on resuming starts inside B and ends
  where B ends: that is the rest of B, not a new block. Any other block is new; it is
  checked against RV32IMF and split into per-instruction cycles by `Timer.split`, against
  the same previous block as in a normal run, so the cycles add up to the same total.
- The code hook runs before each instruction: it stops there (emu_stop before the
  instruction executes, so nothing is counted) for a breakpoint, the end of a single step
  or a watchpoint the previous instruction hit, or charges the instruction. The
  instruction a resume starts at always runs, so continuing from a breakpoint moves on.
- The memory hook charges a split misaligned access, as in a timed run, and records a
  watchpoint hit; the access completes and the next instruction stops, as GDB expects of
  a hardware watchpoint.

`Target` adds the unit's life around it: boot, then each launch pushed into the mailbox
when the debugger resumes a firmware that sleeps in `wfi`.
"""
from __future__ import annotations

from dataclasses import dataclass

from unicorn import UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MEM_WRITE, UcError
from unicorn.riscv_const import UC_RISCV_REG_PC
from unicorn.unicorn_py3.unicorn import HOOK_CODE_CFUNC, HOOK_MEM_ACCESS_CFUNC

from . import faults, timing
from .soc import DEFAULT_BUDGET, STOP_ADDRESS, Soc, Step
from ..gst import abi

# GDB's signal numbers (gdb/signals.def), as the remote protocol carries them
SIGINT, SIGILL, SIGTRAP, SIGSEGV, SIGXCPU = 2, 4, 5, 11, 24
WATCH_KINDS = {2: "watch", 3: "rwatch", 4: "awatch"}  # Z2 write, Z3 read, Z4 access


def signal_of(fault: faults.Fault) -> int:
    if isinstance(fault, faults.IllegalInstruction):
        return SIGILL
    if isinstance(fault, faults.BudgetExceeded):
        return SIGXCPU
    if isinstance(fault, faults.Trap):
        return SIGTRAP
    return SIGSEGV  # the memory faults


@dataclass
class Stop:
    """Why the core stopped. kind: breakpoint, step, watch, sleep (wfi: the step ended),
    fault, exit (no launch left to push)."""
    kind: str
    pc: int
    signal: int = SIGTRAP
    hardware: bool = False              # breakpoint: set with Z1
    watch: tuple[str, int] | None = None  # (watch|rwatch|awatch, data address)
    fault: faults.Fault | None = None
    step: Step | None = None            # sleep: the counts of the step that ended


class DebugSoc(Soc):
    def __init__(self, image, gst: bytes, profile: timing.Profile | str = "cv32e40p", budget: int = DEFAULT_BUDGET):
        self.breakpoints: dict[int, bool] = {}            # address -> hardware
        self.watchpoints: list[tuple[int, int, int]] = []  # (address, length, Z kind)
        self._cur = None       # (start, retired end, translated end, cycles per instruction)
        self._cur_prev, self._cur_lats = None, ()  # its previous block, its divide latencies so far
        self._checked = {}     # (address, size) -> (retired bytes, first bad instruction)
        self._illegal = {}     # address -> what (an instruction outside RV32IMF)
        self._resumed = self._first = self._stepping = False
        self._pending = self._reason = None
        self.in_step = False
        self.total_instructions = self.total_cycles = 0  # of the steps that ended
        super().__init__(image, gst, budget=budget, profile=profile)

    def _install_counting(self):
        self._add_raw_hook(UC_HOOK_BLOCK, HOOK_CODE_CFUNC(self._on_debug_block))
        self._add_raw_hook(UC_HOOK_CODE, HOOK_CODE_CFUNC(self._on_insn))
        self._add_raw_hook(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, HOOK_MEM_ACCESS_CFUNC(self._on_data_access))

    # ---------------------------------------------------------------- hooks
    def _on_debug_block(self, _handle, address, size, _key):
        cur, resumed, self._resumed = self._cur, self._resumed, False
        if resumed and cur is not None and cur[0] <= address < cur[1] and address + size == cur[2]:
            return  # the rest of the block the debugger stopped in
        known = self._checked.get((address, size))
        if known is None:
            known = self._checked[(address, size)] = self._check_block(address, size)
        real, bad = known
        if bad is not None:
            self._illegal[bad[0]] = bad[1]
            real = bad[0] - address
        split = self.timer.split(self.prev, address, real) if real else []
        self._cur_prev, self._cur_lats = self.prev, ()
        self.prev = (address, real)
        self._cur = (address, address + real, address + size, split)
        self.blocks += 1

    def _debug_operand_timed(self, address):
        """A divide or fdiv/fsqrt is about to run: the rest of the block is split again with
        its latency from its operands (the instructions before it cost the same: the core is
        in order)."""
        start, end, translated, _ = self._cur
        self._cur_lats += (timing.operand_cycles(self.timer.p, self._operand_timed[address], self._x, self._f),)
        split = self.timer.split(self._cur_prev, start, end - start, self._cur_lats)
        self._cur = (start, end, translated, split)
        if len(self._cur_lats) == self.timer.timed(start, end - start):
            self.prev = (start, end - start, self._cur_lats)

    def _on_insn(self, _handle, address, _size, _key):
        if self._first:  # where the debugger resumed: runs whatever would stop here
            self._first = False
        else:
            reason = self._pending or (("breakpoint", address) if address in self.breakpoints else None)
            if reason is not None:
                self._reason = reason
                self.uc.emu_stop()
                return
        if address in self._illegal:
            self._set_fault(faults.IllegalInstruction, f"{self._illegal[address]} (the core is RV32IMF)",
                            None, address)
        elif self.instructions >= self.budget:
            self._set_fault(faults.BudgetExceeded, f"did not sleep within {self.budget} instructions",
                            None, address)
        if self._fault is not None:
            self.uc.emu_stop()
            return
        if address in self._operand_timed:
            self._debug_operand_timed(address)
        cur = self._cur
        self.cycles += cur[3][(address - cur[0]) >> 2]
        self.instructions += 1
        if self._stepping:
            self._pending = ("step", address)

    def _on_data_access(self, handle, access, address, size, value, key):
        super()._on_data_access(handle, access, address, size, value, key)
        for start, length, kind in self.watchpoints:
            if address < start + length and start < address + size and \
                    (kind == 4 or (kind == 2) == (access == UC_MEM_WRITE)):
                self._pending = ("watch", (WATCH_KINDS[kind], max(address, start)))
                return

    # ---------------------------------------------------------------- running
    def resume(self, step: bool = False) -> Stop:
        """Run from the PC until a breakpoint, a watchpoint, the end of one instruction
        (step), wfi or a fault."""
        if not self.in_step:
            self._begin_step()
            self.in_step, self._cur = True, None
        self._resumed = self._first = True
        self._stepping, self._pending, self._reason = step, None, None
        try:
            self.uc.emu_start(self.pc, STOP_ADDRESS)
            pc = self._read_pc()
        except UcError as e:
            pc = self._fault_from(e)
        self.minmax.settle(pc)
        if self._fault is not None:
            fault = self._fault_exception(pc)
            self.pc = fault.pc
            self.uc.reg_write(UC_RISCV_REG_PC, fault.pc)  # a trap has moved past it
            self.in_step = False
            return Stop("fault", fault.pc, signal_of(fault), fault=fault)
        if self._reason is not None:
            self.pc = pc
            kind, what = self._reason
            if kind == "watch":
                return Stop("watch", pc, watch=what)
            return Stop(kind, pc, hardware=kind == "breakpoint" and self.breakpoints.get(pc, False))
        if pc not in self._wfi_pcs:  # Unicorn stopped for no reason of ours
            fault = faults.BudgetExceeded("stopped outside wfi", pc, self.image.symbolize(pc), "", None)
            self.in_step = False
            return Stop("fault", pc, SIGXCPU, fault=fault)
        step_counts = self._end_step(pc)
        self.in_step = False
        self.total_instructions += step_counts.instructions
        self.total_cycles += step_counts.cycles
        return Stop("sleep", pc, step=step_counts)

    def set_pc(self, pc: int):
        self.pc = pc
        self.uc.reg_write(UC_RISCV_REG_PC, pc)

    # ---------------------------------------------------------------- the debugger's view of memory
    def regions(self, writable: bool = False) -> list[tuple[str, int, int]]:
        """(name, start, end) of what a debugger may read (or write): each region's real
        size, and only the writable ones (DATA, mailbox, LDS) for writing."""
        sizes = {abi.ROM.name: abi.ROM.size, abi.DATA.name: abi.DATA.size, abi.GST_REGION.name: abi.GST_REGION.size,
                 abi.MAILBOX.name: abi.MAILBOX.size, abi.LDS.name: self.lds_bytes}
        return [(r.name, r.base, r.base + sizes[r.name]) for r in abi.REGIONS
                if not writable or "w" in r.perms]

    def _within(self, address: int, writable: bool):
        return next(((name, lo, hi) for name, lo, hi in self.regions(writable) if lo <= address < hi), None)

    def peek(self, address: int, length: int) -> bytes:
        """Up to length bytes from address, as far as readable memory goes (b"" if none)."""
        found = self._within(address, False)
        if found is None or length <= 0:
            return b""
        return self.read(address, min(length, found[2] - address))

    def poke(self, address: int, data: bytes) -> str | None:
        """Write as the memory map allows; None, or why not."""
        found = self._within(address, True)
        if found is None or address + len(data) > found[2]:
            where = self._within(address, False)
            return f"0x{address:08x}: {'read-only ' + where[0] if where else 'outside every writable region'}"
        self.write(address, data)
        return None

    def watchable(self, address: int, length: int) -> bool:
        """Watchpoints cover the data buffer, the mailbox and the LDS window."""
        found = self._within(address, True)
        return found is not None and address + length <= found[2] and length > 0


class Target:
    """The unit as a debugger sees it: boot, then `launches` launches of one record. Each
    time the firmware sleeps in wfi the debugger gets a stop; resuming pushes the next
    launch (or ends the session when none is left)."""

    def __init__(self, image, gst: bytes, record: bytes, launches: int = 1, profile="cv32e40p",
                 budget: int = DEFAULT_BUDGET):
        self.soc = DebugSoc(image, gst, profile, budget)
        self.timer = self.soc.timer
        self.image, self.record, self.launches = image, record, launches
        self.pushed = 0            # launches pushed so far
        self.steps: list[tuple[str, Step]] = []  # (boot / launch N, counts) of the steps that ended
        self.state = "running"     # running (a step under way or about to start), asleep, exited, faulted
        self.fault: faults.Fault | None = None

    @property
    def step_name(self) -> str:
        return f"launch {self.pushed}" if self.pushed else "boot"

    def push_launch(self):
        self.soc.ring(self.record)
        self.pushed += 1
        self.state = "running"

    def resume(self, step: bool = False) -> Stop:
        if self.state == "asleep":
            if self.pushed >= self.launches:
                self.state = "exited"
            else:
                self.push_launch()
        if self.state == "exited":
            return Stop("exit", self.soc.pc, 0)
        if self.state == "faulted":
            return Stop("exit", self.soc.pc, self.fault and signal_of(self.fault), fault=self.fault)
        stop = self.soc.resume(step)
        if stop.kind == "sleep":
            self.steps.append((self.step_name, stop.step))
            self.state = "asleep"
        elif stop.kind == "fault":
            self.state, self.fault = "faulted", stop.fault
        return stop

    def run_boot(self) -> Stop:
        """Boot without stopping (for a session that starts at the launch), then push it."""
        stop = self.resume()
        if stop.kind == "sleep" and self.launches:
            self.push_launch()
        return stop

    def counts(self) -> str:
        """The counts so far, as `monitor counts` prints them."""
        name, prof = self.timer.p.name, self.soc
        lines = [f"{n}: {s.instructions:,} instructions, {s.cycles:,} cycles ({name})" for n, s in self.steps]
        if self.state == "running" and prof.in_step:
            lines.append(f"{self.step_name} so far: {prof.instructions:,} instructions, {prof.cycles:,} cycles")
        lines.append(f"since reset: {self.retired():,} instructions, {self.cycles():,} cycles")
        return "\n".join(lines) + "\n"

    def retired(self) -> int:
        s = self.soc
        return s.total_instructions + (s.instructions if s.in_step else 0)

    def cycles(self) -> int:
        s = self.soc
        return s.total_cycles + (s.cycles if s.in_step else 0)
