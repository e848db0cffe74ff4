"""quco-emu: configure kernels on the emulated QuCo unit and inspect GST tables.

Exit codes: 0 success; 1 firmware and reference model disagree; 2 bad input (kernel or
GST file, usage); 3 the unit answered with an error status; 4 the emulator faulted;
5 the firmware image is missing or unloadable; 6 the firmware misbehaved (its answer
breaks the launch protocol: no acknowledgement, a status or count the ABI does not allow).
"""
from __future__ import annotations

import signal
import sys
import threading


def _quiet_exit(signum, frame):
    raise SystemExit(130)


# Ctrl-C while the modules below load (about a second: rich, numpy, unicorn, the model) exits
# 130 without a traceback, as it does once main() runs
_GUARD = threading.current_thread() is threading.main_thread() and \
    signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _GUARD:
    signal.signal(signal.SIGINT, _quiet_exit)

import argparse
import contextlib
import json
import os

from rich.console import Console
from rich.table import Table
from rich.text import Text

from quco import examples
from quco.emulator.faults import ElfError, Fault, FirmwareMisbehaved
from quco.gst import abi, tables
from quco.emulator.timing import ProfileError
from quco.host import atomic, cli_gdb, cli_gst, cli_paper, cli_perf, cli_run, profile, reference
from quco.host.device import QUCO_CLOCK_MHZ, Device, DeviceError, LaunchResult, result_from
from quco.host.kernel import KernelError, load_kernel, partition_problems
from quco.perfmodel.sweep import SweepError
from quco.gst.userinput import printable

if _GUARD:  # loaded: main() handles Ctrl-C from here on
    signal.signal(signal.SIGINT, signal.default_int_handler)

EXIT_MISMATCH, EXIT_INPUT, EXIT_STATUS, EXIT_FAULT, EXIT_FIRMWARE = 1, 2, 3, 4, 5
EXIT_FIRMWARE_MISBEHAVED = 6
DEFAULT_GPU = "r9-nano"
class _Console(Console):
    def on_broken_pipe(self) -> None:
        """rich's default exits 1 (the "disagree" code) with nothing said; main() ends a closed
        pipe (`quco-emu evaluate | head -1`) quietly with exit 0 instead."""
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


# markup=False, emoji=False: kernel, queue and GPU names are the user's text and are shown
# literally ("[b]" stays, ":100:" is no emoji); highlight=False: rich's highlighter regexes
# take quadratic time on long text
out = _Console(width=None if sys.stdout.isatty() else 100, markup=False, emoji=False, highlight=False)
err = _Console(stderr=True, width=None if sys.stderr.isatty() else 100, markup=False, emoji=False,
              highlight=False, soft_wrap=True)  # messages whole, for grep


def clock_mhz(text: str) -> float:
    """--clock: the QuCo clock in MHz, a finite number above 0 (argparse reports the rest)."""
    shown = printable(text if len(text) <= 40 else text[:37] + "...")
    try:
        if not text.isascii():  # float() reads "٧٠٠" as 700
            raise ValueError
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown!r} is not a number in digits 0-9; expected MHz above 0, "
                                         "at most 10000") from None
    if not (0 < v <= 10_000):  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{shown} is out of range; expected MHz above 0, at most 10000")
    return v


class UserError(Exception):
    def __init__(self, message: str, code: int = EXIT_INPUT):
        super().__init__(message)
        self.code = code


def checked_gst(spec: str, via: str = "") -> bytes:
    """A GST preset or file, held to the unit's boot rules (tables.load): a table the unit would
    refuse is a bad input file (exit 2), whether it comes from --gpu, a kernel's "gpu" or gst
    check. `via` says where the name came from, for the message."""
    try:
        return tables.load(spec)
    except tables.GstFileError as e:
        raise UserError(f"{via}: {e}" if via else str(e)) from None


