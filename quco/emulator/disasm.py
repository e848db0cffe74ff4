"""Disassembly with capstone, for fault reports and the ROM instruction-set scan."""
from __future__ import annotations

from functools import lru_cache

import capstone


@lru_cache(maxsize=1)
def _cs():
    cs = capstone.Cs(capstone.CS_ARCH_RISCV, capstone.CS_MODE_RISCV32)
    cs.detail = False
    return cs


def text(code: bytes, address: int) -> str:
    """One instruction as text, or its raw word if capstone does not know it."""
    for insn in _cs().disasm(code[:4], address):
        return f"{insn.mnemonic} {insn.op_str}".strip()
    return f".word 0x{int.from_bytes(code[:4], 'little'):08x}" if len(code) >= 4 else "<no bytes>"


def at(uc, pc: int) -> str:
    try:
        return text(bytes(uc.mem_read(pc, 4)), pc)
    except Exception:  # the PC itself may be unmapped
        return "<unmapped>"


def listing(code: bytes, address: int):
    """(address, mnemonic, operands) for every 4-byte instruction; unknown words as None."""
    for off in range(0, len(code) - 3, 4):
        word = code[off:off + 4]
        insn = next(_cs().disasm(word, address + off), None)
        yield address + off, (insn.mnemonic if insn else None), (insn.op_str if insn else "")
