"""quco-emu paper: the claims file, the verdicts on hand-made values, the measures on
hand-made sources, and a reduced scorecard end to end (files, bad input, interruption)."""
import copy
import json

import pytest

from quco.paper import claims as claims_mod
from quco.paper.claims import Claim, ClaimsError, parse
from quco.paper.verdict import (DIFFERS, HOLDS, MISSING, NO_VERDICT, WITHIN, Check, Pick, judge,
                                judge_checks, show)


def claim(kind, **fields) -> Claim:
    return Claim(id="t", source="Fig. 0", statement="s", paper="p", kind=kind, measure="m", reason="r", **fields)


# ---------------------------------------------------------------- verdicts
@pytest.mark.parametrize("tiles, slots, pick, expected", [
    ((512,), (4,), Pick(512, 4, "512 / 4+2"), HOLDS),
    ((512,), (4,), Pick(512, 2, "512 / 2+2"), DIFFERS),           # slots differ
    ((512,), (4,), Pick(1024, 4, "1024 / 4+2"), DIFFERS),         # tile differs
    ((1024, 2048), (4, 8), Pick(2048, 8, ""), HOLDS),             # one of several
    (None, (4, 8), Pick(64, 4, ""), HOLDS),                       # tile not claimed
    ((256,), None, Pick(256, 1, ""), HOLDS),                      # slots not claimed
    ((512,), (4,), Pick(512, None, "512 / 4+2"), DIFFERS),        # streaming queues disagree
    ((512,), (4,), None, MISSING),
])
def test_a_pick_is_exact(tiles, slots, pick, expected):
    assert judge(claim("pick", tiles=tiles, slots=slots), pick) == expected


@pytest.mark.parametrize("lo, hi, tol, ours, expected", [
    (1.145, 1.155, 0.05, 1.15, HOLDS),
    (1.145, 1.155, 0.05, 1.19, WITHIN),        # 0.035 above hi
    (1.145, 1.155, 0.05, 1.21, DIFFERS),       # 0.055 above hi
    (1.145, 1.155, 0.05, 1.095, WITHIN),       # exactly the tolerance below lo
    (1.145, 1.155, 0.05, 1.094, DIFFERS),
    (None, 1.04, 1.74, -0.5, HOLDS),           # an upper bound: less is fine
    (None, 1.04, 1.74, 1.04 + 3e-16, HOLDS),   # float noise on the bound
    (None, 1.04, 1.74, 2.78, WITHIN),
    (None, 1.04, 1.74, 2.79, DIFFERS),
    (1.0, None, 0.0, 0.9999, DIFFERS),         # no tolerance: a miss is a miss
    (6300, 8300, 0, [7000, 8000], HOLDS),      # every value must be in range
    (6300, 8300, 0, [7000, 1092], DIFFERS),
    (6300, 8300, 100, [8350, 7000], WITHIN),
    (6300, 8300, 0, [7000, None], MISSING),    # one value unknown, the rest fine
    (6300, 8300, 0, [1092, None], DIFFERS),    # a known miss outweighs an unknown
    (1.0, 2.0, 0.0, None, MISSING),
    (1.0, 2.0, 0.0, float("nan"), MISSING),
    (1.0, 2.0, 0.0, [], MISSING),
])
def test_a_range_with_its_tolerance(lo, hi, tol, ours, expected):
    assert judge(claim("range", lo=lo, hi=hi, tolerance=tol), ours) == expected


def test_comparisons_all_and_any():
    up = Check("a", 2.0, ">", 1.0)
    near = Check("b", 0.995, ">", 1.0)       # misses by 0.5% of the right-hand side
    down = Check("c", 0.9, ">", 1.0)
    gone = Check("d", None, ">", 1.0)
    assert judge_checks([up, up], 0.01) == HOLDS
    assert judge_checks([up, near], 0.01) == WITHIN
    assert judge_checks([up, near], 0.0) == DIFFERS          # no tolerance: near is a miss
    assert judge_checks([up, down], 0.01) == DIFFERS
    assert judge_checks([up, gone], 0.01) == MISSING
    assert judge_checks([down, gone], 0.01) == DIFFERS       # known to fail whatever the missing one is
    assert judge_checks([], 0.01) == MISSING
    assert judge_checks([down, up], 0.0, "any") == HOLDS
    assert judge_checks([down, near], 0.01, "any") == WITHIN
    assert judge_checks([down, gone], 0.0, "any") == MISSING
    assert judge_checks([down, down], 0.5, "any") == WITHIN  # 0.9 > 1.0 x (1 - 0.5)
    assert judge_checks([down], 0.0, "any") == DIFFERS