def _target(args, kernel=None) -> tuple[str, bytes]:
    """The GPU a command runs on (--gpu, else the kernel file's "gpu", else r9-nano) and its
    GST; a kernel whose partition the GPU cannot give is refused here, before any launch."""
    if getattr(args, "gpu", None) is not None:  # `check` has no --gpu
        gpu, gst = printable(args.gpu), checked_gst(args.gpu, "--gpu")
    elif kernel is not None and kernel.gpu:
        gpu, gst = kernel.gpu, checked_gst(kernel.gpu, f"{printable(str(args.kernel))}: gpu")
    else:
        gpu, gst = DEFAULT_GPU, checked_gst(DEFAULT_GPU)
    if kernel is not None:
        checked_partition(kernel, gst, gpu, printable(str(args.kernel)))
    return gpu, gst


def checked_partition(kernel, gst: bytes, gpu: str, where: str) -> None:
    """A partition larger than the GPU is bad input (exit 2), the same message everywhere."""
    problems = partition_problems(kernel.active_cus, kernel.lds_bytes, tables.unpack(gst), gpu)
    if problems:
        raise UserError("\n".join(f"{where}: {p}" for p in problems))


def checked_profile(spec) -> None:
    """--profile: a timing profile whose instructions take time (see ZERO_ISSUE)."""
    if spec is None:
        return
    from quco.emulator.timing import CLASSES, OPTIONAL, load_profile
    p = load_profile(spec)  # ProfileError (exit 2) for a file that breaks the schema
    free = [c for c in (*CLASSES, *OPTIONAL) if p.issue.get(c, 1) < 1]  # in the file's documented order
    if free:
        where = printable(str(p.path or spec))
        raise UserError(f"{where}: issue.{free[0]}: 0 cycles"
                        f"{f' (and {len(free) - 1} more classes)' if len(free) > 1 else ''}; {ZERO_ISSUE}")


# A single-issue in-order core (QuCo's CV32E40P) issues at most one instruction per cycle, so
# every class occupies the pipeline for at least one cycle; a profile where one costs nothing
# would report cycles below the instruction count ("0 cycles = 0 ns" when all are 0).
ZERO_ISSUE = ("expected at least 1 cycle for every [issue] class: a single-issue core issues at most one "
              "instruction per cycle, so nothing retires in 0 cycles")


def _device(gpu: str, gst: bytes, firmware, **options) -> Device:
    dev = Device(gst, firmware, **options)
    if dev.boot_status != abi.Status.OK:  # a table the model accepts: the unit itself refuses it
        raise UserError(f"{gpu}: the unit rejected the GST at boot: {dev.boot_message}", EXIT_STATUS)
    return dev


def _write(path: str, data: str | bytes) -> None:
    """An output file, written atomically; a failure is a clear error and leaves the old file."""
    try:
        atomic.write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as e:
        named = str(path) in (e.strerror or "")  # atomic.write_bytes names the file already
        raise UserError(printable(e.strerror if named else f"{path}: cannot write: {e.strerror or e}")) from None


def queue_table(res: LaunchResult, title: str, names: list[str] | None = None) -> Table:
    t = Table(title=title)
    for col in ("#", "queue", "type", "elem", "length", "tile", "slots", "LDS offset", "bytes", "barriers"):
        t.add_column(col, justify="left" if col in ("queue", "type") else "right", no_wrap=True)
    for q in res.queues:
        name = names[q.index] if names and q.index < len(names) and names[q.index] else ""
        t.add_row(str(q.index), name, q.type, f"{q.elem_size} B", f"{q.length:,}", str(q.tile), str(q.slots),
                  f"{q.offset:,}", f"{q.block_bytes:,}",
                  f"{q.barrier_base}-{q.barrier_base + q.barrier_count - 1}")
    return t


