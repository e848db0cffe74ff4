"""What a "holds" is worth (issue #31): the chance that a random configuration passes a claim,
counted by hand on hand-made spaces; the weight a row gets from it; the summary that counts only
evidence; and the claims file's weights and quotes (each quote verbatim in the paper's text)."""
import os
import re
from pathlib import Path

import pytest

from quco.paper import chance, claims as claims_mod, measures, scorecard
from quco.paper.claims import Claim
from quco.paper.verdict import DIFFERS, HOLDS, NO_VERDICT, WITHIN

CASES = ("NoATT/Non-Tuned", "NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned", "ATT/Fine-Tuned", "QuCo")


def claim(kind, measure, args, weight="evidence", **fields) -> Claim:
    return Claim(id="t", source="Fig. 0", statement="s", paper="p", kind=kind, measure=measure, reason="r",
                 args=args, weight=weight, weight_reason="declared", **fields)


def kernel(space, cycles=None, ideal=100.0, quco_slots="2/2"):
    cycles = cycles or dict(zip(CASES, (400.0, 150.0, 300.0, 120.0, 100.0, 101.0)))
    rows = [{"case": c, "kernel": "K", "cycles": v, "ideal_cycles": ideal, "tile": 512,
             "slots": quco_slots if c.startswith("QuCo") else "2/2", "config": "512 / 2",
             "vs_fine_pct": 100.0 * (v / cycles["ATT/Fine-Tuned"] - 1.0)} for c, v in cycles.items()]
    return {"name": "K", "streaming": [True, False], "rows": rows, "space": space, "by_pick": {}}


# five points, best first: [tile, streaming slots, cycles]
SPACE = [[512, 2, 100.0], [1024, 2, 100.5], [512, 4, 101.0], [256, 4, 102.0], [256, 8, 110.0]]


def test_the_chance_of_a_bound_over_the_best_is_the_share_of_the_space_inside_it():
    src = {("kernel", "g", "k"): kernel(SPACE)}
    within_1pct = claim("range", "pick_gap", {"gpu": "g", "kernel": "k", "tile": 512, "slots": 2}, lo=0, hi=1)
    assert chance.chance(within_1pct, src) == pytest.approx(3 / 5)       # 100, 100.5, 101
    within_half = claim("range", "gap", {"gpu": "g", "kernel": "k", "case": "QuCo"}, hi=0.5)
    assert chance.chance(within_half, src) == pytest.approx(2 / 5)


def test_the_chance_of_a_pick_and_of_more_slots():
    src = {("kernel", "g", "k"): kernel(SPACE)}
    pick = claim("pick", "model_pick", {"gpu": "g", "kernel": "k", "case": "QuCo -CU"}, tiles=(256, 512), slots=(4, 8))
    assert chance.chance(pick, src) == pytest.approx(3 / 5)             # 512/4, 256/4, 256/8
    more = claim("all", "slots_above", {"gpu": "g", "kernel": "k", "case": "QuCo -CU", "than": "QuCo"})
    assert chance.chance(more, src) == pytest.approx(3 / 5)             # slots above QuCo's 2
    src = {("kernel", "g", "k"): kernel(SPACE, quco_slots="4/2")}
    assert chance.chance(more, src) == pytest.approx(1 / 5)             # above 4: only 256/8


def test_the_chance_of_fig6s_order_is_the_share_above_the_three_cases_below_quco():
    # ideal 100: the points' performance 1.0, 0.995, 0.990, 0.980, 0.909; Informed-Tuned at 100/101.5
    cycles = dict(zip(CASES, (400.0, 150.0, 300.0, 101.5, 100.0, 101.0)))
    src = {("kernel", "g", "k"): kernel(SPACE, cycles)}
    assert chance.chance(claim("all", "fig6_order", {"gpu": "g", "kernel": "k"}), src) == pytest.approx(3 / 5)
    tie = [[512, 2, 100.0], [1024, 2, 101.5], [256, 4, 110.0]]      # the middle point ties Informed-Tuned: no pass
    src = {("kernel", "g", "k"): kernel(tie, cycles)}
    assert chance.chance(claim("all", "fig6_order", {"gpu": "g", "kernel": "k"}), src) == pytest.approx(1 / 3)


