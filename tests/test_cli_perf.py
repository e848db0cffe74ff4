"""quco-emu search / evaluate / launch --model: output shapes and agreement with the model."""
import csv
import json

import pytest

from conftest import EXAMPLES_DIR, MM_KERNEL
from quco.gst import tables
from quco.cli.main import main
from quco.kernel.format import load_kernel
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work

DOT = EXAMPLES_DIR / "dot-product.json"


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_search_json_best_is_the_fastest_of_the_top_ten(capsys):
    doc = run_json(capsys, "search", str(MM_KERNEL), "--gpu", "r9-nano", "--json")
    top = doc["top"]
    assert doc["best"] == top[0] and len(top) == 10
    assert [t["cycles"] for t in top] == sorted(t["cycles"] for t in top)
    assert top[0]["gap_pct"] == 0 and all(t["gap_pct"] >= 0 for t in top)
    assert [q["type"] for q in top[0]["queues"]] == ["streaming"] * 8 + ["stationary"]
    assert all(q["tile"] == top[0]["tile"] for q in top[0]["queues"])
    # the evaluated and the skipped (their lower bound slower than the top ten and QuCo's pick)
    # are the space that fits, counted independently
    g = tables.unpack(tables.load("r9-nano"))
    work = Work.of(load_kernel(MM_KERNEL))
    assert doc["evaluated"] + doc["skipped_by_bound"] == len(search.candidates(work, machine(g), search.tiles(g), range(1, 9)))


def test_launch_model_reports_the_run_time_of_the_firmware_configuration(capsys, tmp_path):
    trace = tmp_path / "cu.json"
    doc = run_json(capsys, "launch", str(DOT), "--json", "--model", "--model-trace", str(trace))
    model = doc["model"]
    assert model["config"] == f"{doc['tile']} / {doc['queues'][0]['slots']}"
    assert model["cycles"] > 0 and model["ns"] == pytest.approx(model["cycles"] * 1000 / model["clock_mhz"])
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "X" and e["name"].startswith("compute") for e in events)


def test_evaluate_one_kernel_gives_every_case_and_writes_a_table(capsys, tmp_path):
    out = tmp_path / "rows.csv"
    doc = run_json(capsys, "evaluate", str(DOT), "--gpu", "r9-nano", "--workers", "1", "--json",
                   "--no-portability", "--out", str(out))
    cases = [r["case"] for r in doc["rows"]]
    assert cases == ["NoATT/Non-Tuned", "NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned",
                     "ATT/Fine-Tuned", "Ideal", "QuCo", "QuCo -CU", "QuCo -CU -Little", "QuCo -CU -Little -CI"]
    by = {r["case"]: r for r in doc["rows"]}
    fine = by["ATT/Fine-Tuned"]["cycles"]
    # Fine-Tuned is the best of the searched space, which holds Informed- and Non-Tuned and QuCo
    for case in ("ATT/Non-Tuned", "ATT/Informed-Tuned", "QuCo"):
        assert by[case]["cycles"] >= fine
    assert by["Ideal"]["cycles"] <= fine
    # QuCo's row is the firmware's own configuration
    launched = run_json(capsys, "launch", str(DOT), "--json")
    assert by["QuCo"]["tile"] == launched["tile"]
    gap = 100 * (by["QuCo"]["cycles"] / fine - 1)
    assert doc["summary"]["quco_gap_pct_geomean"]["r9-nano"] == pytest.approx(gap)
    with open(out, newline="") as f:
        assert [r["case"] for r in csv.DictReader(f)] == cases


