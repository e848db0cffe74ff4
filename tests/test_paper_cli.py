"""`quco-emu paper`'s edges (issue #33): a closed pipe, the empty --out, --list --json, a firmware
image that cannot be loaded, an unknown claim id; and the summary the terminal gets."""
import json
import os
import subprocess
import sys

import pytest

from quco.cli import main as cli
from quco.paper import claims as claims_mod
from quco.paper import ours
from quco.paper.measures import MEASURES

ONE = "table3-r9-nano-quco-matrix-matrix"


def _closed_stdout(args: list[str]) -> subprocess.CompletedProcess:
    """The command with a stdout whose reader is gone before it writes (`... | true`)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "quco.cli.main", *args], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [["paper", "--list"], ["paper", "--list", "--json"]])
def test_list_on_a_closed_pipe_exits_0_quietly(args):
    done = _closed_stdout(args)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.firmware
@pytest.mark.parametrize("extra", [[], ["--table"]])
def test_a_run_on_a_closed_pipe_exits_0_quietly(extra):
    done = _closed_stdout(["paper", "--claims", ONE, "--workers", "1", *extra])
    assert (done.returncode, done.stderr) == (0, "")


def test_an_empty_out_is_refused_before_any_work(capsys, monkeypatch):
    monkeypatch.setattr(ours, "compute", lambda *a, **k: pytest.fail("computed before checking --out"))
    assert cli.main(["paper", "--claims", ONE, "--out", ""]) == 2
    assert "--out: no output folder given (an empty name)" in capsys.readouterr().err


def test_list_json_is_every_claim_as_json(capsys):
    assert cli.main(["paper", "--list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    every = claims_mod.load(measures=MEASURES)
    assert [d["id"] for d in doc] == [c.id for c in every]
    assert {"source", "statement", "paper", "kind", "weight", "weight_reason", "quote"} <= set(doc[0])


@pytest.fixture
def images(tmp_path):
    empty = tmp_path / "empty.elf"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("not an ELF\n")
    return {"missing": tmp_path / "nope.elf", "empty": empty, "folder": tmp_path, "/dev/zero": "/dev/zero",
            "not an ELF": text}


@pytest.mark.parametrize("which", ["missing", "empty", "folder", "/dev/zero", "not an ELF"])
def test_a_firmware_image_that_cannot_be_loaded_exits_5_before_any_work(capsys, monkeypatch, images, which):
    """As launch, run and evaluate do (README's exit codes): 5, the image named, nothing computed."""
    monkeypatch.setattr(ours, "compute", lambda *a, **k: pytest.fail("computed with a firmware that cannot load"))
    path = str(images[which])
    assert cli.main(["paper", "--claims", ONE, "--firmware", path]) == 5
    err = capsys.readouterr().err
    assert err.startswith("error: ") and path in err and "Traceback" not in err


def test_an_unknown_claim_id_names_the_option_and_the_valid_ids(capsys):
    assert cli.main(["paper", "--claims", "table3-r9-nano-quco-matrix-matrx"]) == 2
    err = capsys.readouterr().err
    assert "--claims: unknown claim id 'table3-r9-nano-quco-matrix-matrx'" in err
    assert "did you mean table3-r9-nano-quco-matrix-matrix" in err
    every = claims_mod.load(measures=MEASURES)
    assert f"the {len(every)} valid ids" in err and all(c.id in err for c in every)


@pytest.mark.firmware
def test_the_terminal_gets_a_summary_and_the_table_only_when_asked(capsys, tmp_path):
    ids = "table3-r9-nano-quco-matrix-matrix,fig6-order-matrix-matrix,fig6-matrix-matrix-short-of-ideal"
    assert cli.main(["paper", "--claims", ids, "--workers", "1", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0].startswith("scorecard: ") and "evidence claims reproduced (hold); 3 claims in all" in lines[0]
    assert any(line.strip().startswith("fitted") for line in lines)           # the weights, one line each
    assert f"{tmp_path}/report.md explains every row" in printed
    assert "The QuCo paper, claim by claim" not in printed                     # no full table
    assert cli.main(["paper", "--claims", ids, "--workers", "1", "--table"]) == 0
    assert "The QuCo paper, claim by claim" in capsys.readouterr().out