def cmd_launch(args) -> int:
    atomic.check_target(args.model_trace)  # before any work: a target it cannot write is exit 2 now
    checked_profile(args.profile)
    kernel = load_kernel(args.kernel)
    gpu, gst = _target(args, kernel)
    if args.model or args.model_trace is not None:
        cli_perf.model_bound(kernel, tables.unpack(gst), printable(str(args.kernel)))
    if args.reference:
        r = reference.configure(gst, kernel.record())
        res = result_from(r.status, r.detail, r.lds, generation=1)
        boot = None
    else:
        profile = args.profile if args.profile is not None else ("cv32e40p" if args.cycles else None)
        dev = _device(gpu, gst, args.firmware, profile=profile, clock_mhz=args.clock, count_memory=args.cycles)
        res = dev.launch(kernel)
        boot = dev.boot_step.instructions
    model = cli_perf.model_launch(kernel, gpu, res, args.model_trace) if (args.model or args.model_trace) and res.ok else None
    if args.json:
        doc = {"kernel": kernel.name, "gpu": gpu, "engine": "reference" if args.reference else "firmware",
               "boot_instructions": boot, **res.as_dict()}
        if model is not None:
            doc["model"] = model
        print(json.dumps(doc, indent=2))
    elif res.ok:
        engine = "reference model" if args.reference else "firmware"
        out.print(queue_table(res, f"{kernel.name} on {gpu}: tile {res.tile} elements ({engine})",
                              kernel.queue_names))
        out.print(f"LDS: metadata {res.meta_bytes} B, queues end at {res.used_bytes:,} B; "
                  f"barriers {res.barriers_used}; generation {res.generation}")
        if boot is not None:
            out.print(f"retired instructions: launch {res.instructions:,} (boot {boot:,}, once)"
                      f"{'; cache hit' if res.cache_hit else ''}")
        if res.cost and res.cost.cycles is not None:
            c = res.cost
            energy = f", {c.energy_nj:.2f} nJ" if c.energy_nj is not None else ""
            out.print(f"modelled ({dev.profile.name}): {c.cycles:,} cycles = {c.ns:,.0f} ns at "
                      f"{args.clock:g} MHz{energy} (boot {dev.boot_cost.cycles:,} cycles)")
        if model is not None:
            line = (f"kernel on the model: {model['cycles']:,.0f} GPU cycles = {model['ns'] / 1000:,.1f} us at "
                    f"{model['clock_mhz']:g} MHz; {model['occupancy']} work-groups per CU at once, "
                    f"DRAM {model['dram_gbps']:,.1f} GB/s, compute {100 * model['compute_util']:.0f}%")
            if res.cost and res.cost.ns is not None:
                line += f"; reconfiguration = {100 * res.cost.ns / model['ns']:.3f}% of the kernel"
            out.print(line, markup=False, highlight=False)
            if args.model_trace:
                out.print(f"wrote {printable(args.model_trace)} (open in https://ui.perfetto.dev)", markup=False)
    if not res.ok:
        err.print(f"error: {kernel.name} on {gpu}: {res.message}")
        return EXIT_STATUS
    return 0


def cmd_profile(args) -> int:
    atomic.check_target(args.trace)
    checked_profile(args.profile)
    kernel = load_kernel(args.kernel)
    gpu, gst = _target(args, kernel)
    dev = _device(gpu, gst, args.firmware, profile=args.profile, clock_mhz=args.clock, trace=True)
    res = dev.launch(kernel, check=True)
    if args.cached:
        res = dev.launch(kernel, check=True)
    step = "cached relaunch" if args.cached else "cold launch"
    steps = profile.attribute(dev.image, dev.timer, res.cost.trace)
    rows = profile.by_function(steps)
    if args.trace is not None:  # written first: a trace that cannot be written leaves no half report
        _write(args.trace, json.dumps(profile.chrome_trace(steps, args.clock, f"QuCo {kernel.name} {step}")))
    total = max(res.cost.cycles, 1)
    t = Table(title=f"{kernel.name} on {gpu}: {step}, {res.cost.cycles:,} cycles "
                    f"({dev.profile.name}), {res.instructions:,} instructions",
              caption="self: while the function is innermost (inlined helpers count apart); "
                      "total: while it is on the stack")
    for col in ("function", "entries", "instructions", "self cycles", "% self", "total cycles", "% total"):
        t.add_column(col, justify="left" if col == "function" else "right")
    for r in rows:
        t.add_row(r.name, str(r.entries), f"{r.instructions:,}", f"{r.cycles:,}",
                  f"{100 * r.cycles / total:.1f}", f"{r.total_cycles:,}", f"{100 * r.total_cycles / total:.1f}")
    out.print(t)
    if args.trace is not None:
        out.print(f"wrote {printable(args.trace)} (open in https://ui.perfetto.dev)")
    return 0


