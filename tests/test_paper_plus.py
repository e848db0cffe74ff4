"""The scorecard's quco+ section (issue #30 item 5): the `plus-*` twins of the paper's rows are the
paper's claims computed with FLAG_QUCO_PLUS in the launch record (checked against the reference
model with the flag, and against the measurement file), their weight `extension` is never counted
as reproduced, and the paper's rows are the same with the twins beside them or not."""
import csv
import inspect

import pytest

from quco.gst import abi, tables
from quco.host import reference
from quco.paper import claims as claims_mod
from quco.paper import figures, measures, ours, scorecard
from quco.paper.claims import ClaimsError, parse
from quco.paper.verdict import DIFFERS, HOLDS, NO_VERDICT
from quco.perfmodel import hardware as hw

EVERY = claims_mod.load(measures=measures.MEASURES)
BY_ID = {c.id: c for c in EVERY}
PLUS = [c for c in EVERY if c.id.startswith(claims_mod.PLUS_PREFIX)]
SECTION = "quco+ (ours, not the paper's rule set)"


def plus_record(kernel) -> bytes:
    return kernel.with_fields(flags=kernel.flags | abi.FLAG_QUCO_PLUS).record()


# ---------------------------------------------------------------- the claims file
def test_each_twin_is_its_papers_claim_put_to_quco_plus():
    assert len(PLUS) == 34
    for c in PLUS:
        paper = BY_ID[c.id.removeprefix(claims_mod.PLUS_PREFIX)]
        assert (c.kind, c.paper, c.tiles, c.slots, c.lo, c.hi, c.tolerance, c.reason, c.better, c.quote, c.measure) == \
               (paper.kind, paper.paper, paper.tiles, paper.slots, paper.lo, paper.hi, paper.tolerance, paper.reason,
                paper.better, paper.quote, paper.measure), c.id
        assert c.args == {**paper.args, "rules": "plus"} and "rules" not in paper.args
        assert (c.source, c.weight) == (SECTION, "extension") and "not the paper's" in c.weight_reason
        assert paper.weight != "extension" and paper.source != SECTION
        # the measure takes the rule set, and reads quco+'s sources, never the paper's set's
        assert "rules" in inspect.signature(measures.MEASURES[c.measure].fn).parameters
        keys, paper_keys = scorecard.needs(c), scorecard.needs(paper)
        assert keys == [k + (ours.PLUS,) for k in paper_keys]
    # the sections the brief names: Table III's QuCo column, Fig. 8's whole models, Fig. 9's picks, the H100
    twins_of = {c.id.removeprefix(claims_mod.PLUS_PREFIX) for c in PLUS}
    assert {c.id for c in EVERY if c.source == "Table III" and c.measure == "firmware_pick"
            and c.args["gpu"] in ("r9-nano", "mi100")} <= twins_of
    assert {c.id for c in EVERY if c.id.startswith(("fig9-quco-pick", "hw-quco-cost"))} <= twins_of
    assert {c.id for c in EVERY if c.source == "Fig. 8" and c.args.get("workloads")
            and set(c.args["workloads"]) <= {"albert-v2", "t5-small", "whisper-tiny"}
            and c.args.get("over") == "fine"} <= twins_of


DOC = {"reasons": {"w": "why"},
       "claim": [{"id": "a", "source": "Fig. 0", "statement": "s", "paper": "p", "kind": "pick", "tiles": [1],
                  "reason": "r", "measure": "firmware_pick", "args": {"gpu": "g", "kernel": "k"},
                  "weight": "evidence", "weight_reason": "w"}],
       "plus": {"source": "S", "weight": "extension", "weight_reason": "@w", "note": "n", "claims": ["a"]}}


def test_a_twin_from_a_hand_made_file():
    a, twin = parse(DOC, "c.toml")
    assert (twin.id, twin.source, twin.weight, twin.weight_reason, twin.args) == \
           ("plus-a", "S", "extension", "why", {"gpu": "g", "kernel": "k", "rules": "plus"})
    assert twin.note == "The twin of a: n" and a.args == {"gpu": "g", "kernel": "k"}


