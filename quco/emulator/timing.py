"""Cycle model of an in-order RV32IMF core, precomputed per basic block.

A profile (TOML, emulator/profiles/) gives the issue cycles of each instruction class,
result latencies that stall a dependent instruction (load-use, FDIV/FSQRT) and two hazard
switches. Each block is scheduled once, in order, with a register scoreboard; what is still
in flight at its end (a load feeding the next block, an FDIV) is carried to the next block
through a per-(previous, current) pair cost, also computed once. A conditional branch that
ends a block costs `branch_taken` instead of `branch` when the next block is not its
fall-through. Counting at run time is then one dictionary lookup per executed block.

A profile may make the integer divider's latency follow the divisor (`hazard.div_by_divisor`,
CV32E40P's serial divider): the emulator reads the divisor when a div/rem executes and the
block is scheduled again with that latency (a block variant keyed by its divide latencies).
`hazard.fdiv_by_operands` does the same for fdiv.s/fsqrt.s, whose result latency on
CV32E40P's FPU follows the operands (emulator/fdsu.py).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from . import fdsu
from ..util.schema import PRINTABLE, Checker, report
from ..util.userinput import UserFileError, printable, read_toml

PROFILE_DIR = Path(files(__package__) / "profiles")  # package data
CLASSES = ("alu", "load", "store", "branch", "branch_taken", "jal", "jalr", "mul", "mulh", "div",
           "fp_add", "fp_mul", "fp_fma", "fp_div", "fp_other", "csr", "csr_machine", "system")
# classes a profile may leave out, and the class they then cost like (profiles written
# before the class existed keep their meaning)
OPTIONAL = {"csr_fp_write": "csr"}
FP = 32  # FP registers are numbered 32..63 in the scoreboard
FP_CSRS = {0x001, 0x002, 0x003}  # fflags, frm, fcsr
MACHINE_CSRS = {0x300, 0x341, 0x305, 0x342, 0xB00, 0xB02, 0xB80, 0xB82, 0x320, 0x7B0, 0x7B1, 0x7B2, 0x7B3}


class ProfileError(Exception):
    pass


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    issue: dict
    result: dict
    jalr_operand: int
    fpu_busy: bool
    split_access: int = 0  # extra cycles of a load/store split in two (crosses a word boundary)
    fp_memory_waits: bool = True  # flw/fsw wait for an outstanding FDIV/FSQRT (with fpu_busy)
    wake_reset: int = 0      # cycles from reset release until the first instruction issues
    wake_interrupt: int = 0  # cycles from the wake-up interrupt (doorbell) until it issues
    div_by_divisor: bool = False  # div/rem latency from the divisor (div_cycles), issue.div its maximum
    fdiv_by_operands: bool = False  # fdiv/fsqrt result latency from the operands (fdsu.cycles)
    path: Path | None = None


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


MAX_PROFILE_BYTES = 64 * 1024  # a profile is about 3 KB
CYCLES = {"type": "integer", "minimum": 0, "maximum": 1000}
TEXT = {"type": "string", "maxLength": 1000}


def profile_schema() -> dict:
    """The JSON Schema a profile TOML document must satisfy (built from CLASSES, so the
    classes are listed once)."""
    classes = {c: CYCLES for c in CLASSES + tuple(OPTIONAL)}

    def table(props, required=()):
        return {"type": "object", "additionalProperties": False, "properties": props, "required": list(required)}
    return table({
        "name": {**TEXT, "minLength": 1, "maxLength": 64, "pattern": PRINTABLE},
        "description": TEXT,
        "issue": table(classes, CLASSES),
        "result": table(classes),
        "hazard": table({"jalr_operand": CYCLES, "split_access": CYCLES,
                         "fpu_busy_until_result": {"type": "boolean"}, "fp_load_store_wait": {"type": "boolean"},
                         "div_by_divisor": {"type": "boolean"}, "fdiv_by_operands": {"type": "boolean"}}),
        "wake": table({"reset": CYCLES, "interrupt": CYCLES}),
    }, ("issue",))


@functools.lru_cache(maxsize=1)
def _checker() -> Checker:
    return Checker(profile_schema())


# A single-issue in-order core (QuCo's CV32E40P) issues at most one instruction per cycle, so
# every class occupies the pipeline for at least one cycle; a profile where one costs nothing
# would report cycles below the instruction count ("0 cycles = 0 ns" when all are 0).
ZERO_ISSUE = ("expected at least 1 cycle for every [issue] class: a single-issue core issues at most one "
              "instruction per cycle, so nothing retires in 0 cycles")


def load_profile(spec: str | Path = "cv32e40p") -> Profile:
    """A built-in profile by name or a TOML file, checked against profile_schema();
    raises ProfileError naming the file, the table, the key, the value and what is allowed."""
    if str(spec) == "":
        raise ProfileError(f"no timing profile given (an empty name); expected one of {', '.join(profile_names())} "
                           "or a .toml file")
    path = PROFILE_DIR / f"{spec}.toml" if str(spec) in profile_names() else Path(spec)
    if not path.exists():
        raise ProfileError(f"{printable(str(spec))}: no such profile file and no such built-in profile "
                           f"({', '.join(profile_names())})")
    try:
        doc = read_toml(path, MAX_PROFILE_BYTES, "timing profile (.toml)")
    except UserFileError as e:
        raise ProfileError(str(e)) from None
    problems = _checker().problems(doc)
    if problems:
        raise ProfileError("\n".join(f"{printable(str(path))}: {msg}" for msg in report([m for _, m in problems])))
    issue, result, hazard, wake = doc["issue"], doc.get("result", {}), doc.get("hazard", {}), doc.get("wake", {})
    issue = {**{k: issue[fallback] for k, fallback in OPTIONAL.items()}, **issue}
    free = [c for c in (*CLASSES, *OPTIONAL) if issue.get(c, 1) < 1]   # in the file's documented order
    if free:
        raise ProfileError(f"{printable(str(path))}: issue.{free[0]}: 0 cycles"
                           f"{f' (and {len(free) - 1} more classes)' if len(free) > 1 else ''}; {ZERO_ISSUE}")
    return Profile(doc.get("name", path.stem), doc.get("description", ""), issue, dict(result),
                   hazard.get("jalr_operand", 0), hazard.get("fpu_busy_until_result", False),
                   hazard.get("split_access", 0), hazard.get("fp_load_store_wait", True),
                   wake.get("reset", 0), wake.get("interrupt", 0), hazard.get("div_by_divisor", False),
                   hazard.get("fdiv_by_operands", False), path=path)


def is_div(word: int) -> bool:
    """div, divu, rem, remu (RV32M, funct3 4..7)."""
    return word & 0x7F == 0x33 and word >> 25 == 1 and (word >> 12) & 7 >= 4


def div_cycles(maximum: int, word: int, divisor: int) -> int:
    """Cycles of a div/divu/rem/remu whose divisor (rs2) holds `divisor` (32-bit pattern), on
    CV32E40P's serial divider, `maximum` being its divide-by-zero case (35).

    The manual ("Pipeline Details", cycle counts: "Division 3..35 ... depends on the divider
    operand value (operand b), i.e. in the number of leading bits at 0 ... 3 when the divider
    has zero leading bits at 0 (e.g., 0x80000000) ... 35 when the divider is 0") and the RTL
    agree: rtl/cv32e40p_alu.sv loads the divider's counter with div_shift = the divisor's
    leading zeros (32 for 0), and rtl/cv32e40p_alu_div.sv takes one IDLE, div_shift + 1 DIVIDE
    and one FINISH cycle, so 3 + leading zeros. For a signed divide by a negative divisor the
    RTL counts the leading zeros of its negation, less one (6-bit counter): 2 + clz(-b), and
    66 for -2^31 (a corner the manual's range does not mention)."""
    base = maximum - 32
    negative = divisor & 0x8000_0000 and not (word >> 12) & 1  # div, rem: funct3 4, 6
    if negative:
        return base + (32 - ((-divisor) & 0xFFFF_FFFF).bit_length() - 1) % 64
    return base + 32 - divisor.bit_length()


def operand_timed(p: Profile, word: int) -> bool:
    """Whether the profile takes this instruction's latency from its operands at run time:
    div/rem under div_by_divisor, fdiv.s/fsqrt.s under fdiv_by_operands."""
    return (p.div_by_divisor and is_div(word)) or (p.fdiv_by_operands and fdsu.is_fdiv_or_fsqrt(word))


@functools.cache  # a handful of words per image; operand_cycles runs per divide and FDIV
def operand_registers(word: int) -> tuple[tuple[str, int], ...]:
    """The registers an operand-timed instruction's latency reads, ("x" or "f", number): a
    divide's divisor, an fdiv's two operands, an fsqrt's one. operand_cycles reads these, and
    the C hooks' memo (emulator/hooks.py) keys on their values."""
    rs1, rs2 = word >> 15 & 31, word >> 20 & 31
    if is_div(word):
        return (("x", rs2),)
    if word >> 25 == 0x2C:  # fsqrt.s
        return (("f", rs1),)
    return (("f", rs1), ("f", rs2))


def operand_cycles(p: Profile, word: int, x, f) -> int:
    """The latency of an operand-timed instruction (operand_timed) from its operands, read
    through x(n) and f(n) (integer and FP register n as 32-bit patterns): a divide's issue
    cycles, an fdiv/fsqrt's result latency."""
    regs = operand_registers(word)
    kind, first = regs[0]
    if kind == "x":  # a divide: its divisor
        return div_cycles(p.issue["div"], word, x(first))
    return fdsu.cycles(word, f(first), f(regs[-1][1]))  # fsqrt's one operand twice: fdsu ignores b


@dataclass
class Insn:
    cls: str
    dst: int | None
    srcs: tuple[int, ...]
    fpu: bool = False
    kind: str = ""  # "branch", "call", "ret", "jump" for block ends


def decode(word: int) -> Insn:
    """Class and register operands of one RV32IMF instruction (x0 never carries a dependency)."""
    op, rd, f3 = word & 0x7F, (word >> 7) & 31, (word >> 12) & 7
    rs1, rs2, rs3, f7 = (word >> 15) & 31, (word >> 20) & 31, (word >> 27) & 31, word >> 25

    def x(*regs):
        return tuple(r for r in regs if r)

    if op in (0x37, 0x17):
        return Insn("alu", rd or None, ())
    if op == 0x6F:
        return Insn("jal", rd or None, (), kind="call" if rd == 1 else "jump")
    if op == 0x67:
        kind = "call" if rd == 1 else ("ret" if rd == 0 and rs1 == 1 else "jump")
        return Insn("jalr", rd or None, x(rs1), kind=kind)
    if op == 0x63:
        return Insn("branch", None, x(rs1, rs2), kind="branch")
    if op == 0x03:
        return Insn("load", rd or None, x(rs1))
    if op == 0x23:
        return Insn("store", None, x(rs1, rs2))
    if op == 0x13:
        return Insn("alu", rd or None, x(rs1))
    if op == 0x33:
        cls = "alu" if f7 != 1 else ("mul" if f3 == 0 else "mulh" if f3 < 4 else "div")
        return Insn(cls, rd or None, x(rs1, rs2))
    if op == 0x73:
        if f3 == 0:
            return Insn("system", None, ())
        csr = word >> 20
        writes = f3 in (1, 5) or rs1 != 0  # csrrw[i] always; csrrs/c[i] unless x0 / uimm 0
        cls = "csr_machine" if csr in MACHINE_CSRS else "csr_fp_write" if csr in FP_CSRS and writes else "csr"
        return Insn(cls, rd or None, x(rs1) if f3 < 4 else ())
    if op == 0x07:
        return Insn("load", FP + rd, x(rs1), fpu=True)
    if op == 0x27:
        return Insn("store", None, x(rs1) + (FP + rs2,), fpu=True)
    if op in (0x43, 0x47, 0x4B, 0x4F):
        return Insn("fp_fma", FP + rd, (FP + rs1, FP + rs2, FP + rs3), fpu=True)
    if op == 0x53:
        fsrc = (FP + rs1, FP + rs2)
        if f7 in (0x00, 0x04):
            return Insn("fp_add", FP + rd, fsrc, fpu=True)
        if f7 == 0x08:
            return Insn("fp_mul", FP + rd, fsrc, fpu=True)
        if f7 in (0x0C, 0x2C):
            return Insn("fp_div", FP + rd, fsrc if f7 == 0x0C else (FP + rs1,), fpu=True)
        if f7 in (0x10, 0x14):
            return Insn("fp_other", FP + rd, fsrc, fpu=True)
        if f7 == 0x50:  # compare: FP sources, integer result
            return Insn("fp_other", rd or None, fsrc, fpu=True)
        if f7 in (0x60, 0x70):  # fcvt.w[u].s, fmv.x.w, fclass: FP source, integer result
            return Insn("fp_other", rd or None, (FP + rs1,), fpu=True)
        if f7 in (0x68, 0x78):  # fcvt.s.w[u], fmv.w.x: integer source, FP result
            return Insn("fp_other", FP + rd, x(rs1), fpu=True)
    return Insn("alu", None, ())  # not RV32IMF: the emulator faults on it before it counts


@dataclass
class BlockTiming:
    cycles: int                  # from an idle pipeline, last branch not taken
    pending: dict                # register -> cycles after the block end until ready
    fpu_pending: int             # cycles after the block end until the FPU is free
    insns: list = field(repr=False, default_factory=list)
    end_kind: str = ""
    fallthrough: int = 0


class Timer:
    """Schedules blocks under a profile and caches their costs."""

    def __init__(self, profile: Profile, fetch):
        self.p, self.fetch = profile, fetch  # fetch(address, size) -> bytes
        self.blocks: dict[tuple[int, int], BlockTiming] = {}
        self.pairs: dict[tuple, int] = {}
        self._timed: dict[tuple[int, int], int] = {}

    def _schedule(self, insns, ready0: dict, fpu0: int, steps: list | None = None, lat: tuple = ()):
        """Cycles of insns from state (ready0, fpu0); `steps` receives the time after each;
        `lat` gives, in order, the latencies of the block's operand-timed instructions
        (operand_timed: a divide's issue cycles, an fdiv/fsqrt's result latency; the
        profile's when empty)."""
        p, issue, result, t = self.p, self.p.issue, self.p.result, 0
        fp_div = result.get("fp_div", issue["fp_div"])
        ready, last_dst, fpu_free, timed = dict(ready0), None, fpu0, iter(lat)
        for ins in insns:
            start = t
            for r in ins.srcs:
                start = max(start, ready.get(r, 0))
                if ins.cls == "jalr" and r == last_dst:  # jumps resolve in ID: no forwarding
                    start = max(start, ready[r] + self.p.jalr_operand)
            if ins.fpu and self.p.fpu_busy and (self.p.fp_memory_waits or ins.cls not in ("load", "store")):
                start = max(start, fpu_free)
            t = start + (next(timed, issue["div"]) if ins.cls == "div" and p.div_by_divisor else issue[ins.cls])
            if ins.dst is not None:
                # results are forwarded to the next instruction unless the profile says otherwise
                ready[ins.dst] = start + result.get(ins.cls, issue[ins.cls])
                if ins.cls == "jalr" or ins.cls == "jal":
                    ready[ins.dst] = t
            if ins.cls == "fp_div":
                fpu_free = start + (next(timed, fp_div) if p.fdiv_by_operands else fp_div)
                ready[ins.dst] = fpu_free
            last_dst = ins.dst
            if steps is not None:
                steps.append(t)
        pending = {r: c - t for r, c in ready.items() if c - t > 0}
        return t, pending, max(fpu_free - t, 0)

    def block(self, address: int, size: int, lat: tuple = ()) -> BlockTiming:
        """The block's schedule; `lat`: the latencies of its operand-timed instructions (a variant)."""
        key = (address, size, lat)
        bt = self.blocks.get(key)
        if bt is None:
            if lat:
                insns = self.block(address, size).insns
            else:
                code = self.fetch(address, size)
                insns = [decode(int.from_bytes(code[i:i + 4], "little")) for i in range(0, size - 3, 4)]
            cycles, pending, fpu = self._schedule(insns, {}, 0, lat=lat)
            bt = BlockTiming(cycles, pending, fpu, insns, insns[-1].kind if insns else "", address + size)
            self.blocks[key] = bt
        return bt

    def timed(self, address: int, size: int) -> int:
        """How many operand-timed instructions (operand_timed) the block has."""
        n = self._timed.get((address, size))
        if n is None:
            flags = {"div": self.p.div_by_divisor, "fp_div": self.p.fdiv_by_operands}
            n = self._timed[(address, size)] = sum(flags.get(ins.cls, False) for ins in self.block(address, size).insns)
        return n

    def cost(self, prev: tuple | None, address: int, size: int, lat: tuple = ()) -> int:
        """Cycles of block (address, size) (with operand-timed latencies `lat`) when it follows
        block `prev`: (address, size) or (address, size, its latencies)."""
        key = (prev, address, size, lat)
        c = self.pairs.get(key)
        if c is None:
            bt = self.block(address, size, lat)
            c = bt.cycles
            if prev is not None:
                pb = self.block(*prev)
                if pb.pending or pb.fpu_pending:
                    c = self._schedule(bt.insns, pb.pending, pb.fpu_pending, lat=lat)[0]
                if pb.end_kind == "branch" and address != pb.fallthrough:
                    c += self.p.issue["branch_taken"] - self.p.issue["branch"]
            self.pairs[key] = c
        return c

    def split(self, prev: tuple | None, address: int, size: int, lat: tuple = ()) -> list[int]:
        """cost(prev, address, size, lat) per instruction: each instruction's issue plus the
        stalls it waits for; a taken-branch refetch counts against the first one."""
        bt, ready, fpu, steps = self.block(address, size, lat), {}, 0, []
        if prev is not None:
            pb = self.block(*prev)
            ready, fpu = pb.pending, pb.fpu_pending
        self._schedule(bt.insns, ready, fpu, steps, lat=lat)
        out = [b - a for a, b in zip([0] + steps[:-1], steps)]
        if out:
            out[0] += self.cost(prev, address, size, lat) - steps[-1]
        return out
