"""`pip install .` as a user does it: a wheel in a fresh environment outside the source tree,
`quco-emu` run from an empty folder, the firmware, kernels and presets taken from the wheel.

The new environment reuses this one's dependencies through a .pth line (no download); a
directory named in a .pth line is not scanned for .pth files itself, so the editable
install's finder stays out and `quco` can only come from the wheel, which the test checks.
"""
import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from quco.emulator import fastcount
from quco.gst import tables
from quco.host import reference
from quco.kernel.format import load_kernel

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin folder, empty working folder, environment) of a venv holding only the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", ROOT],
                   check=True, capture_output=True)
    wheel, = (tmp / "dist").glob("quco_emu-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q",
                    "--no-deps", "--no-index", wheel], check=True, capture_output=True)
    own_site, = venv.glob("lib/python3*/site-packages")
    (own_site / "test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("QUCO_FIRMWARE", "PYTHONPATH", "VIRTUAL_ENV")}
    return venv / "bin", work, env


def run(installed, *argv, env=None):
    bin_dir, work, base_env = installed
    return subprocess.run([bin_dir / argv[0], *argv[1:]], cwd=work, env={**base_env, **(env or {})},
                          capture_output=True, text=True)


def test_the_wheel_is_what_runs(installed):
    bin_dir, work, _ = installed
    venv = bin_dir.parent
    r = run(installed, "python", "-c", "import quco.host, quco.firmware as f, quco.gst.tables as t;"
            "print(quco.host.__file__, f.IMAGE, t.PRESET_DIR, sep='\\n')")
    assert r.returncode == 0, r.stderr
    host, image, presets = (Path(p) for p in r.stdout.split())
    assert host.is_relative_to(venv) and image.is_relative_to(venv) and presets.is_relative_to(venv)
    assert image.is_file() and not any(work.iterdir())


def test_the_wheel_carries_the_c_counting_hooks(installed):
    # setup.py builds emulator/_fastcount.c into the wheel; the installed Soc loads it from there.
    # Optional to pip (no compiler, no hooks, the same counts slower), so only where the compiler
    # pip builds with is here; every make target installs one (tests/test_fast_paths.py alike)
    if not fastcount.build_compiler():
        pytest.skip("no C compiler: pip builds the wheel without the C hooks (make installs gcc)")
    r = run(installed, "python", "-m", "quco.emulator.fastcount")
    assert r.returncode == 0, r.stderr[-2000:]
    said = r.stdout.strip()
    assert said.startswith("counting hooks: C (") and said.endswith(")"), said
    assert Path(said[len("counting hooks: C ("):-1]).is_relative_to(installed[0].parent), said


def test_launch_a_bundled_example_from_an_empty_folder(installed):
    bin_dir = installed[0]
    r = run(installed, "quco-emu", "examples", "matrix-matrix")
    path = Path(r.stdout.strip())
    assert r.returncode == 0 and path.is_relative_to(bin_dir.parent) and path.name == "matrix-matrix.json"
    r = run(installed, "quco-emu", "launch", path, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    kernel = load_kernel(ROOT / "quco" / "examples" / "kernels" / "matrix-matrix.json")
    model = reference.configure(tables.load("r9-nano"), kernel.record())
    assert doc["status"] == "OK" and doc["tile"] == model.tile
    assert [q["slots"] for q in doc["queues"]] == model.slots


def test_run_a_bundled_workload_with_a_dvfs_trace(installed):
    r = run(installed, "quco-emu", "examples", "workloads/whisper-tiny-types")
    path = Path(r.stdout.strip())
    assert r.returncode == 0 and path.is_relative_to(installed[0].parent), r.stderr
    # --no-baselines: the wheel's run and DVFS paths are the point (the baselines' exhaustive
    # searches took 7 of the test's 8 s; tests/test_workloads.py checks them)
    r = run(installed, "quco-emu", "run", path, "--gpu", "mi100", "--dvfs", "mi100-u-shaped", "--json",
            "--no-baselines")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["layers"]) == len(doc["dvfs"]["rows"]) == 9
    assert all(layer["tile"] and layer["run_ns"] > 0 for layer in doc["layers"])
    assert min(row["clock_mhz"] for row in doc["dvfs"]["rows"]) == 950  # the trace's bottom (layer 7)


def test_diff_every_preset_and_bundled_example(installed):
    r = run(installed, "quco-emu", "diff")
    assert r.returncode == 0, r.stderr
    # the last column, "agree", of each table row (one line each: a pipe is not wrapped)
    agree = [cells[-2].strip() for cells in (line.split("│") for line in r.stdout.splitlines())
             if len(cells) > 5 and cells[-2].strip()]
    expected = len(tables.preset_names()) * len(list((ROOT / "quco" / "examples" / "kernels").glob("*.json")))
    assert agree == ["yes"] * expected


def test_firmware_override_and_its_error(installed, tmp_path):
    r = run(installed, "quco-emu", "diff", "--gpu", "r9-nano", env={"QUCO_FIRMWARE": str(tmp_path / "none.elf")})
    assert r.returncode == 5 and f"firmware: {tmp_path / 'none.elf'}: cannot read" in r.stderr
    r = run(installed, "quco-emu", "diff", "--gpu", "r9-nano", "--firmware", tmp_path / "gone.elf",
            env={"QUCO_FIRMWARE": str(tmp_path / "none.elf")})
    assert r.returncode == 5 and "gone.elf: cannot read" in r.stderr


def test_an_unknown_example_is_named(installed):
    r = run(installed, "quco-emu", "examples", "matrix")
    assert r.returncode == 2 and "no bundled example 'matrix'" in r.stderr and "matrix-matrix" in r.stderr


def test_the_papers_scorecard_from_the_wheel(installed):
    """paper/claims.toml is package data: `quco-emu paper` works from an empty folder."""
    r = run(installed, "quco-emu", "paper", "--claims", "table3-mi100-quco-matrix-vector", "--workers", "1", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["rows"]
    kernel = load_kernel(ROOT / "quco" / "examples" / "kernels" / "mi100" / "matrix-vector.json")
    assert row["value"]["tile"] == reference.configure(tables.load("mi100"), kernel.record()).tile