@pytest.mark.parametrize("change, words", [
    (lambda d: d["plus"].update(claims=["nope"]), "plus: claims: 'nope' is no claim of the file"),
    (lambda d: d["plus"].update(claims=["a", "a"]), "a claim is named twice"),
    (lambda d: d["claim"].append({**d["claim"][0], "id": "plus-a"}), "its twin's id 'plus-a' is a claim of the file"),
    (lambda d: d["claim"][0]["args"].update(rules="plus"), "'a' already names its rules"),
    (lambda d: d["plus"].update(weight="reproduced"), "plus"),
])
def test_a_bad_plus_table_is_refused_naming_it(change, words):
    import copy
    doc = copy.deepcopy(DOC)
    change(doc)
    with pytest.raises(ClaimsError) as e:
        parse(doc, "c.toml")
    assert words in str(e.value) and "c.toml" in str(e.value)


# ---------------------------------------------------------------- weights: never reproduced
def row(weight, verdict, way=""):
    return {"weight": weight, "verdict": verdict, "way": way}


def test_extension_rows_are_counted_on_their_own_line_never_as_reproduced():
    paper = [row("evidence", HOLDS), row("evidence", DIFFERS, "against"), row("fitted", HOLDS),
             row("evidence", NO_VERDICT)]
    both = paper + [row("extension", HOLDS), row("extension", HOLDS), row("extension", DIFFERS, "neither way")]
    w0, w = scorecard.weighted(paper), scorecard.weighted(both)
    assert w["evidence"] == w0["evidence"] and (w["extension"]["claims"], w["extension"][HOLDS]) == (3, 2)
    assert scorecard.summary_line(both).startswith("1 of 2 evidence claims reproduced (hold); 7 claims in all, "
                                                   "4 not counted (weak, fitted, derived, model checks, quco+ extension)")
    lines = scorecard.summary_lines(both)
    ext = [x for x in lines if x.split()[:1] == ["extension"]]
    assert len(ext) == 1 and ext[0].split()[1:3] == ["3:", "2"] and "not the paper's" in ext[0]
    # which rule set is the paper's: said whether or not twins are among the rows
    for rows in (paper, both):
        assert "`quco`, the paper's" in scorecard.summary_lines(rows)[-1]
    assert not [x for x in scorecard.summary_lines(paper) if x.split()[:1] == ["extension"]]


# ---------------------------------------------------------------- the sources, computed with the flag
@pytest.mark.firmware
def test_the_launch_twin_is_the_reference_models_pick_with_the_flag():
    gst = tables.load("r9-nano")
    src = ours.source((("launch", "r9-nano", ours.PLUS), None))
    differ = 0
    for stem, k in src["kernels"].items():
        kernel = ours.kernel("r9-nano", stem)
        ref, paper = reference.configure(gst, plus_record(kernel)), reference.configure(gst, kernel.record())
        assert (k["ok"], k["cache_hit"], k["tile"], k["slots"]) == (True, False, ref.tile, list(ref.slots))
        differ += (ref.tile, ref.slots) != (paper.tile, paper.slots)
    assert differ > 0         # quco+ is another rule set on Table III (docs/algorithm.md: R9 Nano 2 / 8)
    with pytest.raises(ValueError, match="rules 'minus'"):
        ours._launch("r9-nano", "minus")