def test_comparisons_below_and_equal():
    assert judge_checks([Check("x", 0.5, "<", 0.8)], 0.0) == HOLDS
    assert judge_checks([Check("x", 0.9, "<", 0.8)], 0.25) == WITHIN    # 0.9 < 0.8 x 1.25
    assert judge_checks([Check("x", 1.0, "<", 0.8)], 0.25) == DIFFERS   # a tie at the loose bound fails
    assert judge_checks([Check("x", 1.0, "<=", 0.8)], 0.25) == WITHIN
    assert judge_checks([Check("x", "512 / 2", "==", "512 / 2")], 0.0) == HOLDS
    assert judge_checks([Check("x", "512 / 2", "==", "256 / 2")], 0.5) == DIFFERS  # no tolerance on equality
    assert judge_checks([Check("x", 512, "!=", 1024)], 0.0) == HOLDS
    assert judge_checks([Check("x", 512, "!=", 512)], 0.5) == DIFFERS
    with pytest.raises(ValueError, match="operator"):
        judge_checks([Check("x", 1, "<>", 2)], 0.0)


def test_no_verdict_is_never_judged():
    assert judge(claim("no_verdict"), Pick(512, 4, "512 / 4")) == NO_VERDICT
    assert judge(claim("no_verdict"), None) == NO_VERDICT


def test_ours_is_shown_readably():
    assert show(claim("range", unit="x"), 1.25) == "1.250x"
    assert show(claim("range", unit="%"), 0.5) == "+0.50%"
    assert show(claim("range", unit="instructions"), [1092, 1450, 1200]) == "1,092 to 1,450 instructions (3 values)"
    assert show(claim("pick"), Pick(512, 4, "512 / 4+2")) == "512 / 4+2"
    checks = [Check("MM", 1.0, ">", 0.5), Check("MV", 0.2, ">", 0.5)]
    assert show(claim("all"), checks) == "1/2 hold"
    assert show(claim("all"), checks[1:]) == "0.2 vs 0.5"
    assert "MV: 0.2 > 0.5 (differs)" in show(claim("all"), checks, detail=True)
    assert show(claim("range"), None) == "n/a"


# ---------------------------------------------------------------- the claims file
GOOD = {"reasons": {"exact": "picks are exact", "fit": "the rules were chosen on it"},
        "claim": [{"id": "a-1", "source": "Table III", "statement": "s", "paper": "512 / 4", "kind": "pick",
                   "tiles": [512], "slots": [4], "reason": "@exact", "measure": "firmware_pick",
                   "args": {"gpu": "r9-nano", "kernel": "matrix-matrix"}, "weight": "fitted", "weight_reason": "@fit"},
                  {"id": "b-2", "source": "Fig. 7", "statement": "s", "paper": "up to 1.25x", "kind": "range",
                   "lo": 1.2, "hi": 1.3, "tolerance": 0.05, "reason": "read off a bar", "measure": "cycles_ratio",
                   "weight": "evidence", "weight_reason": "nothing fitted on Fig. 7", "better": "higher",
                   "quote": "up to 25%"}]}


def test_a_claims_file_parses_and_resolves_named_reasons():
    a, b = parse(copy.deepcopy(GOOD), "c.toml", measures={"firmware_pick", "cycles_ratio"})
    assert (a.reason, a.tiles, a.slots, a.args["kernel"]) == ("picks are exact", (512,), (4,), "matrix-matrix")
    assert (a.weight, a.weight_reason, a.better) == ("fitted", "the rules were chosen on it", None)
    assert (b.lo, b.hi, b.tolerance, b.reason) == (1.2, 1.3, 0.05, "read off a bar")
    assert (b.weight, b.weight_reason, b.better, b.quote) == ("evidence", "nothing fitted on Fig. 7", "higher", "up to 25%")


