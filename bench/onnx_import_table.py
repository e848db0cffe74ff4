"""`quco-emu import` over a folder of ONNX exports: layers imported, nodes in the graph, exit code,
time and peak memory of each import (its own process).

    .venv/bin/python bench/onnx_import_table.py /tmp/onnx-full [--attention include]

Makes the table of docs/workloads.md ("Importing an ONNX model") from the full-size exports of
`bench/onnx_fixtures.py --full --keep-weights --out DIR`. Memory is the import process's peak
resident set (ru_maxrss of wait4; this process stays small, since a child's ru_maxrss starts
from its parent's), time its wall clock.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAYER_OPS = ("MatMul", "Gemm", "Conv")


def graph_counts(path: Path) -> int:
    """MatMul/Gemm/Conv nodes of the file's top graph, counted in a process of its own: the peak
    resident set a child reports (ru_maxrss) starts from its parent's at fork and survives exec,
    so this process must stay small."""
    code = ("import onnx, sys; g = onnx.load(sys.argv[1], load_external_data=False).graph; "
            f"print(sum(n.op_type in {LAYER_OPS!r} for n in g.node))")
    return int(subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              check=True).stdout)


def run_import(path: Path, extra: list[str]) -> dict:
    quco = Path(sys.executable).with_name("quco-emu")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "w.json"
        err = Path(tmp) / "stderr"
        start = time.perf_counter()
        with open(err, "w") as e:   # wait4 itself, so the rusage is this child's alone
            proc = subprocess.Popen([str(quco), "import", str(path), "-o", str(out), *extra],
                                    stdout=subprocess.DEVNULL, stderr=e)
            _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        doc = json.loads(out.read_text()) if out.exists() else {}
        stderr = err.read_text().strip().splitlines()[:2]
    return {"exit": os.waitstatus_to_exitcode(status), "layers": len(doc.get("layers", [])), "seconds": seconds,
            "attention_left": sum("attention product" in u.get("reason", "") for u in doc.get("unsupported", [])),
            "stderr": stderr, "peak_mb": usage.ru_maxrss / 1024}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--attention", choices=("exclude", "include"), default="exclude")
    args = ap.parse_args(argv)
    print("| export | size | layers imported | MatMul/Gemm/Conv in the graph | attention products left out | exit | "
          "time | peak memory |")
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(args.folder.glob("*.onnx")):
        layer_nodes = graph_counts(path)
        r = run_import(path, ["--attention", args.attention])
        print(f"| {path.stem} | {path.stat().st_size / 1e6:,.1f} MB | {r['layers']} | {layer_nodes} | "
              f"{r['attention_left']} | {r['exit']} | {r['seconds']:.1f} s | {r['peak_mb']:,.0f} MB |", flush=True)
        if r["exit"]:
            print(f"|   | {' / '.join(r['stderr'])[:300]} | | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