@pytest.mark.firmware
def test_the_workload_twin_runs_every_layer_with_the_flag_and_leaves_the_papers_run_alone():
    both = ours._workload("t5-small", plus=True)
    twin = both.pop(ours.PLUS)
    alone = ours._workload("t5-small")
    assert both == alone                      # the paper's set's source is the same with its twin computed
    from quco.examples import WORKLOADS
    from quco.workloads import format
    layers = format.load(WORKLOADS / "t5-small.json").layers
    gst = tables.load(twin["gpu"])
    for lay, mine, paper in zip(layers, twin["layers"], both["layers"]):
        ref = reference.configure(gst, plus_record(lay.kernel))
        assert (mine["quco_tile"], mine["quco_slots"]) == (ref.tile, list(ref.slots))
        # the same Fine-Tuned: the judge does not depend on the rule set
        assert (mine["fine_ns"], mine["fine_config"]) == (paper["fine_ns"], paper["fine_config"])
    assert twin["summary"]["fine_ns"] == both["summary"]["fine_ns"]
    assert twin["summary"]["speedup_vs_fine"] == pytest.approx(twin["summary"]["fine_ns"] / twin["summary"]["quco_ns"])
    assert [x["quco_config"] for x in twin["layers"]] != [x["quco_config"] for x in both["layers"]]


def test_a_twin_rides_on_its_sources_task_and_a_failure_is_named_on_both(monkeypatch):
    calls = []

    def fake(name, firmware=None, plus=False):
        calls.append((name, plus))
        if name == "bad":
            raise RuntimeError("no such model")
        return {"name": name, **({ours.PLUS: {"name": f"{name}+"}} if plus else {})}
    monkeypatch.setitem(ours._SOURCES, "workload", fake)
    out = ours.compute([("workload", "w"), ("workload", "w", ours.PLUS), ("workload", "v", ours.PLUS),
                        ("workload", "bad", ours.PLUS)], workers=1)
    assert sorted(calls) == [("bad", True), ("v", True), ("w", True)]       # one task each
    assert out[("workload", "w")]["name"] == "w" and ours.PLUS not in out[("workload", "w")]
    assert out[("workload", "w", ours.PLUS)]["name"] == "w+" and out[("workload", "v", ours.PLUS)]["name"] == "v+"
    assert "no such model" in out[("workload", "bad", ours.PLUS)]["error"]
    # quco+'s part failing alone leaves the paper's set's part whole
    assert ours._twin(lambda: 1 / 0) == {"error": "ZeroDivisionError: division by zero"}


def test_figures_draw_the_papers_runs_not_the_twins(tmp_path):
    summary = {"semi_ns": 120.0, "fine_ns": 100.0, "quco_ns": 105.0}
    w = {"title": "W", "gpu": "r9-nano", "summary": summary, "layers": [{"quco_config": "512 / 2"}]}
    twin = {"title": "W", "gpu": "r9-nano", "summary": {**summary, "quco_ns": 100.0},
            "layers": [{"quco_config": "1024 / 8"}]}
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    figures.draw({("workload", "w"): w}, [], a)
    figures.draw({("workload", "w"): w, ("workload", "w", ours.PLUS): twin}, [], b)
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
    assert all((a / p.name).read_bytes() == p.read_bytes() for p in b.iterdir())