def test_several_kernels_draw_one_point_each(monkeypatch):
    monkeypatch.setattr(measures.ours, "stems", lambda gpu: ["a", "b"])
    monkeypatch.setattr(chance.ours, "stems", lambda gpu: ["a", "b"])
    two = [[512, 2, 100.0], [512, 4, 104.0]]      # gaps 0% and 4%
    src = {("kernel", "g", "a"): kernel(two), ("kernel", "g", "b"): kernel(two)}
    # the mean of two draws: 0, 2, 2, 4 (% over the best): at most 1.04% once in four, exactly
    assert chance.chance(claim("range", "mean_gap", {"gpu": "g"}, hi=1.04), src) == pytest.approx(1 / 4)
    assert chance.chance(claim("range", "mean_gap", {"gpu": "g"}, hi=2.0), src) == pytest.approx(3 / 4)
    # "any" of two kernels faster than 102 cycles: 1 - (1/2 x 1/2); "all": 1/2 x 1/2
    faster = {"gpu": "g", "kernels": ["a", "b"], "case": "QuCo -CU -Little", "than": "ATT/Informed-Tuned"}
    src = {k: kernel(two, dict(zip(CASES, (400.0, 150.0, 300.0, 102.0, 100.0, 101.0)))) for k in src}
    assert chance.chance(claim("any", "faster", faster), src) == pytest.approx(3 / 4)
    assert chance.chance(claim("all", "faster", faster), src) == pytest.approx(1 / 4)


def test_a_mean_over_large_spaces_is_estimated_the_same_every_run(monkeypatch):
    stems = [f"k{i}" for i in range(6)]
    monkeypatch.setattr(chance.ours, "stems", lambda gpu: stems)
    space = [[64, 1, 100.0 + i] for i in range(12)]          # 12^6 > COMBINATIONS: sampled
    src = {("kernel", "g", s): kernel(space) for s in stems}
    c = claim("range", "mean_gap", {"gpu": "g"}, hi=5.5)     # the mean of six uniform 0..11 at most 5.5
    ways = [1]                                               # exactly, by convolution: sums of six draws
    for _ in stems:
        ways = [sum(ways[t - d] for d in range(12) if 0 <= t - d < len(ways)) for t in range(len(ways) + 11)]
    exact = sum(ways[:34]) / 12 ** 6                         # sum <= 33: 0.5 and half the tie at 33
    first = chance.chance(c, src)
    # the same draws every run; within 4 standard errors of 20,000 draws (0.0035) of the exact share
    assert first == chance.chance(c, src) and first == pytest.approx(exact, abs=0.015) and exact > 0.5


def test_no_chance_without_a_configuration_under_test():
    assert chance.chance(claim("range", "workload_speedup", {"workloads": ["w"], "over": "fine"}, lo=1.0), {}) is None
    gone = claim("range", "pick_gap", {"gpu": "g", "kernel": "k", "tile": 512, "slots": 2}, lo=0, hi=1)
    assert chance.chance(gone, {("kernel", "g", "k"): {"error": "refused"}}) is None


# ---------------------------------------------------------------- the weight a row gets
def test_an_evidence_row_a_random_configuration_passes_a_quarter_of_the_time_is_weak():
    src = {("kernel", "g", "k"): kernel(SPACE)}
    args = {"gpu": "g", "kernel": "k", "case": "QuCo"}
    weak = scorecard.row(claim("range", "gap", args, hi=0.5, better="lower"), src)     # 2 of 5
    assert (weak["weight"], weak["chance"]) == ("weak", pytest.approx(0.4))
    assert "40%" in weak["weight_reason"] and weak["weight_declared"] == "evidence"
    strong = scorecard.row(claim("range", "gap", args, hi=0.1, better="lower"), src)   # 1 of 5
    assert (strong["weight"], strong["chance"]) == ("evidence", pytest.approx(0.2))
    at = [[512, 2, 100.0], [512, 4, 200.0], [512, 8, 200.0], [512, 1, 200.0]]          # exactly one in four
    edge = scorecard.row(claim("range", "gap", args, hi=0.1, better="lower"), {("kernel", "g", "k"): kernel(at)})
    assert (edge["weight"], edge["chance"]) == ("weak", 0.25)
    fitted = scorecard.row(claim("range", "gap", args, weight="fitted", hi=0.5, better="lower"), src)
    assert (fitted["weight"], fitted["chance"]) == ("fitted", pytest.approx(0.4))      # fitted stays fitted


