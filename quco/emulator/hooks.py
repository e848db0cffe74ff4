"""The Unicorn hooks of the Soc: per-block instruction and cycle counting (plain, timed,
traced), split misaligned accesses, memory accesses per region, and the guard, invalid-access
and trap hooks that record a step's first fault and turn it into a typed exception.

`Hooks` is a base class of `Soc` (emulator/soc.py), not an object of its own: the hooks run
once per executed block and dominate emulation time, so they update the Soc's counters as
plain attributes, and `DebugSoc` (emulator/debug.py) overrides them. What they use of the Soc:

    uc, image, lds_bytes, budget, timer, counting, tracing, split_penalty, _read_pc()
    per step:   instructions, blocks, cycles, misaligned, trace, reads, writes, _fault,
                _edge (how the step reached the current block), _timed_block, _timed_lats
    caches:     _blocks (address -> (size, retired bytes)), _succ, _variants, _raw_hooks,
                and with the C hooks _fast (fastcount.Counter), _edges, _edge_ids

Timed counting walks a graph of edges: `_edge` is a tuple (cycles, instructions, successors,
previous node, node) for the block running now, a node being (address, retired size) or
(address, retired size, latencies of its divides and FDIVs), and `successors` maps the next block, as
address << 32 | translated size, to its edge. Each pair of blocks is scheduled once
(Timer.cost); after that an executed block costs one dictionary lookup and two additions.

When the C hooks are built (emulator/fastcount.py) the counting modes other than tracing
use them: the C block hook walks the same graph, each edge numbered (`_edge_ids`), through a
table Python fills the first time a pair occurs (`_on_new_pair`); divides and fdiv/fsqrt
(when the profile times them from their operands) by a C code hook on their addresses, which
reads their operands and moves the walk to the block's variant from a memo of (edge, site,
operands) that Python fills the first time (`_on_operand_timed_c`).
"""
from __future__ import annotations

from unicorn import (UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_INTR, UC_HOOK_MEM_FETCH_PROT, UC_HOOK_MEM_FETCH_UNMAPPED,
                     UC_HOOK_MEM_READ, UC_HOOK_MEM_READ_UNMAPPED, UC_HOOK_MEM_WRITE, UC_HOOK_MEM_WRITE_PROT,
                     UC_HOOK_MEM_WRITE_UNMAPPED, UC_MEM_FETCH_PROT, UC_MEM_FETCH_UNMAPPED, UC_MEM_WRITE,
                     UC_MEM_WRITE_PROT, UC_MEM_WRITE_UNMAPPED, UcError)
from unicorn.riscv_const import UC_RISCV_REG_F0, UC_RISCV_REG_X0
from unicorn.unicorn_py3 import unicorn as _binding
from unicorn.unicorn_py3.unicorn import HOOK_CODE_CFUNC, HOOK_MEM_ACCESS_CFUNC

from . import disasm, fastcount, faults, isa, timing
from .watchdog import watchdog
from ..gst import abi


class Traced(tuple):
    """One executed block of a traced step: (address, size, cycles), and in `lats` the
    latencies its operand-timed instructions ran with (divides, FDIV/FSQRT; () if none), so
    that the per-function split (host/profile.py) charges each stall to the instruction that
    waits, with the latency the block really had rather than the schedule's constant."""
    lats: tuple = ()

    def plus(self, cycles: int, lats: tuple | None = None) -> Traced:
        """The same block, `cycles` more (and `lats` if given)."""
        t = Traced((self[0], self[1], self[2] + cycles))
        t.lats = self.lats if lats is None else lats
        return t

_uc_reg_read = getattr(getattr(_binding, "uclib", None), "uc_reg_read", None)