@pytest.mark.parametrize("change, words", [
    (lambda d: d["claim"][1].update(id="a-1"), "a-1' is used twice"),
    (lambda d: d["claim"][0].update(reason="@nope"), "'@nope' names no entry of [reasons]"),
    (lambda d: d["claim"][0].update(measure="nothing"), "measure: 'nothing' is not one of"),
    (lambda d: d["claim"][0].pop("tiles") and d["claim"][0].pop("slots"), "a pick gives tiles, slots or both"),
    (lambda d: d["claim"][1].update(lo=2.0), "lo 2.0 is above hi 1.3"),
    (lambda d: d["claim"][1].update(tiles=[512]), "tiles: only for kind pick"),
    (lambda d: d["claim"][1].update(kind="maybe"), "kind"),
    (lambda d: d["claim"][1].update(tolerance=-1), "tolerance"),
    (lambda d: d["claim"][1].pop("reason"), "reason"),
    (lambda d: d["claim"][1].pop("weight"), "claim[1].weight: missing"),
    (lambda d: d["claim"][1].update(weight="weak"), "claim[1].weight"),           # weak is computed, never declared
    (lambda d: d["claim"][0].pop("weight_reason"), "claim[0].weight_reason: missing"),
    (lambda d: d["claim"][0].update(weight_reason="@nope"), "weight_reason: '@nope' names no entry of [reasons]"),
    (lambda d: d["claim"][1].pop("better"), "a range says which side of a miss favours QuCo"),
    (lambda d: d["claim"][1].update(better="up"), "claim[1].better"),
])
def test_a_bad_claims_file_is_refused_with_the_claim_and_field(change, words):
    doc = copy.deepcopy(GOOD)
    change(doc)
    with pytest.raises(ClaimsError) as e:
        parse(doc, "c.toml", measures={"firmware_pick", "cycles_ratio"})
    assert words in str(e.value) and "c.toml" in str(e.value)


def test_the_bundled_claims_load_and_cover_the_papers_sources():
    from quco.paper import measures
    every = claims_mod.load(measures=measures.MEASURES)
    sources = {c.source.split(" (")[0] for c in every}
    assert {"Table III", "Fig. 1", "Fig. 5", "Fig. 6", "Fig. 7", "Fig. 8", "Fig. 9", "Fig. 10", "Fig. 12",
            "Section VI"} <= sources
    # Table III: both published GPUs' QuCo and Fine-Tuned columns, the Radeon 530's unjudged
    t3 = [c for c in every if c.source == "Table III" and c.kind == "pick"]
    assert len(t3) == 32 and all(len(c.tiles) == 1 and len(c.slots) == 1 for c in t3)
    radeon = [c for c in every if c.args.get("gpu") == "radeon-530" and c.source == "Table III"]
    assert len(radeon) == 8 and {c.kind for c in radeon} == {"no_verdict"} and {c.paper for c in radeon} == {"withheld"}
    assert all(c.reason and not c.reason.startswith("@") for c in every)
    with pytest.raises(ClaimsError, match="unknown claim id 'nope'"):
        claims_mod.select(every, ["nope"])


# ---------------------------------------------------------------- measures on hand-made sources
from quco.paper import measures  # noqa: E402


def kernel_source(gpu, stem, cycles: dict, ideal=100.0, fine=None):
    rows = [{"gpu": gpu, "kernel": stem.title(), "case": case, "cycles": c, "ideal_cycles": ideal,
             "fine_cycles": fine or cycles.get("ATT/Fine-Tuned"), "tile": 512, "slots": "2/2", "config": "512 / 2",
             "vs_fine_pct": None if c is None else 100.0 * (c / cycles["ATT/Fine-Tuned"] - 1.0)}
            for case, c in cycles.items()]
    return {"gpu": gpu, "stem": stem, "name": stem.title(), "streaming": [True, False], "rows": rows}


