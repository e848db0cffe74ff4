"""The QuCo unit as a Unicorn RV32 SoC: memory map with protections, firmware loading,
boot and launch steps with exact retired-instruction counts, typed faults.

Counting is per translated basic block (UC_HOOK_BLOCK): RV32IMF has no compressed
instructions, so a block of `size` bytes retires size/4 instructions when it runs to the
end, which every block does unless a fault stops it (then the step raises anyway).
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from pathlib import Path

from unicorn import (UC_ARCH_RISCV, UC_HOOK_BLOCK, UC_HOOK_INTR, UC_HOOK_MEM_FETCH_UNMAPPED,
                     UC_HOOK_MEM_READ, UC_HOOK_MEM_READ_UNMAPPED, UC_HOOK_MEM_WRITE,
                     UC_HOOK_MEM_WRITE_PROT, UC_HOOK_MEM_WRITE_UNMAPPED, UC_HOOK_MEM_FETCH_PROT,
                     UC_MEM_FETCH_PROT, UC_MEM_FETCH_UNMAPPED, UC_MEM_WRITE, UC_MEM_WRITE_PROT,
                     UC_MEM_WRITE_UNMAPPED, UC_MODE_RISCV32,
                     UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE, Uc, UcError)
from unicorn.riscv_const import UC_RISCV_REG_PC
from unicorn.unicorn_py3.unicorn import HOOK_CODE_CFUNC, HOOK_MEM_ACCESS_CFUNC
from unicorn.unicorn_py3 import unicorn as _binding

from quco.emulator import disasm, faults, isa, protocol, quirks, timing
from quco.emulator.elf import Image
from quco.emulator.watchdog import watchdog
from quco.gst import abi

PAGE = 4096
EXECUTABLE = " and ".join(r.name for r in abi.REGIONS if "x" in r.perms)
_uc_reg_read = getattr(getattr(_binding, "uclib", None), "uc_reg_read", None)
STOP_ADDRESS = 0xFFFF_FFF0  # never executed: emu_start runs until wfi or a fault
DEFAULT_BUDGET = 200_000    # instructions per step before the firmware counts as runaway
WALL_BUDGET = 2.0           # seconds per step in the uncounted mode (a step takes microseconds)
STACK_CANARY = b"\xa5\x5a\xc3\x3c"
TRAP_CAUSES = {0: "instruction address misaligned", 1: "instruction access fault", 2: "illegal instruction",
               3: "breakpoint", 4: "load address misaligned", 5: "load access fault",
               6: "store address misaligned", 7: "store access fault",
               # the core only has M-mode; Unicorn passes QEMU's raw cause 8 for an M-mode ecall
               8: "ecall from M-mode", 11: "ecall from M-mode"}


def _pages(n: int) -> int:
    return max(PAGE, (n + PAGE - 1) // PAGE * PAGE)


def _protection(perms: str) -> int:
    """Unicorn's protection bits for a Region's "rwx" subset."""
    return sum(bit for letter, bit in (("r", UC_PROT_READ), ("w", UC_PROT_WRITE), ("x", UC_PROT_EXEC))
               if letter in perms)


@dataclass
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


class Soc:
    def __init__(self, image: Image, gst: bytes, budget: int = DEFAULT_BUDGET,
                 profile: timing.Profile | str | Path | None = None, count_memory: bool = False,
                 trace: bool = False, count: bool = True, wall_budget: float = WALL_BUDGET):
        """`profile` (a Profile, or a built-in profile's name or a TOML file) adds modelled
        cycles: the Soc schedules its own blocks with it. count=False runs without any
        Python hook per block (the fastest mode): no instruction counts, and runaway code is
        stopped after `wall_budget` seconds of host time. Every other mode counts, and
        Unicorn's C-level instruction limit enforces the budget exactly (instructions per
        step)."""
        if len(gst) != abi.GST.size:
            raise ValueError(f"GST must be {abi.GST.size} bytes, got {len(gst)}")
        self.gst = abi.GST.unpack(gst)
        if profile is not None and not isinstance(profile, timing.Profile):
            profile = timing.load_profile(profile)
        timer = timing.Timer(profile, self.read) if profile is not None else None
        self.image, self.budget, self.wall_budget = image, budget, wall_budget
        self._deadline, self._timed_out = None, False
        self._pc_buf = ctypes.c_uint64(0)
        # the LDS the GST declares, within the window (an invalid GST still gets a SoC)
        lds_real = self.lds_bytes = min(self.gst["lds_bytes"], abi.LDS.size)
        uc = self.uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
        for r in abi.REGIONS:  # each region with the permissions the ABI declares for it
            uc.mem_map(r.base, _pages(lds_real if r is abi.LDS else r.size), _protection(r.perms))
        # Stack high-water mark: DATA starts out filled with a canary that only the stack
        # above .bss can overwrite; crt0 clears .bss itself.
        uc.mem_write(abi.DATA.base, STACK_CANARY * (abi.DATA.size // 4))
        for addr, data in image.segments:
            uc.mem_write(addr, data)
        uc.mem_write(abi.GST_REGION.base, gst)
        # Unicorn maps whole pages: fault on the part of a page past the region's real size.
        for r in abi.REGIONS:
            size = lds_real if r is abi.LDS else r.size
            end = r.base + _pages(size)
            if r.base + size < end:  # from 3 bytes early: a misaligned word may straddle the end
                uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_guard, (r.name, r.base, size),
                            begin=r.base + size - 3, end=end - 1)
        uc.hook_add(UC_HOOK_MEM_READ_UNMAPPED | UC_HOOK_MEM_WRITE_UNMAPPED | UC_HOOK_MEM_FETCH_UNMAPPED
                    | UC_HOOK_MEM_WRITE_PROT | UC_HOOK_MEM_FETCH_PROT, self._on_invalid)
        uc.hook_add(UC_HOOK_INTR, self._on_trap)
        self.minmax = quirks.MinMaxFix(uc, image.segments)
        self.timer, self.count_memory, self.tracing, self.counting = timer, count_memory, trace, count
        self.booted: protocol.Answer | None = None  # the boot's answer, once booted
        self.generation = self.launches = 0         # acknowledged by the firmware so far
        self._pair_cycles, self._raw_hooks, self._blocks = {}, [], {}
        self.split_penalty = timer.p.split_access if timer is not None else 0
        self._install_counting()
        if count_memory:
            for r in (abi.ROM, abi.DATA, abi.GST_REGION):
                uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_access, r.name,
                            begin=r.base, end=r.base + r.size - 1)
        self.pc = image.entry
        self.instructions = self.blocks = self.cycles = self.misaligned = 0
        self.woken = 0  # steps run so far: the first one starts at reset
        self.prev = None
        self.reads, self.writes, self.trace = {}, {}, []
        self._fault = None

    # ---------------------------------------------------------------- hooks
    def _install_counting(self):
        """The per-block hook of the counting mode (quco.emulator.debug adds its own)."""
        if not self.counting:  # no per-block hook: no counts, and no instruction-set check either
            watchdog.watch(self)
            return
        if self.tracing:
            self._add_block_hook(self._on_block_traced)
        elif self.timer is not None:
            self._add_block_hook(self._on_block_timed)
        else:
            self._add_block_hook(self._on_block)
        if self.split_penalty:  # a profile that charges split accesses: check every access
            self._add_raw_hook(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, HOOK_MEM_ACCESS_CFUNC(self._on_data_access))

    def _add_raw_hook(self, kind, fptr):
        self._raw_hooks.append(fptr)  # keep the C function pointer alive
        self.uc._Uc__do_hook_add(kind, fptr, 1, 0)

    def _add_block_hook(self, fn):
        """Register fn(handle, address, size, key) for every executed block.

        The binding's hook_add wraps a callback in two more Python frames (exception guard,
        argument adapter), which halves the launch rate; unicorn is pinned to 2.1.4, whose
        binding exposes the raw registration used here. The counting hooks cannot raise."""
        raw = getattr(self.uc, "_Uc__do_hook_add", None)
        if raw is None:  # another binding version: the documented, slower path
            self.uc.hook_add(UC_HOOK_BLOCK, lambda uc, a, s, d: fn(None, a, s, None))
            return
        self._add_raw_hook(UC_HOOK_BLOCK, HOOK_CODE_CFUNC(fn))

    # The budget is enforced by Unicorn itself (emu_start count=), so the per-block Python
    # hooks count, and check each block's instruction set the first time they see it; they
    # run once per executed block and dominate emulation time.
    def _check_block(self, address, size) -> tuple[int, tuple[int, str] | None]:
        """(bytes up to and including the block's first wfi, (address, what) of its first
        instruction outside RV32IMF or None)."""
        code = bytes(self.uc.mem_read(address, size))
        real = isa.until_wfi(code)
        bad = isa.scan(code[:real], address)[0]
        return real, (bad[0] if bad else None)

    def _retired(self, address, size) -> int:
        """Bytes of the block that really execute, checked once per block: up to its first
        wfi, and only RV32IMF (Unicorn's CPU would run RV32A/D/C code too)."""
        known = self._blocks.get(address)
        if known is not None and known[0] == size:
            return known[1]
        real, bad = self._check_block(address, size)
        if bad:
            at, what = bad
            self._set_fault(faults.IllegalInstruction, f"{what} (the core is RV32IMF)", None, at)
            self.uc.emu_stop()
            real = at - address
        self._blocks[address] = (size, real)
        return real

    def _on_block(self, _handle, address, size, _key):
        known = self._blocks.get(address)  # _retired() inlined: this is the hot path
        real = known[1] if known is not None and known[0] == size else self._retired(address, size)
        self.instructions += real >> 2
        self.blocks += 1

    def _block_cycles(self, address, size) -> int:
        # hot path: one dictionary lookup keyed by (previous block, this block)
        key = (self.prev, address, size)
        c = self._pair_cycles.get(key)
        if c is None:
            c = self._pair_cycles[key] = self.timer.cost(self.prev, address, size)
        self.prev = (address, size)
        return c

    def _on_block_timed(self, _handle, address, size, _key):
        size = self._retired(address, size)
        self.cycles += self._block_cycles(address, size)
        self.instructions += size >> 2
        self.blocks += 1

    def _on_block_traced(self, _handle, address, size, _key):
        size = self._retired(address, size)
        c = self._block_cycles(address, size) if self.timer else size >> 2
        self.cycles += c
        self.trace.append((address, size, c))
        self.instructions += size >> 2
        self.blocks += 1

    def _on_data_access(self, _handle, _access, address, size, _value, _key):
        """CV32E40P carries out a misaligned access as two bus transactions, one cycle each,
        when it crosses a word boundary (a word not on a word boundary, a halfword at
        address 3 mod 4): Unicorn performs it, the timing model charges the extra cycle."""
        if (size == 4 and address & 3) or (size == 2 and address & 3 == 3):
            self.cycles += self.split_penalty
            self.misaligned += 1
            if self.tracing:
                a, s, c = self.trace[-1]
                self.trace[-1] = (a, s, c + self.split_penalty)

    def _on_access(self, uc, access, address, size, value, region):
        counts = self.writes if access == UC_MEM_WRITE else self.reads
        counts[region] = counts.get(region, 0) + 1

    def _set_fault(self, cls, message, address, pc=None):
        """Keep the first fault of a step (pc None: the PC where emulation stopped)."""
        if self._fault is None:
            self._fault = (cls, message, address, pc)

    def _on_guard(self, uc, access, address, size, value, region):
        name, base, real = region
        if address + size <= base + real:  # ends inside the region: fine
            return
        verb = "write" if access == UC_MEM_WRITE else "read"
        self._set_fault(faults.OutOfBounds, f"{verb} of {size} B past {name} ({real} B at 0x{base:08x})", address)
        uc.emu_stop()

    def _on_invalid(self, uc, access, address, size, value, _):
        window = next((r for r in abi.REGIONS if r.base <= address < r.base + _pages(r.size)), None)
        if access in (UC_MEM_FETCH_PROT, UC_MEM_FETCH_UNMAPPED) and window is not None:
            # (Unicorn fetches 2 bytes first, for RVC: the size says nothing here)
            self._set_fault(faults.ExecuteProtected, f"instruction fetch from {window.name}: only "
                            f"{EXECUTABLE} is executable", address)
        elif access == UC_MEM_WRITE_PROT:
            self._set_fault(faults.WriteProtected, f"store of {size} B to {window.name if window else '?'}", address)
        elif window is abi.LDS:  # inside the LDS window, past the LDS the GST declares
            verb = "write" if access == UC_MEM_WRITE_UNMAPPED else "read"
            self._set_fault(faults.OutOfBounds, f"{verb} of {size} B past LDS ({self.lds_bytes} B at "
                            f"0x{abi.LDS.base:08x})", address)
        else:
            what = {UC_MEM_WRITE_UNMAPPED: f"store of {size} B", UC_MEM_FETCH_UNMAPPED: "instruction fetch"}
            self._set_fault(faults.UnmappedAccess, f"{what.get(access, f'load of {size} B')} outside every region",
                            address)
        return False

    def _on_trap(self, uc, intno, _):
        cause = TRAP_CAUSES.get(intno, f"exception {intno}")
        cls = faults.IllegalInstruction if intno == 2 else faults.Trap
        # Unicorn has already stepped past the instruction (unicorn-engine/unicorn#1990);
        # every RV32IMF instruction is 4 bytes
        self._set_fault(cls, cause, None, self._read_pc() - 4)
        uc.emu_stop()

    # ---------------------------------------------------------------- running
    def _fault_exception(self, stopped_at: int) -> faults.Fault:
        """The step's first fault, at its own PC if it recorded one."""
        cls, message, address, pc = self._fault
        pc = stopped_at if pc is None else pc
        return cls(message, pc, self.image.symbolize(pc), disasm.at(self.uc, pc), address)

    def _raise_fault(self, stopped_at: int):
        raise self._fault_exception(stopped_at)

    def _begin_step(self):
        self._fault = None
        self.instructions = self.blocks = self.misaligned = 0
        self.prev = None
        self.reads, self.writes, self.trace = {}, {}, []
        self.cycles = self._wake_cycles()

    def _fault_from(self, e: UcError) -> int:
        """Record the fault of a step that Unicorn ended with an error; returns the PC."""
        pc = self._read_pc()
        if self._fault is None:
            if int.from_bytes(self.uc.mem_read(pc, 4), "little") == isa.EBREAK:
                self._set_fault(faults.Trap, TRAP_CAUSES[3], None)  # Unicorn reports it as invalid
            else:
                cls = faults.IllegalInstruction if "INSN_INVALID" in str(e) or e.errno == 10 else faults.Trap
                self._set_fault(cls, str(e), None)
        return pc

    def run(self) -> Step:
        """Run from the saved PC until the firmware sleeps (wfi) again."""
        self._begin_step()
        try:
            if self.counting:  # Unicorn's own instruction limit (counted in C) stops runaway code
                self.uc.emu_start(self.pc, STOP_ADDRESS, count=self.budget)
                limit = f"{self.budget} instructions"
            else:
                self._timed_out = False
                self._deadline = time.monotonic() + self.wall_budget
                try:
                    self.uc.emu_start(self.pc, STOP_ADDRESS)
                finally:
                    self._deadline = None
                limit = f"{self.wall_budget:g} s (uncounted mode)"
            pc = self._read_pc()
            self.minmax.settle(pc)
            if not self._fault and (self._timed_out or pc not in self._wfi_exits()):
                self._set_fault(faults.BudgetExceeded, f"did not sleep within {limit}", None)
        except UcError as e:
            self._raise_fault(self._fault_from(e))
        if self._fault is not None:
            self._raise_fault(pc)
        return self._end_step(pc)

    def _end_step(self, pc: int) -> Step:
        """The step slept at pc: its counts."""
        self.pc = pc
        self.woken += 1
        if self.tracing and self.trace and self.timer:  # the wake-up belongs to the first block
            a, s, c = self.trace[0]
            self.trace[0] = (a, s, c + self._wake_cycles(self.woken - 1))
        reads = writes = None
        if self.count_memory:
            reads = {r.name: self.reads.get(r.name, 0) for r in (abi.ROM, abi.DATA, abi.GST_REGION)}
            reads["ROM"] += self.instructions  # one 32-bit fetch per instruction
            writes = {r.name: self.writes.get(r.name, 0) for r in (abi.ROM, abi.DATA, abi.GST_REGION)}
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
        """The PC, through the C API when the binding exposes it: the binding's reg_read
        spends twice as long in Python, a tenth of an uncounted launch."""
        if _uc_reg_read is None:
            return self.uc.reg_read(UC_RISCV_REG_PC)
        _uc_reg_read(self.uc._uch, UC_RISCV_REG_PC, ctypes.byref(self._pc_buf))
        return self._pc_buf.value

    def _wfi_exits(self) -> set:
        """PCs just after a wfi in the firmware image: where a clean step stops."""
        if not hasattr(self, "_wfi_pcs"):
            self._wfi_pcs = {addr + off + 4 for addr, data in self.image.segments
                             for off in range(0, len(data) - 3, 4)
                             if int.from_bytes(data[off:off + 4], "little") == isa.WFI}
        return self._wfi_pcs

    # ---------------------------------------------------------------- the unit's protocol
    def boot(self) -> Step:
        """Release reset: the firmware checks the GST and sleeps. step.answer is its boot
        status and detail."""
        if self.woken:
            raise RuntimeError("the Soc has booted already (make a new one to reset)")
        step = self.run()
        step.answer = self.booted = protocol.boot_answer(self)
        return step

    def ring(self, record: bytes) -> None:
        """The host's half of a launch (quco.emulator.protocol); the next step serves it."""
        protocol.ring(self, record)

    def launch(self, record: bytes) -> Step:
        """One launch through the mailbox: ring, run until the firmware sleeps, read its
        answer (mailbox, and the LDS configuration once) and hold it to the ABI. Raises
        FirmwareMisbehaved for an answer the ABI does not allow."""
        if self.booted is None:
            raise RuntimeError("boot() the Soc before a launch")
        self.ring(record)
        step = self.run()
        self.launches += 1
        step.answer = protocol.launch_answer(self, record, self.gst, self.booted, self.generation,
                                             f"launch {self.launches}")
        self.generation = step.answer.generation
        return step

    # ---------------------------------------------------------------- host side of the bus
    def read(self, address: int, size: int) -> bytes:
        return bytes(self.uc.mem_read(address, size))

    def write(self, address: int, data: bytes) -> None:
        self.uc.mem_write(address, bytes(data))

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
