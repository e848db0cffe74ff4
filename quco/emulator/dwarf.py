"""Source functions of firmware code, inlined ones included, from the ELF's DWARF.

The firmware is built with link-time optimisation, so most of it is inlined into main and
ELF symbols alone would attribute nearly everything to main. DWARF still records every
inlined copy (DW_TAG_inlined_subroutine with its address ranges); `InlineMap` turns that
into, for each code address, the chain of source functions from the physical function
outwards-in, e.g. ("main", "cold_launch", "plan", "fits").
"""
from __future__ import annotations

from pathlib import Path

from elftools.dwarf.ranges import BaseAddressEntry
from elftools.elf.elffile import ELFFile

_TAGS = ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine")


def _name(die) -> str:
    """A DIE's name, following abstract origins and specifications."""
    for _ in range(8):
        if "DW_AT_name" in die.attributes:
            return die.attributes["DW_AT_name"].value.decode(errors="replace")
        for ref in ("DW_AT_abstract_origin", "DW_AT_specification"):
            if ref in die.attributes:
                die = die.get_DIE_from_attribute(ref)
                break
        else:
            break
    return "??"


def _ranges(die, cu, range_lists) -> list[tuple[int, int]]:
    attrs = die.attributes
    if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
        lo, hi = attrs["DW_AT_low_pc"].value, attrs["DW_AT_high_pc"]
        return [(lo, hi.value if hi.form == "DW_FORM_addr" else lo + hi.value)]
    if "DW_AT_ranges" in attrs and range_lists is not None:
        top = cu.get_top_DIE().attributes
        base = top["DW_AT_low_pc"].value if "DW_AT_low_pc" in top else 0
        out = []
        for entry in range_lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu):
            if isinstance(entry, BaseAddressEntry):
                base = entry.base_address
            elif entry.is_absolute:
                out.append((entry.begin_offset, entry.end_offset))
            else:
                out.append((base + entry.begin_offset, base + entry.end_offset))
        return out
    return []


class InlineMap:
    """address -> tuple of source function names, outermost first (empty if unknown)."""

    def __init__(self, path: str | Path):
        self.chains: dict[int, tuple[str, ...]] = {}
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if not elf.has_dwarf_info():
                return
            dwarf = elf.get_dwarf_info()
            range_lists = dwarf.range_lists()
            spans = []  # (depth, lo, hi, name); deeper spans override shallower ones
            for cu in dwarf.iter_CUs():
                self._walk(cu.get_top_DIE(), cu, range_lists, 0, spans)
        for depth, lo, hi, name in sorted(spans, key=lambda s: s[0]):
            for address in range(lo & ~3, hi, 4):
                chain = self.chains.get(address, ())
                self.chains[address] = chain[:depth] + (name,)

    def _walk(self, die, cu, range_lists, depth, spans):
        for child in die.iter_children():
            d = depth
            if child.tag in _TAGS:
                for lo, hi in _ranges(child, cu, range_lists):
                    if hi > lo:
                        spans.append((depth, lo, hi, _name(child)))
                d = depth + 1
            if child.has_children:
                self._walk(child, cu, range_lists, d, spans)

    def chain(self, address: int) -> tuple[str, ...]:
        return self.chains.get(address, ())
