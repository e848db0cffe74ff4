"""bench/_console.py, the bench scripts' stdout console on quco-emu's rule (quco/cli/common.py):
piped, a table at its natural width and every line whole, whatever width the script gives for
a terminal; on a terminal that width, as before."""
import importlib
import io
import re

import pytest
from rich.table import Table

from conftest import ROOT

CELL = " ".join(f"word{i}" for i in range(60))  # 419 characters, wider than any terminal


@pytest.fixture
def bench_console(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # as `python bench/x.py` runs
    return importlib.import_module("_console").Console


def table() -> Table:
    t = Table("kernel", "note")
    t.add_row("Matrix-Matrix", CELL)
    return t


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("width", [None, 110, 150])  # the scripts' widths: fuzz/hostile, rule_search, dvfs
def test_piped_a_table_comes_out_at_its_natural_width(bench_console, width):
    buf = io.StringIO()
    con = bench_console(file=buf, width=width)
    con.print(table())
    con.print("a line " + CELL)
    lines = buf.getvalue().splitlines()
    # box top, header, rule, the one row, box bottom, then the line: nothing wrapped
    assert len(lines) == 6
    assert CELL in lines[3] and lines[5] == "a line " + CELL
    # natural width: each column its widest cell plus one space of padding on each side
    assert {len(x) for x in lines[:5]} == {1 + (len("Matrix-Matrix") + 2) + 1 + (len(CELL) + 2) + 1}


def test_on_a_terminal_the_width_as_before(bench_console):
    """rule_search.py's 120 columns on a terminal: the long cell wraps inside its column."""
    buf = Terminal()
    con = bench_console(file=buf, width=120)
    con.print(table())
    lines = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue()).splitlines()  # a terminal's styles off
    assert len(lines) > 5 and max(len(x) for x in lines) == 120
    assert " ".join(x.split("│")[2].strip() for x in lines[3:-1]) == CELL
