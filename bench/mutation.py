"""Mutation campaign for the Python side with mutmut 3: how many small deliberate bugs in the
input layer, the reference model and the workload derivation does `make test`'s suite catch?

    .venv/bin/python bench/mutation.py [--modules kernel/format.py ...] [--tests tests/test_kernel.py ...]
                                       [--max-children 2]
                                       [--timeout 3600] [--keep DIR]

mutmut runs the tests in-process with its mutated copy first on sys.path, so the copy must be
importable under the names the tests use (`quco.kernel.format`): this script stages the package
folder quco/ (with the examples inside it) in a temporary folder with the tests and a
setup.cfg holding mutmut's settings, runs
`mutmut run` there and prints killed, survived, timed out and untested mutants per module
with the score killed / (killed + survived + timeout... counted as killed). Needs mutmut
(pip install mutmut) and the firmware (make firmware): the tests run it.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _progress import Steps, step

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["kernel/format.py", "host/reference.py", "gst/tables.py", "util/schema.py", "util/userinput.py",
           "perfmodel/work.py", "workloads/derive.py", "workloads/baselines.py", "workloads/dvfs.py",
           "workloads/runner.py"]
# the fast tests that exercise these modules (mutmut runs, per mutant, those that reach it). Keep it
# in step with tests/: a module's own test file left out here makes its mutants look like survivors
# (the issue #24 files and test_gst_tables.py / test_perf_memory.py were missing the first time).
# Not test_abi.py: it checks the generated files of a source tree, which the staged copy is not.
TESTS = ["tests/test_kernel.py", "tests/test_reference.py", "tests/test_pins_input.py", "tests/test_hostile.py",
         "tests/test_hostile_24.py", "tests/test_inputs_24.py", "tests/test_cli.py", "tests/test_device.py",
         "tests/test_differential.py", "tests/test_timing.py", "tests/test_gst_tables.py", "tests/test_gst_schema.py",
         "tests/test_userinput.py", "tests/test_perf_memory.py", "tests/test_perfmodel.py",
         "tests/test_workloads.py", "tests/test_pins_workloads.py", "tests/test_pins_28.py", "tests/test_hostile_28.py",
         "tests/test_onnx_import.py", "tests/test_onnx_fixtures.py", "tests/test_exit_codes.py", "tests/test_claims.py",
         "tests/test_mutants_workloads.py"]
# mutmut's clean run must pass whole. These run `quco-emu` in a subprocess (the installed package,
# never mutmut's copy: they cannot kill a mutant) and time signals against a loaded machine: on 2
# shared cores the SIGINT case failed the clean run (issue 28 part 5's load-sensitive test).
# test_evaluate_writes_parquet, once deselected here (it had failed a clean run of the whole list,
# order-dependent), passes mutmut 3.8.1's clean run of the whole TESTS list (pytest -x, after every
# test before it) with the current tests and with those of 5849525: no longer deselected.
DESELECT = ["tests/test_hostile_24.py::test_signals_end_evaluate_and_its_workers"]


def staged(path: str) -> str:
    """A module named inside the package, kernel/format.py, as the checkout names it: quco/kernel/format.py."""
    return path if path.startswith("quco/") else f"quco/{path}"


def stage(folder: Path, modules: list[str], tests: list[str]) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("quco", "tests"):
        shutil.copytree(ROOT / part, folder / part, ignore=ignore)
    lines = ["[mutmut]", "source_paths = quco", "only_mutate ="] + [f"    {staged(m)}" for m in modules]
    lines += ["also_copy =", "    tests", "pytest_add_cli_args_test_selection ="]
    lines += [f"    {t}" for t in tests] + [f"    --deselect={t}" for t in DESELECT]
    (folder / "setup.cfg").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", nargs="+", default=MODULES)
    ap.add_argument("--tests", nargs="+", default=TESTS, help="test files mutmut may run (default: TESTS)")
    ap.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before the campaign is stopped")
    ap.add_argument("--keep", type=Path, help="stage here and keep it (mutmut results / show work there)")
    args = ap.parse_args(argv)
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or shutil.which("mutmut")
    if not mutmut:
        print("mutmut is not installed: .venv/bin/pip install mutmut")
        return 2
    firmware = ROOT / "quco" / "firmware" / "build" / "quco.elf"
    if not firmware.exists():
        print(f"{firmware} is missing: make firmware")
        return 2
    folder = args.keep or Path(tempfile.mkdtemp(prefix="quco-mutation-"))
    step(f"staging a copy in {folder}")
    if not (folder / "setup.cfg").exists():
        folder.mkdir(parents=True, exist_ok=True)
        stage(folder, args.modules, args.tests)
    env = dict(os.environ, QUCO_FIRMWARE=str(firmware), HYPOTHESIS_PROFILE="ci")
    t0 = time.perf_counter()
    step(f"mutmut run ({args.timeout:.0f} s at most)")
    try:
        run = subprocess.run([mutmut, "run", "--max-children", str(args.max_children)], cwd=folder, env=env,
                             capture_output=True, text=True, timeout=args.timeout)
        stopped = ""
        log = run.stdout + run.stderr
    except subprocess.TimeoutExpired as e:
        stopped = f" (stopped after {args.timeout:.0f} s: the counts cover the mutants tested by then)"
        log = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    seconds = time.perf_counter() - t0
    step("mutmut results")
    results = subprocess.run([mutmut, "results", "--all", "true"], cwd=folder, env=env, capture_output=True,
                             text=True).stdout
    by_module: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in results.splitlines():  # "    quco.kernel.format.x_load_kernel__mutmut_3: survived"
        name, _, status = line.strip().rpartition(": ")
        if "__mutmut_" in name:
            module = name.split(".x_")[0].split(".x\u01c1")[0]
            by_module[module][status] += 1
    if not any(c["killed"] + c["survived"] for c in by_module.values()):
        print(f"mutmut tested no mutant in {folder}:\n{log[-3000:]}")
        return 1
    total = collections.Counter()
    print(f"mutmut on {len(args.modules)} modules, {seconds:.0f} s{stopped}")
    print(f"{'module':34} {'mutants':>8} {'killed':>7} {'survived':>9} {'timeout':>8} {'no tests':>9} {'other':>6}  score")
    for module, c in sorted(by_module.items()):
        total += c
        print(row(module, c))
    print(row("all", total))
    (folder / "summary.json").write_text(json.dumps({m: dict(c) for m, c in by_module.items()}, indent=1))
    if args.keep:
        print(f"kept {folder}: `mutmut results` / `mutmut show NAME` there list the survivors")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def row(module: str, c: collections.Counter) -> str:
    """One line of the table; the score counts a timeout as killed (the mutant made the tests hang)."""
    killed, survived, timeout = c["killed"], c["survived"], c["timeout"]
    untested = c["no tests"]
    other = sum(c.values()) - killed - survived - timeout - untested
    tested = killed + survived + timeout
    score = f"{100 * (killed + timeout) / tested:.1f}%" if tested else "n/a"
    return (f"{module:34} {sum(c.values()):8,} {killed:7,} {survived:9,} {timeout:8,} {untested:9,} {other:6,}  "
            f"{score}")


if __name__ == "__main__":
    with Steps("mutation", "phase", 3):  # progress on stderr (main's step()s); stdout as without it
        sys.exit(main())
