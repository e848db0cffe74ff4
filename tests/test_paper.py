"""quco-emu paper: the claims file, the verdicts on hand-made values, the measures on
hand-made sources, and a reduced scorecard end to end (files, bad input, interruption)."""
import copy
import json

import pytest

from quco.paper import claims as claims_mod
from quco.paper.claims import Claim, ClaimsError, parse
from quco.paper.verdict import (DIFFERS, HOLDS, MISSING, NO_VERDICT, WITHIN, Check, Pick, judge,
                                judge_checks, judge_range, show)


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
    with pytest.raises(ValueError, match="operator"):
        judge_checks([Check("x", 1, "!=", 2)], 0.0)


def test_no_verdict_is_never_judged():
    assert judge(claim("no_verdict"), Pick(512, 4, "512 / 4")) == NO_VERDICT
    assert judge(claim("no_verdict"), None) == NO_VERDICT


def test_ours_is_shown_readably():
    assert show(claim("range", unit="x"), 1.25) == "1.250x"
    assert show(claim("range", unit="%"), 0.5) == "+0.50%"
    assert show(claim("range", unit="instructions"), [1092, 1450, 1200]) == "1,092 to 1,450 instructions (3 values)"
    assert show(claim("pick"), Pick(512, 4, "512 / 4+2")) == "512 / 4+2"
    checks = [Check("MM", 1.0, ">", 0.5), Check("MV", 0.2, ">", 0.5)]
    assert show(claim("all"), checks) == "1/2 hold; not: MV"
    assert "MV: 0.2 > 0.5 (differs)" in show(claim("all"), checks, detail=True)
    assert show(claim("range"), None) == "n/a"


# ---------------------------------------------------------------- the claims file
GOOD = {"reasons": {"exact": "picks are exact"},
        "claim": [{"id": "a-1", "source": "Table III", "statement": "s", "paper": "512 / 4", "kind": "pick",
                   "tiles": [512], "slots": [4], "reason": "@exact", "measure": "firmware_pick",
                   "args": {"gpu": "r9-nano", "kernel": "matrix-matrix"}},
                  {"id": "b-2", "source": "Fig. 7", "statement": "s", "paper": "up to 1.25x", "kind": "range",
                   "lo": 1.2, "hi": 1.3, "tolerance": 0.05, "reason": "read off a bar", "measure": "cycles_ratio"}]}


def test_a_claims_file_parses_and_resolves_named_reasons():
    a, b = parse(copy.deepcopy(GOOD), "c.toml", measures={"firmware_pick", "cycles_ratio"})
    assert (a.reason, a.tiles, a.slots, a.args["kernel"]) == ("picks are exact", (512,), (4,), "matrix-matrix")
    assert (b.lo, b.hi, b.tolerance, b.reason) == (1.2, 1.3, 0.05, "read off a bar")


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
