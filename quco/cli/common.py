"""What every quco-emu command shares: the exit codes, the consoles, the user's errors, and the
checks of the inputs several commands read (a GST, the target GPU, a partition, a timing
profile, an output file). The command modules (launch.py, gst.py, ...) import it; main.py
maps the errors of every command to the exit codes.
"""
from __future__ import annotations

import argparse

from rich.console import Console, ConsoleDimensions

from ..gst import tables
from ..util.userinput import int_option, printable
from ..util import atomic
from ..kernel.format import partition_problems

EXIT_MISMATCH, EXIT_INPUT, EXIT_STATUS, EXIT_FAULT, EXIT_FIRMWARE = 1, 2, 3, 4, 5
EXIT_FIRMWARE_MISBEHAVED = 6
DEFAULT_GPU = "r9-nano"
# Width of a console that writes to a pipe or a file: no limit, in effect. A line comes out
# whole, as produced (`> file`, `| grep`, `| awk`), and a table takes its natural width (its title
# and caption still fit the table). A terminal keeps rich's own width (the terminal's).
PIPE_WIDTH = 1 << 30


class PipeAwareConsole(Console):
    @property
    def size(self) -> ConsoleDimensions:
        """A terminal's or PIPE_WIDTH, by the file the console writes to now (main() may point
        `out` at stderr): rich takes the size of whichever of stdin, stdout and stderr is a
        terminal, so `quco-emu ... > file` typed in a terminal would wrap at its width."""
        dims = super().size
        try:
            tty = self.file.isatty()
        except (AttributeError, ValueError):  # no isatty, or closed
            tty = False
        return dims if tty else ConsoleDimensions(PIPE_WIDTH, dims.height)

    def on_broken_pipe(self) -> None:
        """rich's default exits 1 (the "disagree" code) with nothing said; main() ends a closed
        pipe (`quco-emu evaluate | head -1`) quietly with exit 0 instead."""
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


# markup=False, emoji=False: kernel, queue and GPU names are the user's text and are shown
# literally ("[b]" stays, ":100:" is no emoji); highlight=False: rich's highlighter regexes
# take quadratic time on long text
out = PipeAwareConsole(markup=False, emoji=False, highlight=False)
err = PipeAwareConsole(stderr=True, markup=False, emoji=False, highlight=False, soft_wrap=True)  # messages whole, for grep


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


def target(args, kernel=None) -> tuple[str, bytes]:
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
    """--profile, checked before any work: load_profile refuses a file that breaks the schema or
    whose instructions take no time (ProfileError, exit 2)."""
    if spec is not None:
        from ..emulator.timing import load_profile
        load_profile(spec)


def write_output(path: str, data: str | bytes) -> None:
    """An output file, written atomically; a failure is a clear error and leaves the old file."""
    try:
        atomic.write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as e:
        named = str(path) in (e.strerror or "")  # atomic.write_bytes names the file already
        raise UserError(printable(e.strerror if named else f"{path}: cannot write: {e.strerror or e}")) from None


def add_sweep_options(p) -> None:
    """--workers and --scheduler, the same for every command that fans out (evaluate, paper)."""
    p.add_argument("--scheduler", help="Dask scheduler address (tcp://host:port) or local-dask; default: local processes")
    p.add_argument("--workers", type=int_option(1, 1024), help="local worker processes (default: one per core)")


def check_sweep_options(args) -> None:
    """Before any work: a scheduler address of the right form, and no --workers for a remote
    scheduler (it has its own workers)."""
    if args.scheduler is None:
        return
    from ..util import parallel  # imports nothing heavy; dask only when a sweep runs
    parallel.check_scheduler(args.scheduler)
    if args.workers is not None and args.scheduler != "local-dask":
        raise UserError(f"--workers {args.workers}: local worker processes; the scheduler "
                        f"{printable(args.scheduler)} has its own workers")
