"""quco-emu gdb: the firmware under GDB, one kernel's boot and launches served over the
remote protocol (emulator/gdbstub.py). cli/main.py registers this command and maps errors
to exit codes.
"""
from __future__ import annotations

import ipaddress
import shutil
import sys

from . import common
from ..util.userinput import printable, whole_number
from ..kernel.format import load_kernel

MAX_LAUNCHES = 10_000  # a session a person steps through; each launch is pushed when the last ends


def _gdb_address(args) -> tuple[str, int]:
    """(host, port) from --port [HOST:]PORT and --listen; loopback unless --listen names it."""
    fail = common.UserError
    host, _, number = str(args.port).rpartition(":")
    host = host.strip("[]") or args.listen or "127.0.0.1"
    try:
        port = whole_number(number, 0, 65535, "port")
    except ValueError:
        shown = printable(args.port if len(args.port) <= 60 else args.port[:57] + "...")
        raise fail(f"--port {shown}: expected a port number 0..65535 in digits 0-9 (0: any free port), "
                   "as PORT or HOST:PORT") from None
    try:
        ip = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        raise fail(f"{printable(host)}: not a numeric IP address (for example 127.0.0.1)") from None
    if not ip.is_loopback and host != args.listen:
        raise fail(f"{host} is not a loopback address. The GDB stub has no authentication: whoever "
                   "connects reads and writes the unit's memory and registers, so it serves 127.0.0.1 "
                   f"only, unless --listen {host} asks for that address on purpose")
    return str(ip), port


def cmd_gdb(args) -> int:
    """Serve the GDB remote protocol for one kernel's boot and launches (emulator/gdbstub.py)."""
    from ..emulator import elf, gdbstub
    from ..emulator.debug import Target
    from ..host.device import firmware_path
    kernel = load_kernel(args.kernel)
    gpu, gst = common.target(args, kernel)
    host, port = _gdb_address(args)
    common.checked_profile(args.profile)
    try:
        launches = whole_number(str(args.launches), 1, MAX_LAUNCHES, "--launches")
    except ValueError as e:
        raise common.UserError(str(e)) from None
    elf_path = firmware_path(args.firmware)
    target = Target(elf.load(elf_path), gst, kernel.record(), launches, args.profile)
    where = f"reset (pc 0x{target.soc.pc:08x} <{target.image.symbolize(target.soc.pc)}>)"
    if args.at == "launch":
        stop = target.run_boot()
        if stop.kind == "fault":
            raise stop.fault
        where = f"the first instruction of launch 1 (pc 0x{stop.pc:08x}), after boot"
    try:
        sock = gdbstub.listen(host, port)
    except OSError as e:
        raise common.UserError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    port = sock.getsockname()[1]
    gdb = next((g for g in ("gdb-multiarch", "riscv64-unknown-elf-gdb") if shutil.which(g)), "gdb-multiarch")
    print(f"QuCo GDB stub on {host}:{port}: {kernel.name} on {gpu}, {launches} launch(es), profile "
          f"{target.timer.p.name}; stopped at {where}\nattach with:\n"
          f"  {gdb} {elf_path} -ex 'target remote {host}:{port}'", flush=True)
    if host != "127.0.0.1" and not host.startswith("127."):
        print(f"warning: serving on {host}: anyone who can reach it controls the unit", file=sys.stderr, flush=True)

    def log(text):
        print(text, file=sys.stderr, flush=True)
    try:
        end = gdbstub.serve(target, sock, log)
    except KeyboardInterrupt:
        end = "interrupted"
    print(f"session ended ({end}):\n{target.counts()}", end="", flush=True)
    return common.EXIT_FAULT if target.fault else 0


def add_parsers(sub) -> None:
    p = sub.add_parser("gdb", help="debug the firmware with GDB (remote protocol on 127.0.0.1)")
    p.add_argument("kernel", help="kernel.json whose launch record the firmware configures")
    p.add_argument("--gpu")
    p.add_argument("--firmware")
    p.add_argument("--port", default="1234", help="[HOST:]PORT to listen on (default 1234 on 127.0.0.1; 0: any free)")
    p.add_argument("--listen", metavar="ADDRESS", help="allow this non-loopback address (no authentication!)")
    p.add_argument("--at", choices=("reset", "launch"), default="reset",
                   help="stop first at reset (default) or at the first launch's first instruction")
    p.add_argument("--launches", default="1",
                   help=f"launches of the record to push (default 1, at most {MAX_LAUNCHES:,})")
    p.add_argument("--profile", default="cv32e40p", help="timing profile for the cycle counts")
    p.set_defaults(func=cmd_gdb)
