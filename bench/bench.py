"""Firmware size and reconfiguration cost: ROM and data bytes, and the retired
instructions of boot, a cold launch and a cached relaunch of every example kernel on
every GST preset. Prints figures; asserts nothing (tests do that)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from elftools.elf.elffile import ELFFile
from rich.console import Console
from rich.table import Table

from quco.gst import abi, tables
from quco.host import reference
from quco.host.device import Device, firmware_path
from quco.host.kernel import load_kernel

ROOT = Path(__file__).resolve().parent.parent


def sizes(path: Path) -> dict:
    with path.open("rb") as f:
        elf = ELFFile(f)
        sec = {s.name: s["sh_size"] for s in elf.iter_sections()}
    rom = sec.get(".text", 0) + sec.get(".data", 0)
    data = sec.get(".data", 0) + sec.get(".bss", 0)
    return {"rom": rom, "data": data, "stack_reserve": abi.STACK_RESERVE}


def main() -> int:
    con = Console()
    elf = firmware_path()
    s = sizes(elf)
    con.print(f"firmware {elf}: ROM {s['rom']} / {abi.ROM.size} B, data (.data+.bss) {s['data']} B "
              f"+ stack reserve {s['stack_reserve']} B of {abi.DATA.size} B; "
              f"config cache {abi.const('CACHE_ENTRIES')} entries")
    kernels = [load_kernel(p) for p in sorted((ROOT / "examples" / "kernels").glob("*.json"))]
    t = Table(title="retired instructions per step (cold = first launch, cached = identical relaunch)")
    for col in ("gpu", "kernel", "boot", "cold", "cached", "tile", "slots"):
        t.add_column(col, justify="left" if col in ("gpu", "kernel", "slots") else "right")
    launches, t0 = 0, time.perf_counter()
    for gpu in tables.preset_names():
        for k in kernels:
            dev = Device(gpu, elf)
            cold = dev.launch(k, check=True)
            cached = dev.launch(k, check=True)
            launches += 2
            t.add_row(gpu, k.name, f"{dev.boot_step.instructions:,}", f"{cold.instructions:,}",
                      f"{cached.instructions:,}", str(cold.tile), "/".join(str(q.slots) for q in cold.queues))
    emu_s = time.perf_counter() - t0
    con.print(t)
    t0 = time.perf_counter()
    for gpu in tables.preset_names():
        g = tables.load(gpu)
        for k in kernels:
            reference.configure(g, k.record())
    ref_s = time.perf_counter() - t0
    con.print(f"{launches} emulated launches (with device creation and boot) in {emu_s:.2f} s; "
              f"{len(kernels) * len(tables.preset_names())} reference configurations in {ref_s:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