def test_pick_of_takes_the_streaming_queues_slots():
    assert measures.pick_of(512, [4, 4, 2], [True, True, False], "512 / 4+2").slots == 4
    assert measures.pick_of(512, [4, 2, 2], [True, True, False], "").slots is None   # streaming queues disagree
    assert measures.pick_of(2048, [2], [True], "2048 / 2").slots == 2


def test_find_layer_counts_the_papers_names_in_model_order():
    layers = [{"type": "Conv1d-1", "name": "c1"}, {"type": "Conv1d-2", "name": "c2"}, {"type": "FC-1", "name": "q"},
              {"type": "FC-1", "name": "k"}, {"type": "FC-2", "name": "fc1"}, {"type": None, "name": "x"}]
    assert measures.find_layer(layers, "FC-3")["name"] == "fc1"
    assert measures.find_layer(layers, "Conv1d-2")["name"] == "c2"
    assert measures.find_layer(layers, "first")["name"] == "c1"
    with pytest.raises(measures.SourceFailed, match="no layer FC-4: 3 layers"):
        measures.find_layer(layers, "FC-4")


def test_kernel_measures_on_hand_made_rows(monkeypatch):
    monkeypatch.setattr(measures.ours, "stems", lambda gpu: ["a", "b"])
    cycles = {"NoATT/Non-Tuned": 400.0, "NoATT/Fine-Tuned": 150.0, "ATT/Non-Tuned": 300.0,
              "ATT/Informed-Tuned": 120.0, "ATT/Fine-Tuned": 100.0, "QuCo": 101.0}
    src = {("kernel", "g", "a"): kernel_source("g", "a", cycles),
           ("kernel", "g", "b"): kernel_source("g", "b", {**cycles, "QuCo": 103.0, "ATT/Informed-Tuned": 102.0})}
    assert measures.compute("mean_gap", src, {"gpu": "g"}) == pytest.approx(2.0)        # (1% + 3%) / 2
    assert measures.compute("cycles_ratio", src, {"gpu": "g", "kernels": ["a", "b"], "num": "NoATT/Fine-Tuned",
                                                  "den": "QuCo"}) == pytest.approx(150 / 101)
    order = measures.compute("fig6_order", src, {"gpu": "g", "kernel": "b"})
    assert judge_checks(order, 0.0) == DIFFERS and judge_checks(order, 0.01) == WITHIN   # 103 vs 102: 1% off
    far = measures.compute("lowest_case", src, {"gpu": "g", "case": "NoATT/Non-Tuned", "factor": 0.8})
    assert judge_checks(far, 0.25) == HOLDS                                  # 0.25 < 0.8 x 0.333
    assert measures.compute("best_case_perf", src, {"gpu": "g", "kernel": "a"}) == pytest.approx(1.0)
    src[("kernel", "g", "b")]["rows"][-1].update(cycles=None, vs_fine_pct=None)   # QuCo's pick did not fit
    assert measures.compute("mean_gap", src, {"gpu": "g"}) is None
    assert judge(claim("range", hi=1.04, tolerance=1.74), measures.compute("mean_gap", src, {"gpu": "g"})) == MISSING


def test_the_papers_pick_on_our_model_against_our_best(monkeypatch):
    src = {("kernel", "g", "a"): {**kernel_source("g", "a", {"ATT/Fine-Tuned": 100.0}),
                                  "by_pick": {"512/2": 100.0, "1024/2": 100.5, "512/4": 103.0}}}
    def gap(tile, slots):
        return measures.compute("pick_gap", src, {"gpu": "g", "kernel": "a", "tile": tile, "slots": slots})
    assert gap(512, 2) == pytest.approx(0.0) and gap(1024, 2) == pytest.approx(0.5) and gap(512, 4) == pytest.approx(3.0)
    within_1pct = claim("range", lo=0, hi=1, tolerance=2)
    assert [judge(within_1pct, gap(*p)) for p in ((1024, 2), (512, 4))] == [HOLDS, WITHIN]
    assert judge(within_1pct, 3.5) == DIFFERS
    with pytest.raises(measures.SourceFailed, match="2048 / 8 does not fit g's LDS"):
        gap(2048, 8)


