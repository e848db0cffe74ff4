"""The QuCo core's instruction set: RV32IMF, Zicsr and the machine-mode system instructions.

Unicorn's RISC-V CPU executes RV32GC (A, D and compressed instructions too, and writes to
misa are ignored), so the Soc checks every translated block with `scan()` before it
counts it, and tests/test_rom_isa.py scans the whole ROM with it. Membership is decided by
capstone's mnemonic against the explicit lists below (pseudo-instructions included, as
capstone prints them); a word capstone cannot decode and any 16-bit parcel are problems too.
"""
from __future__ import annotations

from functools import lru_cache

from capstone import CS_ARCH_RISCV, CS_MODE_RISCV32, CS_MODE_RISCVC, Cs

RV32I = {"lui", "auipc", "jal", "jalr", "beq", "bne", "blt", "bge", "bltu", "bgeu",
         "lb", "lh", "lw", "lbu", "lhu", "sb", "sh", "sw",
         "addi", "slti", "sltiu", "xori", "ori", "andi", "slli", "srli", "srai",
         "add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and",
         "fence", "ecall", "ebreak"}
RV32I_PSEUDO = {"li", "mv", "nop", "not", "neg", "seqz", "snez", "sltz", "sgtz",
                "j", "jr", "ret", "beqz", "bnez", "blez", "bgez", "bltz", "bgtz"}
RV32M = {"mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"}
RV32F = {"flw", "fsw", "fmadd.s", "fmsub.s", "fnmsub.s", "fnmadd.s",
         "fadd.s", "fsub.s", "fmul.s", "fdiv.s", "fsqrt.s", "fsgnj.s", "fsgnjn.s", "fsgnjx.s",
         "fmin.s", "fmax.s", "fcvt.w.s", "fcvt.wu.s", "fcvt.s.w", "fcvt.s.wu",
         "fmv.x.w", "fmv.w.x", "feq.s", "flt.s", "fle.s", "fclass.s"}
RV32F_PSEUDO = {"fmv.s", "fabs.s", "fneg.s", "frcsr", "fscsr", "frrm", "fsrm", "fsrmi",
                "frflags", "fsflags", "fsflagsi"}
ZICSR = {"csrrw", "csrrs", "csrrc", "csrrwi", "csrrsi", "csrrci",
         "csrr", "csrw", "csrs", "csrc", "csrwi", "csrsi", "csrci",
         "rdcycle", "rdcycleh", "rdtime", "rdtimeh", "rdinstret", "rdinstreth"}
MACHINE = {"wfi", "mret"}
ALLOWED = RV32I | RV32I_PSEUDO | RV32M | RV32F | RV32F_PSEUDO | ZICSR | MACHINE

# Instructions a reader may expect on an RV32IMF core, with why this one does not have them
# (the Soc adds "(the core is RV32IMF)").
NOT_HERE = {"fence.i": "fence.i is Zifencei, not RV32IMF + Zicsr: the unit's code runs from ROM, which "
                       "no store can change, so there is no instruction stream to synchronise"}

WFI = 0x10500073
EBREAK = 0x00100073


@lru_cache(maxsize=None)
def _cs(compressed: bool) -> Cs:
    return Cs(CS_ARCH_RISCV, CS_MODE_RISCV32 | (CS_MODE_RISCVC if compressed else 0))


def scan(code: bytes, address: int) -> tuple[list[tuple[int, str]], int]:
    """([(address, what)], number of 32-bit instructions checked) for a run of code."""
    found, checked, off = [], 0, 0
    while off + 2 <= len(code):
        at = address + off
        if code[off] & 0b11 != 0b11:  # a 16-bit parcel: RVC
            insn = next(_cs(True).disasm(code[off:off + 2], at), None)
            text = f"{insn.mnemonic} {insn.op_str}".strip() if insn else f".half 0x{code[off:off + 2].hex()}"
            found.append((at, f"compressed instruction {text}"))
            off += 2
            continue
        word = code[off:off + 4]
        insn = next(_cs(False).disasm(word, at), None) if len(word) == 4 else None
        if insn is None:
            found.append((at, f"cannot decode 0x{int.from_bytes(word, 'little'):0{2 * len(word)}x}"))
        elif insn.mnemonic not in ALLOWED:
            found.append((at, NOT_HERE.get(insn.mnemonic)
                          or f"{insn.mnemonic} {insn.op_str} is not RV32IMF".replace("  ", " ")))
        checked += 1
        off += 4
    return found, checked


def until_wfi(code: bytes) -> int:
    """Bytes of `code` up to and including its first wfi (all of it if there is none):
    Unicorn does not end a translation block at wfi, but execution stops there."""
    for off in range(0, len(code) - 3, 4):
        if int.from_bytes(code[off:off + 4], "little") == WFI:
            return off + 4
    return len(code)
