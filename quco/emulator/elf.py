"""Firmware images: load ELF segments (pyelftools) and map PCs to symbols."""
from __future__ import annotations

import bisect
import io
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from .faults import ElfError
from ..gst import abi
from ..util.userinput import UserFileError, read_bytes

LOADABLE = (abi.ROM, abi.DATA)
SHF_EXECINSTR = SH_FLAGS.SHF_EXECINSTR
MAX_ELF_BYTES = 16 << 20  # the image is about 100 KB with its debug information


@dataclass
class Image:
    path: Path
    entry: int
    segments: list[tuple[int, bytes]]  # (load address, bytes)
    symbols: list[tuple[int, int, str]]  # (start, size, name) of functions, sorted
    text_bytes: int
    addresses: dict  # every named symbol -> value (linker symbols such as __bss_end too)

    def function_at(self, pc: int) -> tuple[int, str] | None:
        """(start, name) of the code symbol containing pc (an unsized label covers 4 bytes)."""
        i = bisect.bisect_right(self.symbols, (pc, float("inf"), "")) - 1
        if i >= 0:
            start, size, name = self.symbols[i]
            if pc < start + max(size, 4):
                return start, name
        return None

    def symbolize(self, pc: int) -> str:
        found = self.function_at(pc)
        return f"{found[1]}+0x{pc - found[0]:x}" if found else "??"


def _region_of(lo: int, hi: int):
    for r in LOADABLE:
        if r.base <= lo and hi <= r.base + r.size:
            return r
    return None


def load(path: str | Path) -> Image:
    path = Path(path)
    try:  # a regular file of bounded size: /dev/zero or a FIFO would never end
        f = io.BytesIO(read_bytes(path, MAX_ELF_BYTES, "firmware ELF image"))
    except UserFileError as e:
        raise ElfError(f"firmware: {e} (run make firmware, or name an image with --firmware or $QUCO_FIRMWARE)") from None
    with f:
        try:
            elf = ELFFile(f)
            if elf["e_machine"] != "EM_RISCV" or elf.elfclass != 32:
                raise ElfError(f"{path}: not a 32-bit RISC-V ELF ({elf['e_machine']}, ELF{elf.elfclass})")
            segments, text = [], 0
            for seg in elf.iter_segments():
                if seg["p_type"] != "PT_LOAD" or seg["p_memsz"] == 0:
                    continue
                for addr, size, what in ((seg["p_paddr"], seg["p_filesz"], "load"),
                                         (seg["p_vaddr"], seg["p_memsz"], "run")):
                    if size and _region_of(addr, addr + size) is None:
                        raise ElfError(f"{path}: segment {what} range 0x{addr:08x}..0x{addr + size:08x} "
                                       f"is outside ROM (0x{abi.ROM.base:08x}, {abi.ROM.size} B) and "
                                       f"DATA (0x{abi.DATA.base:08x}, {abi.DATA.size} B)")
                if seg["p_filesz"]:
                    segments.append((seg["p_paddr"], seg.data()))
                    if _region_of(seg["p_paddr"], seg["p_paddr"] + 1) is abi.ROM:
                        text += seg["p_filesz"]
            symbols, addresses = [], {}
            symtab = elf.get_section_by_name(".symtab")
            # code symbols only: LTO also leaves weak markers in the debug sections
            code = {i for i, sec in enumerate(elf.iter_sections()) if sec["sh_flags"] & SHF_EXECINSTR}
            if symtab is not None:
                for s in symtab.iter_symbols():
                    if s.name:
                        addresses[s.name] = s["st_value"]
                    if s["st_info"]["type"] in ("STT_FUNC", "STT_NOTYPE") and s.name and \
                            s["st_shndx"] in code and not s.name.startswith(("$", ".L")):
                        symbols.append((s["st_value"], s["st_size"], s.name))
            symbols.sort()
            return Image(path, elf["e_entry"], segments, symbols, text, addresses)
        except ELFError as e:
            raise ElfError(f"{path}: not a valid ELF file: {e}") from None