def test_best_by_pick_is_the_best_stationary_slots_for_each_streaming_pick():
    from quco.paper import ours
    from quco.perfmodel import search
    from quco.perfmodel.params import machine
    from quco.perfmodel.work import Work
    from quco.gst import tables
    k = ours.kernel("r9-nano", "matrix-vector")
    table, space = ours._space(k, tables.load("r9-nano"))
    g, work = tables.unpack(tables.load("r9-nano")), Work.of(k)
    ranked = search.exhaustive(machine(g), g, work)
    # by hand: the cheapest configuration with tile 512 and 2 slots on all eight streaming queues
    by_hand = min(r.outcome.cycles for r in ranked if r.config.tile == 512 and set(r.config.slots[:8]) == {2})
    assert table["512/2"] == by_hand
    assert min(table.values()) == ranked[0].outcome.cycles
    # the space is every point Fine-Tuned searched, best first, streaming slots as one number
    assert len(space) == len(ranked) and [p[2] for p in space] == [r.outcome.cycles for r in ranked]
    assert all(p[1] == r.config.slots[0] for p, r in zip(space, ranked))   # the eight streaming queues share one


def test_a_failed_source_is_named_on_the_claim():
    from quco.paper import scorecard
    c = Claim(id="x", source="Fig. 9", statement="s", paper="p", kind="range", measure="workload_speedup",
              reason="r", args={"workloads": ["w"], "over": "fine"}, lo=1.0)
    row = scorecard.row(c, {("workload", "w"): {"error": "UnitError: layer 3 refused"}})
    assert row["verdict"] == MISSING and "UnitError: layer 3 refused" in row["why_missing"]
    row = scorecard.row(c, {})
    assert row["verdict"] == MISSING and "was not computed" in row["why_missing"]
    row = scorecard.row(c, {("workload", "w"): {"summary": {}}})        # a source of another shape
    assert row["verdict"] == MISSING and "KeyError" in row["why_missing"]


def test_portability_and_dvfs_measures():
    port = [{"kind": "gpu", "scope": "MM", "source": "r9", "target": "mi", "slowdown": 1.3},
            {"kind": "gpu", "scope": "MM", "source": "mi", "target": "r9", "slowdown": 2.0},
            {"kind": "gpu", "scope": "MM", "source": "r9", "target": "r9", "slowdown": 1.0},
            {"kind": "gpu", "scope": "MM", "source": "r9", "target": "rx", "slowdown": None}]
    src = {("portability",): port}
    assert measures.compute("portability_max", src, {"kind": "gpu", "scope": "MM", "source": "r9",
                                                     "targets": ["mi", "rx"]}) == 1.3
    assert measures.compute("portability_max", src, {"kind": "kernel", "scope": "MM"}) is None
    rows = [{"name": f"l{i}", "type": t, "clock_mhz": c, "hw_config": h, "sw_config": "512 / 2"}
            for i, (t, c, h) in enumerate([("C-1", 1500, "512 / 2"), ("FC-1", 1500, "512 / 2"), ("FC-1", 1300, "256 / 2")])]
    checks = measures.compute("dvfs_first_same", {("dvfs", "t"): {"rows": rows}}, {"traces": ["t"]})
    assert [c.label for c in checks] == ["t: l0", "t: l1"] and judge_checks(checks, 0.0) == HOLDS


# ---------------------------------------------------------------- the command, end to end
import csv  # noqa: E402

from quco.cli import main as cli  # noqa: E402

# a reduced scorecard: the firmware's pick, the model's best and two Fig. 6/7 rows of one kernel
# on the R9 Nano (about a second in this process)
FEW = ("table3-r9-nano-quco-matrix-matrix,table3-r9-nano-fine-matrix-matrix,fig6-order-matrix-matrix,"
       "fig7-cu-off-slots-matrix-matrix")