def row(weight, verdict, way=""):
    return {"weight": weight, "verdict": verdict, "way": way}


def test_only_evidence_holds_count_as_reproduced():
    rows = [row("evidence", HOLDS), row("evidence", DIFFERS, "against"), row("evidence", WITHIN, "in our favour"),
            row("weak", HOLDS), row("fitted", HOLDS), row("fitted", HOLDS), row("derived", HOLDS),
            row("evidence", NO_VERDICT)]
    w = scorecard.weighted(rows)
    assert (w["evidence"]["claims"], w["evidence"][HOLDS], w["fitted"][HOLDS], w[NO_VERDICT]) == (3, 1, 2, 1)
    assert w["evidence"]["ways"] == {"against": 1, "in our favour": 1, "neither way": 0}
    line = scorecard.summary_line(rows)
    assert line.startswith("1 of 3 evidence claims reproduced (hold); 8 claims in all, 4 not counted")
    lines = scorecard.summary_lines(rows)
    assert lines[1].split() [:3] == ["evidence", "3:", "1"] and "against 1, in our favour 1" in lines[1]


# ---------------------------------------------------------------- the bundled claims file
EVERY = claims_mod.load(measures=measures.MEASURES)
BY_ID = {c.id: c for c in EVERY}


def test_every_claim_says_why_it_weighs_what_it_weighs():
    assert all(c.weight in claims_mod.WEIGHTS and c.weight_reason and not c.weight_reason.startswith("@")
               for c in EVERY)
    # the calibration targets: QuCo's own column for the algorithm, Fine-Tuned's for the model
    for c in EVERY:
        if c.source == "Table III" and c.args.get("gpu") in ("r9-nano", "mi100") and c.kind in ("pick", "range") \
                and c.measure in ("firmware_pick", "model_pick", "pick_gap"):
            assert c.weight == "fitted", c.id
    assert all(c.better in ("higher", "lower", "none") for c in EVERY if c.kind == "range")


def test_issue_31s_missing_claims_have_rows_and_the_tautologies_are_gone():
    for cid in ("fig9-quco-fastest-across-layers", "fig5-quco-completes-significantly-earlier",
                "fig8-geomean-quco-highest", "table1-design-space-matrix-matrix",
                "fig6-informed-strong-vector-weak-matrix", "fig10-mi100-near-optimal-each-kernel",
                "fig10-radeon-530-att-gain-largest", "fig8-composite-gain-subtler", "fig12-hw-ahead-most-layers",
                "fig12-hold-later-layers-gain", "fig12-u-shaped-edges-negligible", "cost-memories-one-binary",
                "fig11-unique-configurations"):
        assert BY_ID[cid].quote, cid
    assert "fig12-first-layers-identical" not in BY_ID
    assert not [c for c in EVERY if c.id.startswith("fig8-semi-tuned-config")]      # the paper states Whisper's only
    assert all("QuCo's bar)" not in c.statement for c in EVERY if c.source == "ACTA's Fig. 6")
    assert {c.measure for c in EVERY if c.id.startswith("fig7-cu-off-slots")} == {"slots_above"}


def _shared() -> Path | None:
    root = Path(__file__).resolve().parent.parent
    for p in (os.environ.get("QUCO_SHARED"), root.parent / "shared", root.parent.parent / "shared"):
        if p and (Path(p) / "paper-data").is_dir():
            return Path(p)
    return None


def test_every_quote_is_the_papers_words():
    shared = _shared()
    if shared is None:
        pytest.skip("the paper's text (shared/seeds, shared/paper-data) is not next to this tree; QUCO_SHARED names it")
    text = " ".join(p.read_text(encoding="utf-8") for p in [*shared.glob("seeds/000_*"), *shared.glob("paper-data/*.md")])
    flat = re.sub(r"\s+", " ", text)
    quoted = [c for c in EVERY if c.quote]
    assert len(quoted) >= 40
    missing = [c.id for c in quoted if re.sub(r"\s+", " ", c.quote) not in flat]
    assert not missing