def test_evaluate_plots_and_portability(capsys, tmp_path):
    doc = run_json(capsys, "evaluate", str(DOT), str(EXAMPLES_DIR / "elementwise-k.json"), "--gpu", "r9-nano",
                   "--gpu", "mi100", "--workers", "1", "--json", "--no-ablation", "--plot", str(tmp_path))
    assert doc["summary"]["fine_tuned_search"]["methods"] == {"exhaustive": 4, "coordinate descent": 0}
    port = doc["portability"]
    diagonal = [p["slowdown"] for p in port if p["source"] == p["target"]]
    assert diagonal and all(s == pytest.approx(1.0) for s in diagonal)
    assert all(p["slowdown"] is None or p["slowdown"] >= 1 - 1e-9 for p in port)
    assert {p.name for p in tmp_path.iterdir()} >= {"fig6.png", "fig6.svg", "fig1-gpus.png", "fig1-gpus.svg",
                                                    "fig1-kernels.png", "fig1-kernels.svg"}


def test_search_top_zero_lists_every_configuration_and_config_ranks_a_named_one(capsys):
    doc = run_json(capsys, "search", str(DOT), "--gpu", "r9-nano", "--json", "--top", "0", "--config", "1024/2")
    assert len(doc["top"]) == doc["evaluated"] and [t["rank"] for t in doc["top"]] == list(range(1, doc["evaluated"] + 1))
    named = doc["config"]
    assert named["label"] == "1024 / 2" and [q["slots"] for q in named["queues"]] == [2, 2]
    # the named configuration is one of the space: same cycles, and its rank counts the faster ones
    same = [t for t in doc["top"] if t["label"] == "1024 / 2"]
    assert same and same[0]["cycles"] == named["cycles"]
    assert named["rank"] == 1 + sum(1 for t in doc["top"] if t["cycles"] < named["cycles"])
    assert len(run_json(capsys, "search", str(DOT), "--json", "--top", "3")["top"]) == 3


@pytest.mark.parametrize("argv,message", [
    (["--config", "512"], "--config: '512': expected TILE/SLOTS"),
    (["--config", "8192/8"], "--config: 8192 / 8 does not fit"),
    (["--top", "-1"], "--top: -1 is out of range"),
])
def test_search_bad_config_or_top_exits_2(capsys, argv, message):
    assert main(["search", str(DOT), *argv]) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- what a newcomer reads (issue #28 part 3)
def terminal(monkeypatch, module):
    """`module.err` (or common.err) as a terminal whose output is kept: what a bar draws there."""
    import io

    from rich.console import Console
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=100, highlight=False, markup=False)
    monkeypatch.setattr(module, "err", con)
    return buf


def test_evaluate_draws_its_progress_on_stderr_and_stdout_starts_with_the_table(capsys, monkeypatch):
    from quco.cli import common
    bar = terminal(monkeypatch, common)
    assert main(["evaluate", str(DOT), "--gpu", "r9-nano", "--workers", "1", "--no-ablation",
                 "--no-portability"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.strip().startswith("r9-nano: performance normalised to the ideal")   # no empty line first
    assert "model" in bar.getvalue() and "\x1b[" not in out                          # the bar went to stderr
    assert "ATT/Fine-Tuned: 1 search, 51 configurations" in bar.getvalue()        # the space, said first


def test_evaluate_ablation_table_shows_what_fig7_draws(capsys):
    from quco.perfmodel import plots
    doc = run_json(capsys, "evaluate", str(DOT), "--gpu", "r9-nano", "--workers", "1", "--json", "--no-portability")
    pct = plots.ablation_pct(doc["rows"])
    assert main(["evaluate", str(DOT), "--gpu", "r9-nano", "--workers", "1", "--no-portability"]) == 0
    text = capsys.readouterr().out
    assert "ablation, cycles over the full QuCo (Fig. 7)" in text
    for (gpu, kernel, case), v in pct.items():
        assert f"{v:+.2f}%" in text


def test_launch_model_says_what_its_figures_are_of(capsys):
    assert main(["launch", str(MM_KERNEL), "--model"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    # Matrix-Matrix on the R9 Nano: QuCo's 512 / 4+4 holds one work-group per CU
    assert "1 work-group per CU" in text and "1 work-groups" not in text
    assert "GB/s over the whole GPU" in text and "of the GST's 512 GB/s" in text