@pytest.mark.firmware
def test_a_reduced_scorecard_prints_the_table_and_writes_the_report(capsys, tmp_path):
    out = tmp_path / "paper"
    assert cli.main(["paper", "--claims", FEW, "--gpu", "r9-nano", "--workers", "1", "--out", str(out), "--table"]) == 0
    printed = capsys.readouterr().out
    ids = FEW.split(",")
    assert all(i in printed for i in ids)
    summary = next(line for line in printed.splitlines() if line.startswith("scorecard: "))
    assert " evidence claims reproduced (hold); 4 claims in all" in summary
    assert "report.md explains every row" in printed and "evidence that holds" in printed
    with open(out / "rows.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ids
    assert {r["verdict"] for r in rows} <= {HOLDS, WITHIN, DIFFERS} and all(r["reason"] for r in rows)
    # the firmware's pick as the table shows it, tile first
    assert rows[0]["ours"].startswith(json.loads(rows[0]["value"])["label"].split(" /")[0])
    report = (out / "report.md").read_text()
    assert all(f"`{i}`" in report for i in ids) and "(fig6.png)" in report and "(fig7.png)" in report
    for stem in ("fig6", "fig7", "fig10", "scorecard"):
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / f"{stem}.svg").read_text().lstrip().startswith("<?xml")
    assert not [p for p in out.iterdir() if p.name.startswith(".")]     # no temporary folder left


