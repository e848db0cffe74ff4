"""Progress of a long bench script, on stderr only: stdout (the figures) stays byte for byte what
it was without it, so `bench/x.py > out.txt` and `| diff` see the same text as before.

As `quco-emu run`, `paper` and `evaluate` draw theirs (rich, on stderr, quco.cli.common.err saying
whether it is a terminal): on a terminal a transient rich bar (what runs now, step N of M,
elapsed); without a terminal (a log, CI, a pipe) a few plain lines, one as the first step
starts and one at each further quarter of the steps ("calibrate_model: fitting 3/7 (leave out
Dot-Product)"), chosen by step number, not by time, so a log reads the same on any machine.

    with Steps("picks_models", "whole models", 6) as steps:
        for ...:
            steps.step("whisper-tiny on mi100")     # the step that starts now
            ...
    progress=steps.update                            # a callback(done, total) of quco's sweeps
    _progress.step("leave one family out")           # the innermost open Steps' next step

A Steps opened inside another (a mode that calls another mode) adds its bar under the outer
one on a terminal and prints nothing without one.
"""
from __future__ import annotations

import sys

from quco.cli.common import err
from quco.util.userinput import printable

QUARTERS = 4  # without a terminal: at most this many lines a Steps
_live = None  # the rich Progress on screen, shared by nested Steps
_open: list = []  # the Steps open now, innermost last (without a terminal a nested one stays quiet)


class Steps:
    def __init__(self, name: str, what: str, total: int | None = None, thread: bool = True):
        """thread=False: no drawing thread, the bar redrawn as a step starts only (a script that
        measures speed: nothing runs beside what it times)."""
        self.name, self.what, self.total, self.thread = name, what, total, thread
        self.done, self._printed, self._task, self._own, self._quiet = 0, -1, None, False, False

    def __enter__(self) -> "Steps":
        global _live
        self._quiet = bool(_open)  # nested: the outer one speaks
        _open.append(self)
        if not err.is_terminal:
            return self
        if _live is None:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                                       TimeElapsedColumn)
            # On the stderr of now, pinned: hostile.py and fuzz.py swap sys.stderr to capture an
            # in-process quco-emu's messages, and the drawing thread must not write into them.
            # stdout goes through the bar only when it is the terminal too (its lines then print
            # above the bar); a file or pipe on stdout is never touched. Twice a second: a script
            # that times itself (process_time) pays next to nothing for the drawing. soft_wrap: the
            # lines of stdout come out whole, as without the bar (the bar is cut to the width).
            screen = Console(file=err.file, force_terminal=True, markup=False, emoji=False, highlight=False, soft_wrap=True)
            _live = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=screen, transient=True, refresh_per_second=2,
                             auto_refresh=self.thread, redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)
            _live.start()
            self._own = True
        self._task = _live.add_task(f"{self.name}: {self.what}", total=self.total)
        return self

    def __exit__(self, *exc) -> None:
        global _live
        _open.remove(self)
        if self._task is not None:
            _live.remove_task(self._task)
        if self._own:
            _live.stop()
            _live = None

    def step(self, label: str = "") -> None:
        """The next step starts (`label`: what it is)."""
        self.done += 1
        self._show(self.done - 1, label, self.done)

    def update(self, done: int, total: int | None = None) -> None:
        """A callback(done, total): `done` steps are finished."""
        if total is not None:
            self.total = total
        self.done = done
        self._show(done, "", max(done, 1))

    def _show(self, completed: int, label: str, shown: int) -> None:
        """The bar at `completed` finished; without a terminal, the line of step `shown` if it opens
        a new quarter."""
        if self.total is not None and shown > self.total:  # more steps than said: never past 100%
            self.total = shown
        label = printable(label)  # a file's or case's name: no escape reaches the terminal
        if self._task is not None:
            text = f"{self.name}: {self.what}" + (f" ({label})" if label else "")
            _live.update(self._task, completed=completed, total=self.total, description=text,
                         refresh=not _live.live.auto_refresh)
            return
        if self._quiet:
            return
        part = QUARTERS * (shown - 1) // self.total if self.total else 0
        if part > self._printed:
            self._printed = part
            err.print(f"{self.name}: {self.what} {shown}/{self.total if self.total else '?'}"
                      + (f" ({label})" if label else ""))


def step(label: str = "") -> None:
    """The next step of the innermost open Steps, for a function that does not hold it (a mode of a
    script whose steps main() counts); nothing when none is open."""
    if _open:
        _open[-1].step(label)


def track(name: str, what: str, items, label=str):
    """`for x in track(...)`: each item one step, `label(x)` naming it."""
    items = list(items)
    with Steps(name, what, len(items)) as steps:
        for x in items:
            steps.step(label(x))
            yield x
