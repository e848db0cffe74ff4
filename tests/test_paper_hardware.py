"""The scorecard's real-hardware section (issue #31 part 4): its measures on hand-made H100 rows,
the chance of a random measured configuration, a failure of the hardware source named on its
claims, and the section end to end on a reduced measurement file (the rows computed against
values worked out from the file itself, the figure drawn and embedded)."""
import csv
import json

import pytest

from quco.cli import main as cli
from quco.paper import claims as claims_mod
from quco.paper import measures, ours, scorecard
from quco.paper.claims import Claim
from quco.paper.verdict import DIFFERS, HOLDS, MISSING, WITHIN
from quco.perfmodel import hardware as hw

SRC = "Real hardware (H100)"


def claim(kind="range", **fields) -> Claim:
    base = {"id": "hw", "source": SRC, "statement": "s", "paper": "p", "kind": kind, "measure": "hardware_value",
            "reason": "r"}
    return Claim(**(base | fields))


def row(kernel, size, **values) -> dict:
    return {"kernel": kernel, "size": size, "data": "h.csv", **values}


HAND = {("hardware",): {"data": "h.csv",
                        "rows": [row("EW", "big", quco_cost_pct=0.5, model_best_cost_pct=1.5, spearman=0.95),
                                 row("EW", "paper", quco_cost_pct=3.0, model_best_cost_pct=0.0, spearman=0.8),
                                 row("MV", "big", quco_cost_pct=None, model_best_cost_pct=0.2, spearman=0.9)],
                        # measured us of every TMA configuration: costs 0, 1, 2.5, 20, 100% over the best
                        "measured": {"EW/big": [100.0, 101.0, 102.5, 120.0, 200.0]},
                        "att": [{"kernel": "EW", "size": "big", "any": 0.99, "sync": 1.5, "model": 1.02},
                                {"kernel": "MM", "size": "paper", "any": 1.3, "sync": 1.05, "model": None}]},
        ("hardware", "heldout"): {"data": "h.csv", "rows": [row("EW", "big", spearman=0.7, held_out="streaming")],
                                  "measured": {"EW/big": [100.0, 101.0, 102.5, 120.0, 200.0]}}}


def test_a_column_of_one_kernel_and_size_from_the_full_fit_or_the_held_out_one():
    v = lambda **a: measures.compute("hardware_value", HAND, a)   # noqa: E731
    assert v(column="quco_cost_pct", kernel="EW", size="paper") == 3.0
    assert v(column="spearman", kernel="EW", size="big") == 0.95
    assert v(column="spearman", kernel="EW", size="big", heldout=True) == 0.7
    assert measures.MEASURES["hardware_value"].needs({"heldout": True}) == [("hardware", "heldout")]
    assert measures.MEASURES["hardware_value"].needs({}) == [("hardware",)]
    with pytest.raises(measures.SourceFailed, match=r"h.csv: no XX \(big\) compared.*EW \(big\), EW \(paper\)"):
        v(column="spearman", kernel="XX", size="big")


def test_the_mean_is_over_every_row_and_a_row_without_a_value_is_named():
    two = {("hardware",): {**HAND[("hardware",)], "rows": HAND[("hardware",)]["rows"][:2]}}
    assert measures.compute("hardware_mean", two, {"column": "quco_cost_pct"}) == pytest.approx(1.75)
    with pytest.raises(measures.SourceFailed, match=r"quco_cost_pct: no value for MV \(big\)"):
        measures.compute("hardware_mean", HAND, {"column": "quco_cost_pct"})


def test_att_against_plain_loads_one_kernel_or_every_kernel():
    assert measures.compute("hardware_att", HAND, {"kernel": "EW", "size": "big"}) == 0.99
    assert measures.compute("hardware_att", HAND, {"kernel": "EW", "size": "big", "loads": "sync"}) == 1.5
    with pytest.raises(measures.SourceFailed, match=r"no MV \(big\) with both TMA and plain-load rows"):
        measures.compute("hardware_att", HAND, {"kernel": "MV", "size": "big"})
    checks = measures.compute("hardware_att_all", HAND, {"bound": 1.1, "loads": "sync"})
    assert [(c.lhs, c.op, c.rhs) for c in checks] == [(1.5, ">=", 1.1), (1.05, ">=", 1.1)]
    assert "model 1.020" in checks[0].label and "model" not in checks[1].label
    c = claim("all", measure="hardware_att_all", args={"bound": 1.1, "loads": "sync"}, tolerance=0.0909)
    r = scorecard.row(c, HAND)
    assert (r["verdict"], r["way"], r["ours"]) == (WITHIN, "against", "1/2 hold")   # 1.05 >= 1.1 x (1 - 0.0909)


