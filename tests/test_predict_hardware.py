"""bench/predict_hardware.py (issue #29's pre-registered predictions) on a hand-made grid: the
measured format plus model_us, the preset and commit named, what bench/hardware.py would compare,
bad input refused with nothing written."""
from __future__ import annotations

import csv
import hashlib
import os
import re

import pytest

from conftest import bench_module
from quco.gst import tables
from quco.perfmodel import hardware

predict = bench_module("predict_hardware")

GRID = [",".join(hardware.FIELDS),
        "Elementwise,att,paper,256,8192,7,,,yes,30.1,402653184,13377.2,",
        "Elementwise,att,paper,256,8192,8,,,no,,,,245816",
        "Elementwise,vendor,paper,256,,,,,yes,40.0,402653184,10066.3,",
        "Matrix-Matrix,att,paper,1024,8192,2,64,128,yes,20.0,1,1.0,"]


def test_predictions_are_the_comparisons_model_in_the_measured_format(tmp_path):
    src, out = tmp_path / "grid.csv", tmp_path / "pred.csv"
    src.write_text("\n".join(GRID) + "\n")
    assert predict.main([str(src), "--gpu", "h200", "-o", str(out), "--work-groups", "Elementwise=512",
                         "--label", "third"]) == 0
    text = out.read_text()
    comments = [line for line in text.splitlines() if line.startswith("# ")]
    assert "preset h200" in comments[0] and re.search(r"commit [0-9a-f]{40}", comments[0])
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert tuple(rows[0]) == hardware.FIELDS + ("model_us",)
    # the TMA rows of the compared kernels only (no vendor, no Matrix-Matrix), then the further size
    assert [(r["size"], r["work_groups"], r["tile"], r["slots"], r["fits"]) for r in rows] == [
        ("paper", "256", "8192", "7", "yes"), ("paper", "256", "8192", "8", "no"),
        ("third", "512", "8192", "7", "yes"), ("third", "512", "8192", "8", "no")]
    # 7 x (2 queues x 16 KiB + an 8-byte barrier) + a 16 KiB output staging tile: the H100's figure (same SM)
    assert rows[1]["smem_required"] == rows[3]["smem_required"] == "245816" and rows[1]["model_us"] == ""
    assert rows[0]["time_us"] == "" and rows[0]["bytes"] == "402653184" and rows[2]["bytes"] == ""
    (res,) = hardware.compare(hardware.read(src), tables.load("h200"))
    assert float(rows[0]["model_us"]) == pytest.approx(res["points"][0].model_us, abs=0.0005)
    assert float(rows[2]["model_us"]) > float(rows[0]["model_us"])  # twice the work-groups, twice the bytes
    with pytest.raises(hardware.HardwareDataError, match="line 1: header"):  # not a measurement file
        hardware.read(out)


def test_the_header_hashes_the_bytes_it_read_even_from_a_pipe(tmp_path):
    """The grid's sha256 in the header is that of the bytes the rows came from: a file, and a
    pipe (`<(...)`, /dev/fd/N), which a second read would find empty (e3b0c442..., no bytes)."""
    data = ("\n".join(GRID) + "\n").encode()
    src, out = tmp_path / "grid.csv", tmp_path / "pred.csv"
    src.write_bytes(data)
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    try:
        for grid in (str(src), f"/dev/fd/{r}"):
            assert predict.main([grid, "--gpu", "h200", "-o", str(out)]) == 0
            assert f"(sha256 {hashlib.sha256(data).hexdigest()})" in out.read_text().splitlines()[1]
    finally:
        os.close(r)


def test_several_further_sizes_each_its_own_label(tmp_path):
    src, out = tmp_path / "grid.csv", tmp_path / "pred.csv"
    src.write_text("\n".join(GRID) + "\n")
    assert predict.main([str(src), "--gpu", "h200", "-o", str(out), "--work-groups", "512,1024"]) == 0
    rows = [r for r in csv.DictReader(line for line in out.read_text().splitlines() if not line.startswith("#"))]
    assert [(r["size"], r["work_groups"], r["slots"]) for r in rows] == [
        ("paper", "256", "7"), ("paper", "256", "8"), ("wg512", "512", "7"), ("wg512", "512", "8"),
        ("wg1024", "1024", "7"), ("wg1024", "1024", "8")]
    assert "every kernel also at 512, 1024 work-groups" in out.read_text().splitlines()[1]
    # a repeated size counts once; a kernel's own sizes replace the every-kernel ones
    assert predict.work_groups(["512,1024", "1024", "Elementwise=64"]) == {None: [512, 1024], "Elementwise": [64]}
    t = {r["work_groups"]: float(r["model_us"]) for r in rows if r["slots"] == "7"}
    assert t["256"] < t["512"] < t["1024"]


@pytest.mark.parametrize("args, says", [
    (["--work-groups", "512,x"], "'x': expected a whole number"),
    (["--work-groups", "Foo=3"], "kernel 'Foo'"),
    (["--work-groups", "0"], "'0': expected a whole number"),
    (["--work-groups", "٣"], "'٣': expected a whole number 1..2147483648 in digits 0-9"),  # int() would take it
    (["--work-groups", "²"], "'²': expected a whole number"),  # isdigit() but int() refuses it
    (["--work-groups", "512,1024", "--label", "x"], "--label 'x': names a kernel's one further size"),
    (["--label", "x"], "--work-groups gives none"),
    (["--work-groups", "512", "--label", "paper"], "--label 'paper': a size the grid file already has"),
])
def test_bad_arguments_exit_2_and_write_nothing(tmp_path, capsys, args, says):
    src, out = tmp_path / "grid.csv", tmp_path / "pred.csv"
    src.write_text("\n".join(GRID) + "\n")
    assert predict.main([str(src), "--gpu", "h200", "-o", str(out), *args]) == 2
    assert says in capsys.readouterr().err and not out.exists()