def cmd_check(args) -> int:
    kernel = load_kernel(args.kernel)
    if kernel.gpu:  # the GPU the kernel names must exist and be a table the unit accepts
        _target(args, kernel)
    out.print(f"{printable(args.kernel)}: ok ({kernel.name}, {len(kernel.queues)} queues)")
    return 0


def cmd_diff(args) -> int:
    gpus = tables.preset_names() if args.gpu in (None, "all") else [args.gpu]
    kernels = [load_kernel(p) for p in (args.kernels or sorted(examples.KERNELS.glob("*.json")))]
    t = Table(title="firmware vs reference model")
    for col in ("gpu", "kernel", "status", "tile", "slots", "instructions", "agree"):
        t.add_column(col)
    bad = 0
    for gpu in gpus:
        dev = _device(gpu, checked_gst(gpu, "--gpu" if args.gpu else ""), args.firmware)
        for k in kernels:
            fw = dev.launch(k)
            ref = reference.configure(dev.gst, k.record(), fw.generation if fw.ok else 1)
            same = fw.status == ref.status and fw.detail == ref.detail and fw.lds == ref.lds
            bad += not same
            t.add_row(gpu, k.name, fw.status.name, str(fw.tile), "/".join(str(q.slots) for q in fw.queues),
                      f"{fw.instructions:,}", "yes" if same else Text("NO", style="red"))
    out.print(t)
    return EXIT_MISMATCH if bad else 0


def cmd_examples(args) -> int:
    bundled = examples.kernel_files() | examples.workload_files()
    unknown = [n for n in args.names if n not in bundled]
    if unknown:
        raise UserError(f"no bundled example {unknown[0]!r}; there are: {', '.join(bundled)}")
    for name in args.names or bundled:
        print(bundled[name])
    return 0


def cmd_explain(args) -> int:
    from quco.host import explain  # the model's step-by-step values, as tables
    kernel = load_kernel(args.kernel)
    gpu, gst = _target(args, kernel)
    return explain.render(out, err, gst, kernel, gpu)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="quco-emu", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("launch", help="configure a kernel.json on the emulated unit")
    p.add_argument("kernel")
    p.add_argument("--gpu", help=f"GST preset ({', '.join(tables.preset_names())}) or a .toml/.gst file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--firmware", help="firmware ELF (default $QUCO_FIRMWARE, else the installed quco.elf)")
    p.add_argument("--reference", action="store_true", help="use the Python reference model, no emulator")
    p.add_argument("--cycles", action="store_true",
                   help="model cycles, latency and energy (default profile cv32e40p)")
    p.add_argument("--profile", help="timing profile: cv32e40p, cv32e40p-worst, ipc1 or a TOML file (implies cycles)")
    p.add_argument("--clock", type=clock_mhz, default=QUCO_CLOCK_MHZ, help="QuCo clock in MHz (default 700)")
    p.add_argument("--model", action="store_true",
                   help="add the kernel's modelled run time with this configuration (quco.perfmodel)")
    p.add_argument("--model-trace", metavar="FILE", help="with --model: one CU's timeline as a Chrome trace")
    p.set_defaults(func=cmd_launch)
    p = sub.add_parser("profile", help="cycles and instructions per firmware function for one launch")
    p.add_argument("kernel")
    p.add_argument("--gpu")
    p.add_argument("--firmware")
    p.add_argument("--profile", default="cv32e40p", help="timing profile (default cv32e40p)")
    p.add_argument("--clock", type=clock_mhz, default=QUCO_CLOCK_MHZ)
    p.add_argument("--cached", action="store_true", help="profile an identical relaunch instead")
    p.add_argument("--trace", help="write a Chrome trace JSON (Perfetto) to this file")
    p.set_defaults(func=cmd_profile)
    p = sub.add_parser("check", help="validate a kernel.json without running it")
    p.add_argument("kernel")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("diff", help="compare firmware and reference model on kernels x GPUs")
    p.add_argument("kernels", nargs="*", help="kernel.json files (default the bundled examples/kernels/*.json)")
    p.add_argument("--gpu", help="one preset or file, or 'all' (default)")
    p.add_argument("--firmware")
    p.set_defaults(func=cmd_diff)
    p = sub.add_parser("examples", help="print the paths of the bundled kernel and workload files (all, or those named)")
    p.add_argument("names", nargs="*", help="e.g. matrix-matrix, mi100/matrix-matrix")
    p.set_defaults(func=cmd_examples)
    p = sub.add_parser("explain", help="each step of the pick with its intermediate values (reference model)")
    p.add_argument("kernel")
    p.add_argument("--gpu")
    p.set_defaults(func=cmd_explain)
    cli_gst.add_parsers(sub)
    cli_gdb.add_parsers(sub)
    cli_perf.add_parsers(sub)
    cli_run.add_parsers(sub)
    cli_paper.add_parsers(sub)
    return ap


