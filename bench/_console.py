"""The bench scripts' stdout console, on quco-emu's rule (quco/cli/common.py, PipeAwareConsole and
PIPE_WIDTH): to a pipe or a file every line comes out whole and a table at its natural width
(`bench/x.py > out.txt`, `| grep`); on a terminal rich's width as before, or the script's own
`width` where it gives one.

    con = Console()            # the terminal's width on a terminal
    con = Console(width=150)   # 150 on a terminal (wide tables that wrap better than they crop)
"""
from __future__ import annotations

from rich.console import Console as _Rich

from quco.cli.common import PipeAwareConsole


class Console(PipeAwareConsole):
    # rich's own: a closed pipe (`bench/x.py | head`) ends the script quietly with exit 1, as the
    # scripts always did; quco-emu's raises for its main() to exit 0, which no bench script has
    on_broken_pipe = _Rich.on_broken_pipe