@pytest.mark.firmware
def test_json_rows(capsys):
    assert cli.main(["paper", "--claims", "table3-r9-nano-quco-matrix-matrix", "--workers", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["rows"]
    assert row["paper"] == "512 / 4" and row["value"]["tile"] in (64, 128, 256, 512, 1024, 2048, 4096, 8192)
    assert sum(doc["summary"].values()) == 1


@pytest.mark.firmware
def test_an_interrupted_run_leaves_the_previous_report_whole(capsys, tmp_path, monkeypatch):
    out = tmp_path / "paper"
    args = ["paper", "--claims", "table3-r9-nano-quco-matrix-matrix", "--workers", "1", "--out", str(out)]
    assert cli.main(args) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    from quco.paper import report

    def interrupted(rows):
        raise KeyboardInterrupt
    monkeypatch.setattr(report, "csv_text", interrupted)   # after the figures, before anything is moved
    assert cli.main(args) == 130    # Ctrl-C: the CLI's own exit code, one word, no traceback
    assert capsys.readouterr().err.strip().endswith("interrupted")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before    # no partial file, no temporary folder


@pytest.mark.parametrize("extra, words", [
    (["--claims", "no-such-claim"], "unknown claim id 'no-such-claim'"),
    (["--claims", ","], "--claims: no claim id given"),
    (["--scheduler", "not an address"], "--scheduler 'not an address': expected a Dask scheduler address"),
])
def test_bad_options_exit_2_with_a_message(capsys, extra, words):
    assert cli.main(["paper", *extra]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "²", "٣", "9" * 5000])
def test_workers_are_checked_like_evaluates(capsys, value):
    """--workers and --scheduler are the sweep options every command shares (cli/common.py):
    the same whole number 1..1024 in ASCII digits, the same messages, exit 2."""
    with pytest.raises(SystemExit) as e:
        cli.main(["paper", "--workers", value])
    assert e.value.code == 2
    assert "argument --workers:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["evaluate", "--workers", value])
    assert "expected a whole number 1..1024 in digits 0-9" in capsys.readouterr().err


def test_workers_with_a_remote_scheduler_is_refused_as_by_evaluate(capsys):
    for command in ("paper", "evaluate"):
        assert cli.main([command, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"]) == 2
        assert "--workers 2: local worker processes; the scheduler tcp://127.0.0.1:1 has its own workers" \
            in capsys.readouterr().err


def test_an_out_that_is_a_file_or_under_one_exits_2_before_any_work(capsys, tmp_path, monkeypatch):
    from quco.paper import ours
    monkeypatch.setattr(ours, "compute", lambda *a, **k: pytest.fail("computed before checking --out"))
    f = tmp_path / "f"
    f.write_text("mine")
    for out, words in ((f, "exists and is not a folder"), (f / "sub", "cannot write there")):
        assert cli.main(["paper", "--claims", "fig1-across-kernels-up-to-1.2x", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert words in err and str(out) in err
    assert f.read_text() == "mine"


def test_an_unreachable_scheduler_exits_2(capsys, tmp_path, monkeypatch):
    from quco.util import parallel
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 0.5)  # the bound that ends the wait: test_hostile_24.py
    code = cli.main(["paper", "--claims", "table3-r9-nano-quco-matrix-matrix", "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 2
    assert "cannot reach Dask scheduler tcp://127.0.0.1:9" in capsys.readouterr().err


@pytest.mark.firmware
def test_the_launch_source_is_the_firmwares_cold_pick_on_each_kernel():
    """Each kernel on a freshly booted unit (Elementwise and Sumvectors send the same record:
    on one unit the second would be a cache hit), and the pick is the reference model's."""
    from quco.gst import tables
    from quco.host import reference
    from quco.paper import ours
    src = ours.source((("launch", "r9-nano"), None))
    gst = tables.load("r9-nano")
    assert list(src["kernels"]) == list(ours.TABLE_III)
    for stem, k in src["kernels"].items():
        ref = reference.configure(gst, ours.kernel("r9-nano", stem).record())
        assert (k["ok"], k["cache_hit"], k["tile"], k["slots"]) == (True, False, ref.tile, list(ref.slots))
        assert k["instructions"] > 0 and k["reconf_ns"] > 0
    assert src["kernels"]["elementwise"]["instructions"] == src["kernels"]["sumvectors"]["instructions"]


@pytest.mark.firmware
def test_the_same_claims_give_the_same_bytes(tmp_path):
    files = []
    for run in ("a", "b"):
        assert cli.main(["paper", "--claims", "table3-r9-nano-quco-dot-product", "--workers", "1",
                         "--out", str(tmp_path / run)]) == 0
        files.append({p.name: p.read_bytes() for p in (tmp_path / run).iterdir()})
    # the command line in report.md names its own --out: compare the report without it
    strip = lambda text: text.replace(b"/a`", b"`").replace(b"/b`", b"`")   # noqa: E731
    files = [{n: strip(b) for n, b in f.items()} for f in files]
    assert files[0] == files[1] and {"report.md", "rows.csv", "scorecard.png", "scorecard.svg"} <= set(files[0])


def test_gpu_selection_keeps_the_claims_that_run_on_those_gpus_alone():
    from quco.paper import scorecard
    every = claims_mod.load(measures=measures.MEASURES)
    r9 = scorecard.select(every, gpus=["r9-nano"])
    keys = [k for c in r9 for k in scorecard.needs(c)]
    assert keys and all(k[0] in ("launch", "kernel", "workload") for k in keys)
    assert all(k[1] == "r9-nano" for k in keys if k[0] != "workload")
    assert "fig1-across-kernels-up-to-1.2x" not in {c.id for c in r9}          # needs all three GPUs
    assert "fig12-fc5-hw-tile-256" in {c.id for c in scorecard.select(every, gpus=["mi100"])}
    hw = scorecard.select(every, gpus=[measures.ours.HARDWARE_GPU])     # the real-hardware section alone
    assert hw and {c.source for c in hw} == {"Real hardware (H100)", "quco+ (ours, not the paper's rule set)"}
    assert all(c.id.startswith("plus-hw-") for c in hw if c.source != "Real hardware (H100)")   # quco+'s twins
    assert len(scorecard.select(every, gpus=list(measures.ours.GPUS))) == len(every) - len(hw)
    assert len(scorecard.select(every, gpus=[*measures.ours.GPUS, measures.ours.HARDWARE_GPU])) == len(every)


def test_figures_from_hand_made_workload_dvfs_and_portability_sources(tmp_path):
    from quco.paper import figures
    summary = {"semi_ns": 120.0, "fine_ns": 100.0, "quco_ns": 105.0}
    rows = [{"index": i, "name": f"l{i}", "clock_mhz": c, "hw_speedup": 1.0, "hw_ns": 10.0, "sw_ns": 10.0}
            for i, c in enumerate((1500, 1300))]
    layers = [{"quco_config": c} for c in ("512 / 2", "512 / 2", "256 / 4")]
    src = {("workload", "w"): {"title": "W", "gpu": "r9-nano", "summary": summary, "layers": layers},
           ("dvfs", "t"): {"rows": rows, "trace": "t", "summary": {"trace": "t", "trace_layers": 2}},
           ("portability",): [{"kind": "gpu", "scope": "Matrix-Matrix", "source": a, "target": b, "slowdown": 1.1}
                              for a in ("x", "y") for b in ("x", "y")],
           ("workload", "broken"): {"error": "UnitError: refused"}}   # left out, not drawn
    drawn = figures.draw(src, [], tmp_path)
    assert [source for source, _, _ in drawn] == ["Fig. 1", "Fig. 8", "Fig. 11", "Fig. 12"]
    # Fig. 1's kinds are drawn apart (fig1-gpus, fig1-kernels); only "gpu" rows here
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dvfs-t.png", "dvfs-t.svg", "fig1-gpus.png", "fig1-gpus.svg",
                                                          "fig11.png", "fig11.svg", "fig8.png", "fig8.svg"]


def test_a_dvfs_figure_draws_the_whole_run_the_hold_phase_included():
    """The trace names 3 clocks; the run has 6 layers, the last clock holding for three: every
    layer is drawn, and the cumulative line is SW's time so far over HW's (by hand)."""
    from quco.paper import figures
    clocks, sw, hw = (1500, 1200, 1000, 1000, 1000, 1000), (10, 10, 20, 20, 20, 20), (10, 8, 16, 16, 20, 25)
    rows = [{"clock_mhz": c, "sw_ns": s, "hw_ns": h} for c, s, h in zip(clocks, sw, hw)]
    x, per_layer, cumulative, drawn_clocks = figures.trace_lines(rows)
    assert x == [1, 2, 3, 4, 5, 6] and list(drawn_clocks) == list(clocks)
    assert per_layer == pytest.approx([1.0, 1.25, 1.25, 1.25, 1.0, 0.8])
    assert cumulative == pytest.approx([1.0, 20 / 18, 40 / 34, 60 / 50, 80 / 70, 100 / 95])


# ---------------------------------------------------------------- against an earlier run
def test_changes_since_a_baseline(tmp_path):
    from quco.paper import scorecard
    base = tmp_path / "rows.csv"
    base.write_text("id,verdict,ours,paper\na,differs,512 / 2,x\nb,holds,1.0x,x\nc,differs,0.9x,x\n"
                    "d,no verdict,64 / 1,x\ngone,holds,1,x\n")
    before = scorecard.read_baseline(base)
    now = [{"id": "a", "verdict": "holds", "ours": "512 / 4"}, {"id": "b", "verdict": "within tolerance", "ours": "1.1x"},
           {"id": "c", "verdict": "differs", "ours": "0.9x"}, {"id": "d", "verdict": "no verdict", "ours": "128 / 1"},
           {"id": "new", "verdict": "differs", "ours": "2"}]
    got = {c["id"]: c["trend"] for c in scorecard.changes(now, before)}
    assert got == {"a": "better", "b": "worse", "d": "changed", "new": "changed"}   # c is unchanged
    assert scorecard.trend_line(scorecard.changes(now, before)).startswith("4 claims changed: 1 better, 1 worse, 2")


@pytest.mark.parametrize("text, words", [
    ("id,ours\na,1\n", "no column 'verdict'"),
    ("id,verdict,ours\na,fine,1\n", "line 2: verdict 'fine' is not one of"),
])
def test_a_bad_baseline_exits_2_naming_file_and_line(capsys, tmp_path, text, words):
    base = tmp_path / "rows.csv"
    base.write_text(text)
    assert cli.main(["paper", "--claims", "table3-r9-nano-quco-matrix-matrix", "--baseline", str(base)]) == 2
    err = capsys.readouterr().err
    assert "--baseline: " in err and str(base) in err and words in err
