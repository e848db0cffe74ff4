"""Typed faults the emulator raises, each with the PC, the symbol, the address and the
disassembled instruction, so a firmware bug reads like a crash report, not a UcError."""
from __future__ import annotations


class EmulatorError(Exception):
    """Base class of everything the emulator raises."""


class ElfError(EmulatorError):
    """The firmware image cannot be loaded into this SoC."""


class Fault(EmulatorError):
    kind = "fault"

    def __init__(self, message: str, pc: int, symbol: str, insn: str, address: int | None = None):
        self.message, self.pc, self.symbol, self.insn, self.address = message, pc, symbol, insn, address
        where = f"pc=0x{pc:08x} <{symbol}>: {insn}"
        at = f" address=0x{address:08x}" if address is not None else ""
        super().__init__(f"{self.kind}: {message}{at} at {where}")


class UnmappedAccess(Fault):
    kind = "unmapped access"


class WriteProtected(Fault):
    kind = "write to read-only memory"


class ExecuteProtected(Fault):
    """An instruction fetch from a region the core cannot execute (DATA, GST, mailbox, LDS)."""
    kind = "instruction fetch from non-executable memory"


class OutOfBounds(Fault):
    kind = "access past the end of a region"


class IllegalInstruction(Fault):
    kind = "illegal instruction"


class Trap(Fault):
    kind = "trap"


class BudgetExceeded(Fault):
    kind = "instruction budget exceeded"


class FirmwareMisbehaved(EmulatorError):
    """The firmware slept again without a fault, but its answer breaks the launch protocol
    (gst/abi.py): no doorbell acknowledgement, a status outside the ABI, a generation that
    did not step by one, or a configuration whose magic or counts the ABI does not allow.
    The host reports it instead of believing it."""

    def __init__(self, step: str, what: str):
        self.step, self.what = step, what
        super().__init__(f"firmware misbehaved at {step}: {what}")
