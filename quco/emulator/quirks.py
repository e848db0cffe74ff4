"""fmin.s/fmax.s as RISC-V defines them, where Unicorn 2.1.4 does not.

RISC-V (F extension 2.2 on, IEEE 754-2019 minimumNumber/maximumNumber): when exactly one
operand is a NaN the result is the other operand; when both are, the canonical NaN; a
signalling NaN input raises the invalid flag either way. Unicorn's softfloat follows the
older IEEE 754-2008 minNum for a signalling NaN and returns the canonical NaN instead (a
quiet NaN already gives the other operand). The flags it raises are right.

The Soc finds every fmin.s/fmax.s in the loaded image (code only runs from ROM, which the
firmware cannot write) and hooks each one and the instruction after it: before the
instruction runs, `before` works out the result from the operands when one of them is a
NaN; when the next instruction is reached, the destination register gets that result.
Nothing else is hooked, so a firmware without fmin/fmax pays nothing.
"""
from __future__ import annotations

from unicorn import UC_HOOK_CODE
from unicorn.riscv_const import UC_RISCV_REG_F0

CANONICAL_NAN = 0x7FC0_0000


def is_minmax(word: int) -> bool:
    """fmin.s (funct3 0) or fmax.s (funct3 1): OP-FP with funct7 0x14."""
    return word & 0x7F == 0x53 and word >> 25 == 0x14 and (word >> 12) & 7 in (0, 1)


def is_nan(bits: int) -> bool:
    return bits & 0x7F80_0000 == 0x7F80_0000 and bits & 0x007F_FFFF != 0


def minmax_nan(a: int, b: int) -> int | None:
    """The RISC-V result of fmin/fmax when an operand is a NaN (bits), else None."""
    if is_nan(a) and is_nan(b):
        return CANONICAL_NAN
    if is_nan(a):
        return b
    if is_nan(b):
        return a
    return None


class MinMaxFix:
    def __init__(self, uc, segments):
        self.uc, self.pending = uc, None  # (address of the next instruction, rd, bits)
        self.sites = {}
        for base, data in segments:
            for off in range(0, len(data) - 3, 4):
                word = int.from_bytes(data[off:off + 4], "little")
                if is_minmax(word):
                    self.sites[base + off] = word
        for address in self.sites:
            for at in (address, address + 4):
                uc.hook_add(UC_HOOK_CODE, self._on_code, begin=at, end=at)

    def _on_code(self, uc, address, _size, _data):
        if self.pending is not None:
            self.settle(address)
        word = self.sites.get(address)
        if word is None:
            return
        read = lambda r: uc.reg_read(UC_RISCV_REG_F0 + r) & 0xFFFF_FFFF  # noqa: E731
        fixed = minmax_nan(read((word >> 15) & 31), read((word >> 20) & 31))
        if fixed is not None:
            self.pending = (address + 4, (word >> 7) & 31, fixed)

    def settle(self, pc: int):
        """Write a pending result if execution is at the instruction after its fmin/fmax;
        else the fmin/fmax did not run (stopped before it) and will compute it again. The
        Soc calls it whenever it stops, so a step or a debugger stop right after an
        fmin/fmax leaves the corrected register."""
        if self.pending is not None:
            at, rd, bits = self.pending
            if pc == at:
                self.uc.reg_write(UC_RISCV_REG_F0 + rd, bits)
            self.pending = None