# ---------------------------------------------------------------- the H100 rows end to end
def _reduced(tmp_path):
    """The shipped sweep's ElementwiseK TMA rows at Table III's grid: the kernel x size where the
    two rule sets' picks differ most (docs/algorithm.md: the paper's set 8192/2, quco+ 8192/7)."""
    with open(hw.DEFAULT_DATA, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    keep = [rows[0]] + [r for r in rows[1:] if r[0] == "ElementwiseK" and r[2] == "paper" and r[1] == "att"]
    path = tmp_path / "reduced.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(keep)
    return path, {(int(r[4]), int(r[5])): float(r[9]) for r in keep[1:] if r[8] == "yes" and r[9]}


@pytest.mark.firmware
def test_the_h100_twin_reads_quco_plus_pick_off_the_measurements_and_the_papers_rows_stay(tmp_path, monkeypatch):
    path, tma = _reduced(tmp_path)
    monkeypatch.setattr(ours, "HARDWARE_DATA", path)
    ids = ["hw-quco-cost-elementwise-k-paper", "plus-hw-quco-cost-elementwise-k-paper", "plus-hw-quco-cost-mean"]
    chosen = scorecard.select(EVERY, ids)
    rows, sources = scorecard.run(chosen, workers=1)
    by = {r["id"]: r for r in rows}
    # the picks, against the reference model on the scaled kernel, with and without the flag
    gst = tables.load(ours.HARDWARE_GPU)
    kernel = hw.scaled_kernel("ElementwiseK", sources[("hardware",)]["rows"][0]["work_groups"])
    picks = {}
    for name, record in (("paper", kernel.record()), ("plus", plus_record(kernel))):
        r = reference.configure(gst, record)
        assert len(set(r.slots)) == 1
        picks[name] = (r.tile, r.slots[0])
    assert picks["paper"] != picks["plus"]
    assert sources[("hardware",)]["rows"][0]["quco_pick"] == "{}/{}".format(*picks["paper"])
    assert sources[("hardware", ours.PLUS)]["rows"][0]["quco_pick"] == "{}/{}".format(*picks["plus"])
    # each cost worked out from the file itself; the twin's differs from the paper's row's
    best = min(tma.values())
    assert by["hw-quco-cost-elementwise-k-paper"]["value"] == pytest.approx(100 * (tma[picks["paper"]] / best - 1))
    plus = 100 * (tma[picks["plus"]] / best - 1)
    assert by["plus-hw-quco-cost-elementwise-k-paper"]["value"] == pytest.approx(plus)
    assert by["plus-hw-quco-cost-mean"]["value"] == pytest.approx(plus)                   # one row: its mean
    assert by["plus-hw-quco-cost-elementwise-k-paper"]["value"] != by["hw-quco-cost-elementwise-k-paper"]["value"]
    # the twin's weight, however it goes, is not the evidence's; its chance is the paper's row's
    assert {by[i]["weight"] for i in ids[1:]} == {"extension"}
    assert by["plus-hw-quco-cost-elementwise-k-paper"]["chance"] == by["hw-quco-cost-elementwise-k-paper"]["chance"]
    w = scorecard.weighted(rows)
    assert w["extension"]["claims"] == 2 and w["evidence"]["claims"] + w["weak"]["claims"] == 1
    # the paper's row is the same, byte for byte in rows.csv, with its twins beside it or not
    alone, _ = scorecard.run(scorecard.select(EVERY, ids[:1]), workers=1)
    from quco.paper.report import csv_text
    assert csv_text(alone) == csv_text([by[ids[0]]])
    assert ours.PLUS not in sources[("hardware",)]


def test_a_twin_reads_quco_plus_source_and_the_report_says_which_rule_set_is_the_papers():
    """On hand-made launch sources: the paper's row reads ("launch", gpu), its twin ("launch", gpu,
    PLUS); report.md opens by saying which rule set each row judges and gives quco+ its section."""
    from quco.paper.report import markdown
    k = {"ok": True, "message": "", "streaming": [True, True, True]}
    src = {("launch", "r9-nano"): {"kernels": {"elementwise-k": {**k, "tile": 2048, "slots": [2, 2, 2],
                                                                 "label": "2048 / 2"}}},
           ("launch", "r9-nano", ours.PLUS): {"kernels": {"elementwise-k": {**k, "tile": 2048, "slots": [5, 5, 5],
                                                                            "label": "2048 / 5"}}}}
    paper, twin = (scorecard.row(BY_ID[i], src) for i in ("table3-r9-nano-quco-elementwise-k",
                                                         "plus-table3-r9-nano-quco-elementwise-k"))
    assert (paper["ours"], paper["verdict"], paper["weight"]) == ("2048 / 2", HOLDS, "fitted")
    assert (twin["ours"], twin["verdict"], twin["weight"]) == ("2048 / 5", DIFFERS, "extension")
    text = markdown([paper, twin], [], "quco-emu paper")
    assert "**Which rule set is the paper's:**" in text and f"## {SECTION}" in text
    assert "0 of 0 evidence claims reproduced" in text and "`quco`, the paper's" in text
