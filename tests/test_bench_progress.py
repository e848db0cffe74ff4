"""bench/_progress.py, the progress of the long bench scripts: on stderr only, so a script's stdout
(its figures) is byte for byte what it was without progress; without a terminal a few plain lines
chosen by step number (the same log on any machine), on a terminal a transient bar on the CLI's
stderr console. Checked on the helper with hand-counted steps and on a real script
(bench/picks_models.py on the three two-layer bundled workloads, about a second)."""
from __future__ import annotations

import contextlib
import importlib
import io
import sys

import pytest
from rich.console import Console

from conftest import ROOT


@pytest.fixture
def bench(monkeypatch):
    """bench/ on sys.path as when a script runs (`python bench/x.py`): its siblings import."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    progress = importlib.import_module("_progress")
    assert progress._live is None and not progress._open  # nothing left open by another test
    return progress


@pytest.fixture
def terminal(bench, monkeypatch):
    """The stderr console replaced by a terminal that writes into a buffer."""
    buf = io.StringIO()
    monkeypatch.setattr(bench, "err", Console(file=buf, force_terminal=True, width=120, markup=False,
                                              emoji=False, highlight=False))
    return buf


@pytest.mark.parametrize("total, shown", [(7, (1, 3, 5, 7)), (2, (1, 2)), (1, (1,)), (100, (1, 26, 51, 76))])
def test_without_a_terminal_one_line_a_quarter(bench, capsys, total, shown):
    # a quarter starts at the step i where 4 (i - 1) // total grows: counted by hand above
    with bench.Steps("calibrate_model", "fitting", total) as steps:
        for i in range(1, total + 1):
            steps.step(f"leave out k{i}")
            print(f"row {i}")
    out, err = capsys.readouterr()
    assert out == "".join(f"row {i}\n" for i in range(1, total + 1))
    assert err == "".join(f"calibrate_model: fitting {i}/{total} (leave out k{i})\n" for i in shown)


def test_a_callback_of_done_and_total(bench, capsys):
    """steps.update is a callback(done, total) of quco's sweeps (parallel.run's progress)."""
    with bench.Steps("paper", "sources") as pool:
        for done in range(1, 9):
            pool.update(done, 8)
    assert capsys.readouterr().err == "".join(f"paper: sources {d}/8\n" for d in (1, 3, 5, 7))


def test_nested_steps_and_step_are_quiet_inside_the_outer(bench, capsys):
    """A mode calling another: without a terminal the outer one alone speaks; step() advances the
    innermost open Steps, and does nothing with none open (a mode's function called by a test)."""
    bench.step("no Steps open")
    with bench.Steps("perfmodel", "part", 2) as outer:
        for part in ("grid sizes", "search spaces"):
            bench.step(part)
            with bench.Steps("perfmodel", part, 5) as inner:
                for _ in range(5):
                    bench.step("the inner one's")
    assert (outer.done, inner.done) == (2, 5)
    assert capsys.readouterr() == ("", "perfmodel: part 1/2 (grid sizes)\nperfmodel: part 2/2 (search spaces)\n")


def test_on_a_terminal_a_transient_bar_on_stderr(bench, terminal, capsys):
    with bench.Steps("calibrate_model", "fitting", 3) as steps:
        for i in range(3):
            steps.step(f"leave out k{i}")
            print(f"row {i}")
            bench._live.refresh()  # what its refresh thread does twice a second
            assert f"calibrate_model: fitting (leave out k{i})" in terminal.getvalue()
            assert f"{i}/3" in terminal.getvalue()
    assert bench._live is None and not bench._open
    # stdout untouched (not a terminal here: nothing redirected), no plain line either
    assert capsys.readouterr() == ("row 0\nrow 1\nrow 2\n", "")
    assert "fitting 1/3" not in terminal.getvalue()


def test_a_script_prints_the_same_stdout_with_and_without_progress(bench, terminal, capsys, monkeypatch):
    """bench/picks_models.py on small workloads: stdout the same with no progress at all (Steps a
    no-op, as before the helper), with the plain lines, and with the bar; the progress on stderr."""
    picks = importlib.import_module("picks_models")
    monkeypatch.setattr(picks, "WORKLOADS", ("norm-project", "residual-mlp", "attention-score"))

    class Silent:
        def __init__(self, *args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def step(self, label=""):
            pass

    monkeypatch.setattr(picks, "Steps", Silent)
    assert picks.main([]) == 0
    before, nothing = capsys.readouterr()
    assert nothing == "" and before.count("\n") == 7  # the title and the 3 x 2 models
    monkeypatch.setattr(picks, "Steps", bench.Steps)
    picks.main([])  # on the fake terminal
    assert capsys.readouterr() == (before, "")
    assert "picks_models: whole models" in terminal.getvalue()
    monkeypatch.setattr(bench, "err", Console(stderr=True, markup=False, emoji=False, highlight=False))
    picks.main([])  # stderr not a terminal: quarters of 6 steps are steps 1, 3, 4 and 6
    out, err = capsys.readouterr()
    assert out == before
    assert err.splitlines() == [f"picks_models: whole models {i}/6 ({w} on {g})" for i, w, g in
                                ((1, "norm-project", "r9-nano"), (3, "residual-mlp", "r9-nano"),
                                 (4, "residual-mlp", "mi100"), (6, "attention-score", "mi100"))]
    del sys.modules["picks_models"]  # its WORKLOADS were patched (monkeypatch restores them; be sure)


def test_the_bar_stays_on_the_stderr_it_started_on(bench, monkeypatch, capsys):
    """hostile.py and fuzz.py swap sys.stderr to capture an in-process quco-emu: the bar's drawing
    must not land in the capture (the console follows sys.stderr; the bar is pinned)."""
    real, captured = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", real)
    monkeypatch.setattr(bench, "err", Console(stderr=True, force_terminal=True, markup=False, emoji=False,
                                              highlight=False))
    with bench.Steps("hostile", "case", 2) as steps:
        steps.step("first")
        with contextlib.redirect_stderr(captured):
            bench._live.refresh()
            steps.step("second")
            bench._live.refresh()
    assert captured.getvalue() == ""
    assert "hostile: case (second)" in real.getvalue()


def test_without_a_drawing_thread_each_step_draws(bench, terminal):
    """bench.py times launches: thread=False draws as a step starts, nothing in between."""
    with bench.Steps("bench", "part", 2, thread=False) as steps:
        assert not bench._live.live.auto_refresh
        steps.step("the cost table")
        assert "bench: part (the cost table)" in terminal.getvalue()
        steps.step("launches per second")
        assert "bench: part (launches per second)" in terminal.getvalue()


def test_a_label_reaches_the_terminal_escaped(bench, capsys):
    """A step's label is often a file's or a hostile case's name: its control characters are
    written as escapes, never sent raw."""
    with bench.Steps("hostile", "case", 1) as steps:
        steps.step("name='\x1b[2J\u202e'")
    assert capsys.readouterr().err == "hostile: case 1/1 (name='\\x1b[2J\\u202e')\n"