PAGE = 4096
_CYCLES, _INSNS, _SUCC, _PREV, _NODE = range(5)  # the fields of an edge (module docstring)
EXECUTABLE = " and ".join(r.name for r in abi.REGIONS if "x" in r.perms)
COUNTED_REGIONS = (abi.ROM, abi.DATA, abi.GST_REGION)  # count_memory: accesses per region
TRAP_CAUSES = {0: "instruction address misaligned", 1: "instruction access fault", 2: "illegal instruction",
               3: "breakpoint", 4: "load address misaligned", 5: "load access fault",
               6: "store address misaligned", 7: "store access fault",
               # the core only has M-mode; Unicorn passes QEMU's raw cause 8 for an M-mode ecall
               8: "ecall from M-mode", 11: "ecall from M-mode"}


def pages(n: int) -> int:
    """Bytes Unicorn maps for a region of n bytes: whole pages, at least one."""
    return max(PAGE, (n + PAGE - 1) // PAGE * PAGE)


class Hooks:
    """The Soc's Unicorn hooks and its fault records (see the module docstring)."""

    # ---------------------------------------------------------------- installing
    def _install_fault_hooks(self):
        """Guard, invalid-access and trap hooks: each records the step's first fault."""
        uc = self.uc
        # Unicorn maps whole pages: fault on the part of a page past the region's real size.
        for r in abi.REGIONS:
            size = self.lds_bytes if r is abi.LDS else r.size
            end = r.base + pages(size)
            if r.base + size < end:  # from 3 bytes early: a misaligned word may straddle the end
                uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_guard, (r.name, r.base, size),
                            begin=r.base + size - 3, end=end - 1)
        uc.hook_add(UC_HOOK_MEM_READ_UNMAPPED | UC_HOOK_MEM_WRITE_UNMAPPED | UC_HOOK_MEM_FETCH_UNMAPPED
                    | UC_HOOK_MEM_WRITE_PROT | UC_HOOK_MEM_FETCH_PROT, self._on_invalid)
        uc.hook_add(UC_HOOK_INTR, self._on_trap)

    def _install_access_counting(self):
        """For count_memory: loads and stores per region (ROM, DATA, GST)."""
        for r in COUNTED_REGIONS:
            self.uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_access, r.name,
                             begin=r.base, end=r.base + r.size - 1)

    def _install_counting(self):
        """The per-block hook of the counting mode (quco.emulator.debug adds its own)."""
        if not self.counting:  # no per-block hook: no counts, and no instruction-set check either
            watchdog.watch(self)
            return
        lib = None if self.tracing else fastcount.load()
        if lib is not None:  # the C hooks: the walk of the edge graph and the split accesses
            self._fast = fastcount.Counter(lib, self.uc, self._on_new_pair, bool(self.split_penalty))
            self._edges, self._edge_ids = [], {}
            self._edge_id(self._start_edge)  # edge 0: a step's start
        elif self.tracing:
            self._add_block_hook(self._on_block_traced)
        elif self.timer is not None:
            self._add_block_hook(self._on_block_timed)
        else:
            self._add_block_hook(self._on_block)
        if self.split_penalty and lib is None:  # a profile that charges split accesses: check every access
            self._add_raw_hook(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, HOOK_MEM_ACCESS_CFUNC(self._on_data_access))
        if lib is not None and self._operand_timed:  # the C code hook and its memo, Python behind it
            self._fast.add_timed(lib, self.uc, self._operand_regs, self._on_operand_timed_c)
        elif lib is None:
            for address in self._operand_timed:  # a code hook on each operand-timed instruction only
                self._add_raw_hook(UC_HOOK_CODE, HOOK_CODE_CFUNC(self._on_operand_timed), address, address)

    def _operand_registers(self) -> dict:
        """address -> the Unicorn registers whose values the latency of the operand-timed
        instruction there depends on (timing.operand_registers)."""
        base = {"x": UC_RISCV_REG_X0, "f": UC_RISCV_REG_F0}
        return {address: tuple(base[kind] + n for kind, n in timing.operand_registers(w))
                for address, w in self._operand_timed.items()}

    def _operand_timed_sites(self) -> dict:
        """address -> word of every instruction in the image whose latency the profile takes
        from its operands (timing.operand_timed: div/rem, fdiv.s/fsqrt.s); code runs from ROM
        only, which the firmware cannot write."""
        if self.timer is None:
            return {}
        p = self.timer.p
        return {base + off: w for base, data in self.image.segments for off in range(0, len(data) - 3, 4)
                if timing.operand_timed(p, w := int.from_bytes(data[off:off + 4], "little"))}

    def _reg(self, reg: int) -> int:
        """A register, through the C API when the binding exposes it: the binding's reg_read
        spends twice as long in Python (the PC is read every step, operands at every divide)."""
        if _uc_reg_read is None:
            return self.uc.reg_read(reg)
        _uc_reg_read(self.uc._uch, reg, self._reg_ref)
        return self._reg_buf.value

    def _x(self, n: int) -> int:
        return self._reg(UC_RISCV_REG_X0 + n) & 0xFFFF_FFFF

    def _f(self, n: int) -> int:
        return self._reg(UC_RISCV_REG_F0 + n) & 0xFFFF_FFFF  # binary32 (NaN-boxed in 64)

    def _add_raw_hook(self, kind, fptr, begin=1, end=0):
        self._raw_hooks.append(fptr)  # keep the C function pointer alive
        self.uc._Uc__do_hook_add(kind, fptr, begin, end)

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

    # ---------------------------------------------------------------- counting
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

    def _new_edge(self, edge, address, size) -> tuple:
        """The edge from `edge`'s block to block (address, size): checked, scheduled and
        remembered among that block's successors."""
        real = self._retired(address, size)
        prev, node = edge[_NODE], (address, real)
        cycles = self.timer.cost(prev, address, real) if self.timer else 0  # the C hooks count without one too
        e = (cycles, real >> 2, self._succ.setdefault(node, {}), prev, node)
        edge[_SUCC][address << 32 | size] = e
        return e

    def _on_block_timed(self, _handle, address, size, _key):
        edge = self._edge
        e = edge[_SUCC].get(address << 32 | size)  # the hot path
        if e is None:
            e = self._new_edge(edge, address, size)
        self._edge = e
        self.cycles += e[_CYCLES]
        self.instructions += e[_INSNS]
        self.blocks += 1

    def _on_block_traced(self, _handle, address, size, _key):
        if self.timer is None:
            size = self._retired(address, size)
            c = insns = size >> 2
        else:
            edge = self._edge
            e = edge[_SUCC].get(address << 32 | size)
            if e is None:
                e = self._new_edge(edge, address, size)
            self._edge, c, insns, size = e, e[_CYCLES], e[_INSNS], e[_NODE][1]
        self.cycles += c
        self.trace.append(Traced((address, size, c)))
        self.instructions += insns
        self.blocks += 1

    def _on_operand_timed(self, _handle, address, _size, _key):
        """A divide or fdiv/fsqrt is about to run (a code hook on those only, the Python
        hooks'): its latency from its operands. Once the block's last such instruction has
        run, the block is charged as the variant with those latencies, and the next block
        follows that variant (its pending results)."""
        lat = timing.operand_cycles(self.timer.p, self._operand_timed[address], self._x, self._f)
        if self._timed_block != self.blocks:  # the first operand-timed instruction of this block execution
            self._timed_block, self._timed_lats = self.blocks, ()
        self._timed_lats += (lat,)
        e = self._edge
        v = self._variant(e, self._timed_lats)
        if v is e:
            return
        delta = v[_CYCLES] - e[_CYCLES]
        self._edge = v
        self.cycles += delta
        if self.tracing:
            self.trace[-1] = self.trace[-1].plus(delta, self._timed_lats)

    def _on_operand_timed_c(self, address):
        """The same for the C hooks, called by their code hook (_fastcount.c quco_on_timed)
        for what its memo does not answer: the first operand-timed instruction of a block
        execution from an edge and on operands not met before, and any later one of the same
        block execution. What the first did is entered in the memo: a launch that repeats
        another's divides and FDIVs (the same kernel again) runs them without Python."""
        fast = self._fast.c
        lat = timing.operand_cycles(self.timer.p, self._operand_timed[address], self._x, self._f)
        blocks, edge = fast.blocks, fast.edge
        if fast.timed_block != blocks:
            before = ()
        else:  # an earlier one of this block execution ran here, or in C (its latency kept there)
            before = self._timed_lats if self._timed_block == blocks else (fast.timed_lat,)
        self._timed_block, self._timed_lats, fast.timed_block = blocks, before + (lat,), blocks
        e = self._edges[edge]
        v = self._variant(e, self._timed_lats)
        nxt, delta = (edge, 0) if v is e else (self._edge_id(v), v[_CYCLES] - e[_CYCLES])
        fast.edge, fast.cycles = nxt, fast.cycles + delta
        if not before:
            ops = [self._reg(r) & 0xFFFF_FFFF for r in self._operand_regs[address]] + [0]  # as the C hook reads them
            self._fast.remember(edge, address, ops[0] << 32 | ops[1], nxt, delta, lat)

    def _variant(self, e, lats: tuple) -> tuple:
        """Edge e with its block's operand-timed instructions at latencies `lats`, once they
        all ran (else e)."""
        node = e[_NODE]
        if node is None or len(lats) < self.timer.timed(*node):
            return e
        variant = node + (lats,)
        v = self._variants.get((e[_PREV], variant))
        if v is None:
            v = self._variants[(e[_PREV], variant)] = (self.timer.cost(e[_PREV], node[0], node[1], lats), e[_INSNS],
                                                       self._succ.setdefault(variant, {}), e[_PREV], variant)
        return v

    # ---------------------------------------------------------------- the C hooks' walk
    def _edge_id(self, e) -> int:
        """The number of edge e in the C tables, entered the first time."""
        i = self._edge_ids.get(id(e))  # edges live as long as the Soc (in _succ, _variants)
        if i is None:
            i = self._edge_ids[id(e)] = self._fast.new_edge(e[_CYCLES], e[_INSNS])
            self._edges.append(e)
        return i

    def _on_new_pair(self, edge_id, address, size) -> int:
        """The C block hook meets a pair of blocks not in its table: the edge (made, and its
        block checked, the first time the pair occurs), entered in the table."""
        edge, key = self._edges[edge_id], address << 32 | size
        e = edge[_SUCC].get(key)
        if e is None:
            e = self._new_edge(edge, address, size)
        nxt = self._edge_id(e)
        self._fast.new_pair(edge_id, key, nxt)
        return nxt

    def _take_counts(self):
        """The step's counts from the C hooks."""
        cycles, self.instructions, self.blocks, self.misaligned = self._fast.take()
        self.cycles += cycles + self.misaligned * self.split_penalty

    def _on_data_access(self, _handle, _access, address, size, _value, _key):
        """CV32E40P carries out a misaligned access as two bus transactions, one cycle each,
        when it crosses a word boundary (a word not on a word boundary, a halfword at
        address 3 mod 4): Unicorn performs it, the timing model charges the extra cycle."""
        if (size == 4 and address & 3) or (size == 2 and address & 3 == 3):
            self.cycles += self.split_penalty
            self.misaligned += 1
            if self.tracing:
                self.trace[-1] = self.trace[-1].plus(self.split_penalty)

    def _on_access(self, uc, access, address, size, value, region):
        counts = self.writes if access == UC_MEM_WRITE else self.reads
        counts[region] = counts.get(region, 0) + 1

    # ---------------------------------------------------------------- faults
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
        window = next((r for r in abi.REGIONS if r.base <= address < r.base + pages(r.size)), None)
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

    def _fault_exception(self, stopped_at: int) -> faults.Fault:
        """The step's first fault, at its own PC if it recorded one."""
        cls, message, address, pc = self._fault
        pc = stopped_at if pc is None else pc
        return cls(message, pc, self.image.symbolize(pc), disasm.at(self.uc, pc), address)

    def _raise_fault(self, stopped_at: int):
        raise self._fault_exception(stopped_at)

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