@pytest.mark.parametrize("args, lo, hi, verdict, way", [
    ({"column": "quco_cost_pct", "kernel": "EW", "size": "big"}, None, 1.04, HOLDS, ""),
    ({"column": "quco_cost_pct", "kernel": "EW", "size": "paper"}, None, 1.04, DIFFERS, "against"),
    ({"column": "spearman", "kernel": "EW", "size": "paper"}, 0.9, None, DIFFERS, "against"),
    ({"column": "quco_cost_pct", "kernel": "MV", "size": "big"}, None, 1.04, MISSING, ""),
])
def test_rows_are_judged_as_ranges_and_say_which_way(args, lo, hi, verdict, way):
    r = scorecard.row(claim(args=args, lo=lo, hi=hi, tolerance=1.74 if hi else 0.0, better="lower" if hi else "higher"),
                      HAND)
    assert (r["verdict"], r["way"]) == (verdict, way)


def test_the_chance_of_a_cost_is_the_share_of_measured_configurations_inside_the_bound():
    """The measured costs are 0, 1, 2.5, 20 and 100%: at most 1.04% passes 2 of 5, at most 2.5% 3 of 5."""
    c = claim(args={"column": "quco_cost_pct", "kernel": "EW", "size": "big"}, hi=1.04, better="lower")
    r = scorecard.row(c, HAND)
    assert r["chance"] == pytest.approx(0.4) and r["weight"] == "weak"      # declared evidence, 40% >= 25%
    c = claim(args={"column": "model_best_cost_pct", "kernel": "EW", "size": "big", "heldout": True}, hi=2.5,
              better="none")
    assert scorecard.row(c, HAND)["chance"] == pytest.approx(0.6)
    c = claim(args={"column": "spearman", "kernel": "EW", "size": "big"}, lo=0.9, better="none")
    assert scorecard.row(c, HAND)["chance"] is None       # no configuration under test


def test_the_claims_file_weighs_the_section_as_its_fits_say():
    """The model's rows on the full fit are calibration residuals (its H100 constants were fitted on
    this sweep); refitted without the kernel's family they are out-of-sample checks of the model
    ("model": counted apart from the paper's claims); QuCo's pick (the paper's rule set, not fitted
    on the sweep) and the measured ATT-vs-plain-loads ratios are evidence."""
    every = [c for c in claims_mod.load(measures=measures.MEASURES) if c.source == SRC]
    assert [c.id for c in every if c.measure == "hardware_mean"] == ["hw-quco-cost-mean"]
    every = [c for c in every if c.measure != "hardware_mean"]
    model = [c for c in every if c.args.get("column") in ("spearman", "model_best_cost_pct")]
    assert model and all(c.weight == ("model" if c.args.get("heldout") else "fitted") for c in model)
    assert {c.weight for c in every if c not in model} == {"evidence"}
    kernels = {(c.args["kernel"], c.args["size"]) for c in model}
    assert all(c.args["kernel"] in hw.COMPARED for c in every if c.args.get("column"))
    # every kernel x size has its three rows, on both fits
    for column in ("quco_cost_pct", "model_best_cost_pct", "spearman"):
        assert {(c.args["kernel"], c.args["size"]) for c in every
                if c.args.get("column") == column and not c.args.get("heldout")} == kernels
    assert all(c.quote for c in every)


# ---------------------------------------------------------------- a failure of the source
BAD = "kernel,variant,size,work_groups,tile,slots,block_m,block_k,fits,time_us,bytes,gbps,smem_required\n" \
      "Elementwise,att,paper,256,512,2,,,yes,-3,,,\n"


@pytest.mark.parametrize("key", [("hardware",), ("hardware", "heldout")])
def test_a_bad_measurement_file_is_named_on_every_claim_that_needs_it(tmp_path, monkeypatch, key):
    bad = tmp_path / "sweep.csv"
    bad.write_text(BAD)
    monkeypatch.setattr(ours, "HARDWARE_DATA", bad)
    out = ours.source((key, None))
    assert "HardwareDataError" in out["error"] and "sweep.csv: line 2: field time_us: '-3'" in out["error"]
    args = {"column": "spearman", "kernel": "Elementwise", "size": "paper", "heldout": len(key) == 2}
    r = scorecard.row(claim(args=args, lo=0.9, better="none"), {key: out})
    assert r["verdict"] == MISSING and "sweep.csv: line 2: field time_us" in r["why_missing"]
    assert r["chance"] is None


