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
import os

from . import gdb, gst, launch, paper, perf, run
from .common import (EXIT_FAULT, EXIT_FIRMWARE, EXIT_FIRMWARE_MISBEHAVED, EXIT_INPUT, EXIT_STATUS, UserError,
                     err, out)
from ..emulator.faults import ElfError, Fault, FirmwareMisbehaved
from ..emulator.timing import ProfileError
from ..gst import tables
from ..util.userinput import printable
from ..util import atomic
from ..host.device import DeviceError, firmware_path
from ..kernel.format import KernelError
from ..util.parallel import SweepError

if _GUARD:  # loaded: main() handles Ctrl-C from here on
    signal.signal(signal.SIGINT, signal.default_int_handler)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="quco-emu", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for area in (launch, gst, gdb, perf, run, paper):  # the order of `quco-emu --help`
        area.add_parsers(sub)
    return ap


# what each error of the layers below means for the exit code
ERRORS = ((KernelError, EXIT_INPUT), (tables.GstFileError, EXIT_INPUT), (ProfileError, EXIT_INPUT),
          (SweepError, EXIT_INPUT),  # a scheduler that cannot be reached, a table it cannot write
          (DeviceError, EXIT_STATUS), (ElfError, EXIT_FIRMWARE), (FirmwareMisbehaved, EXIT_FIRMWARE_MISBEHAVED))


def _elf(args) -> str:
    """The firmware ELF a command ran (--firmware, $QUCO_FIRMWARE or the installed one)."""
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