# what each error of the layers below means for the exit code
ERRORS = ((KernelError, EXIT_INPUT), (tables.GstFileError, EXIT_INPUT), (ProfileError, EXIT_INPUT),
          (SweepError, EXIT_INPUT),  # a scheduler that cannot be reached, a table it cannot write
          (DeviceError, EXIT_STATUS), (ElfError, EXIT_FIRMWARE), (FirmwareMisbehaved, EXIT_FIRMWARE_MISBEHAVED))


def _elf(args) -> str:
    """The firmware ELF a command ran (--firmware, $QUCO_FIRMWARE or the installed one)."""
    from quco.host.device import firmware_path
    return str(firmware_path(getattr(args, "firmware", None)))


OUTPUT_OPTIONS = ("output", "trace", "model_trace", "out")  # every command's output-file options


def _run(args) -> int:
    to_stdout = any(atomic.is_stdout(getattr(args, name, None)) for name in OUTPUT_OPTIONS)
    if to_stdout:  # `-o /dev/stdout > t.gst`: the file alone on stdout, the report on stderr
        out.file = sys.stderr
    try:
        return _run_command(args)
    finally:
        if to_stdout:
            out.file = None  # rich: back to whatever sys.stdout is


def _run_command(args) -> int:
    try:
        return args.func(args)
    except UserError as e:
        code, text = e.code, f"error: {e}"
    except Fault as e:
        code, text = EXIT_FAULT, f"emulator fault in firmware {_elf(args)}: {e}"
    except FirmwareMisbehaved as e:
        code, text = EXIT_FIRMWARE_MISBEHAVED, f"error: {e} (firmware {_elf(args)})"
    except tuple(kind for kind, _ in ERRORS) as e:
        code, text = next(c for kind, c in ERRORS if isinstance(e, kind)), f"error: {e}"
    except BrokenPipeError:
        raise  # main() ends quietly
    except OSError as e:  # an output file or folder the commands above do not name themselves
        what = f"{e.filename}: " if e.filename else ""
        code, text = EXIT_INPUT, f"error: {what}{e.strerror or e}"
    err.print(printable(text, keep="\n"))  # the user's text, with control characters escaped
    return code


class Terminated(BaseException):
    """SIGTERM, raised where the program is so that `finally` blocks run (a sweep's process
    pool is shut down and its workers ended, not left running)."""


EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # the shell's codes for SIGINT and SIGTERM


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        code = _run(args)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here at the latest
        return code
    except BrokenPipeError:
        # the reader has gone (`--json | head`): stop quietly; stdout goes to /dev/null so the
        # interpreter's own flush at exit does not complain either
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C: a word, no traceback
        with contextlib.suppress(OSError, ValueError):
            print("interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Terminated:
        with contextlib.suppress(OSError, ValueError):
            print("terminated", file=sys.stderr, flush=True)
        return EXIT_TERMINATED
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    sys.exit(main())