# ---------------------------------------------------------------- end to end on a reduced file
def _reduced(tmp_path) -> tuple:
    """The shipped sweep's Elementwise rows at Table III's grid (TMA and plain loads): 256
    work-groups, the cheapest to model."""
    with open(hw.DEFAULT_DATA, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    keep = [rows[0]] + [r for r in rows[1:] if r[0] == "Elementwise" and r[2] == "paper" and r[1] in ("att", "pointer")]
    path = tmp_path / "reduced.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(keep)
    return path, [hw.Measurement(r[0], r[1], r[2], int(r[3]), int(r[4]), int(r[5]), r[8] == "yes",
                                 float(r[9]) if r[9] else None) for r in keep[1:]]


IDS = ["hw-quco-cost-elementwise-paper", "hw-fine-cost-elementwise-paper", "hw-model-rank-elementwise-paper",
       "hw-att-earlier-elementwise-paper", "hw-quco-cost-mean", "hw-att-earlier-than-sync-loads"]


@pytest.mark.firmware
def test_the_section_end_to_end_on_a_reduced_file(tmp_path, monkeypatch, capsys):
    path, measured = _reduced(tmp_path)
    monkeypatch.setattr(ours, "HARDWARE_DATA", path)
    out = tmp_path / "paper"
    assert cli.main(["paper", "--claims", ",".join(IDS), "--workers", "1", "--out", str(out)]) == 0
    assert "6 claims in all" in capsys.readouterr().out
    with open(out / "rows.csv", newline="", encoding="utf-8") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == sorted(IDS) and all(r["verdict"] != MISSING for r in rows.values())
    # independent of the pipeline: each value worked out from the reduced file itself
    tma = {(m.tile, m.slots): m.time_us for m in measured if m.variant == "att" and m.fits}
    plain = [m.time_us for m in measured if m.variant == "pointer" and m.fits]
    sync = [m.time_us for m in measured if m.variant == "pointer" and m.fits and m.slots == 1]
    best = min(tma.values())
    ratio = json.loads(rows["hw-att-earlier-elementwise-paper"]["value"])
    assert ratio == pytest.approx(min(plain) / best)
    assert json.loads(rows["hw-att-earlier-than-sync-loads"]["value"])[0]["lhs"] == pytest.approx(min(sync) / best)
    # QuCo's pick (the firmware's label, "tile/slots") looked up in the file
    detail = json.loads(rows["hw-quco-cost-elementwise-paper"]["value"])
    source = ours._hardware(firmware=None)
    pick = source["rows"][0]["quco_pick"]
    tile, slots = map(int, pick.split("/"))
    assert detail == pytest.approx(100 * (tma[(tile, slots)] / best - 1))
    assert json.loads(rows["hw-quco-cost-mean"]["value"]) == pytest.approx(detail)       # one row: its mean
    # the model's best: its measured cost, and the chance is the share of configurations within 1%
    fine = json.loads(rows["hw-fine-cost-elementwise-paper"]["value"])
    assert any(fine == pytest.approx(100 * (t / best - 1)) for t in tma.values())
    assert float(rows["hw-fine-cost-elementwise-paper"]["chance"]) == pytest.approx(
        sum(100 * (t / best - 1) <= 1.0 for t in tma.values()) / len(tma), abs=1e-4)
    assert -1.0 <= json.loads(rows["hw-model-rank-elementwise-paper"]["value"]) <= 1.0
    assert rows["hw-model-rank-elementwise-paper"]["weight"] == "fitted"
    # the figure, drawn and embedded under the section with its reading
    png = out / "hardware-h100.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "hardware-h100.svg").is_file()
    report = (out / "report.md").read_text()
    section = report[report.index(f"## {SRC}"):]
    assert "(hardware-h100.png)" in section and f"of {len(tma)} configurations faster than measured" in section
    assert "twin kernels" not in section   # the reduced file has Elementwise only: no noise is claimed


def test_the_caption_states_the_twin_kernels_noise():
    from quco.paper import figures
    noise = [{"size": "big", "pairs": 63, "sigma_pct": 0.0612, "glitches": 0},
             {"size": "paper", "pairs": 63, "sigma_pct": 0.2149, "glitches": 3}]
    text = figures._noise_sentence({("hardware",): {"rows": [], "noise": noise}})
    assert "0.06% at the big size (63 pairs, 0 glitches), 0.21% at the paper size (63 pairs, 3 glitches)" in text
    assert figures._noise_sentence({("hardware",): {"rows": [], "noise": []}}) == ""
