"""The measures issue #31's new claims rest on, on hand-made sources; expectations by hand."""
import pytest

from quco.paper import measures
from quco.paper.verdict import DIFFERS, HOLDS, WITHIN, judge_checks

CASES = ("NoATT/Non-Tuned", "NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned", "ATT/Fine-Tuned", "QuCo",
         "QuCo -CU")


def kernel(name, cycles, slots=None, space=None):
    slots = slots or {}
    rows = [{"case": c, "kernel": name, "cycles": v, "ideal_cycles": 100.0, "tile": 512, "slots": slots.get(c, "2/2"),
             "config": f"512 / {slots.get(c, '2/2')}", "vs_fine_pct": 100.0 * (v / cycles["ATT/Fine-Tuned"] - 1.0)}
            for c, v in cycles.items()]
    return {"name": name, "streaming": [True, False], "rows": rows, "space": space or []}


def cyc(*values):
    return dict(zip(CASES, values))


def test_slots_above_compares_the_streaming_slots_with_quco_s_own():
    src = {("kernel", "g", "k"): kernel("K", cyc(4, 3, 3, 2, 1, 1, 1), {"QuCo": "4/2", "QuCo -CU": "4/8"})}
    (check,) = measures.compute("slots_above", src, {"gpu": "g", "kernel": "k", "case": "QuCo -CU", "than": "QuCo"})
    assert (check.lhs, check.rhs) == (4, 4) and judge_checks([check], 0.0) == DIFFERS    # 4 again: no over-allocation
    src = {("kernel", "g", "k"): kernel("K", cyc(4, 3, 3, 2, 1, 1, 1), {"QuCo": "2/2", "QuCo -CU": "8/2"})}
    assert judge_checks(measures.compute("slots_above", src, {"gpu": "g", "kernel": "k", "case": "QuCo -CU",
                                                              "than": "QuCo"}), 0.0) == HOLDS


def test_speedups_gaps_and_the_informed_split(monkeypatch):
    monkeypatch.setattr(measures.ours, "stems", lambda gpu: ["a", "b"])
    src = {("kernel", "g", "a"): kernel("A", cyc(400, 220, 300, 104, 100, 200, 1)),
           ("kernel", "g", "b"): kernel("B", cyc(400, 100, 300, 110, 100, 103, 1))}
    sp = measures.compute("speedups_at_least", src, {"gpu": "g", "kernels": ["a", "b"], "num": "NoATT/Fine-Tuned",
                                                     "den": "QuCo", "bound": 1.1})
    assert [c.lhs for c in sp] == pytest.approx([1.1, 100 / 103])       # 220 / 200 at the bound: holds
    assert [judge_checks([c], 0.0) for c in sp] == [HOLDS, DIFFERS]
    gaps = measures.compute("gaps_below", src, {"gpu": "g", "bound": 3.0})
    assert [c.lhs for c in gaps] == pytest.approx([100.0, 3.0]) and judge_checks(gaps[1:], 0.0) == HOLDS
    split = measures.compute("near_fine_split", src, {"gpu": "g", "case": "ATT/Informed-Tuned", "strong": ["a"],
                                                      "weak": ["b"], "bound": 1 / 1.05})
    assert [(c.lhs, c.op) for c in split] == [(pytest.approx(100 / 104), ">="), (pytest.approx(100 / 110), "<")]
    assert judge_checks(split, 0.0) == HOLDS
    assert measures.compute("space_size", {("kernel", "g", "a"): {**kernel("A", cyc(1, 1, 1, 1, 1, 1, 1)),
                                                                 "space": [[64, 1, 1.0]] * 7}},
                            {"gpu": "g", "kernel": "a"}) == 7


def test_the_gain_is_a_geomean_over_the_kernels_of_each_gpu(monkeypatch):
    monkeypatch.setattr(measures.ours, "stems", lambda gpu: ["a", "b"])
    src = {}
    for gpu, (x, y) in {"lo": (400, 100), "mid": (200, 200), "hi": (300, 300)}.items():
        src[("kernel", gpu, "a")] = kernel("A", cyc(1, x, 1, 1, 100, 100, 1))
        src[("kernel", gpu, "b")] = kernel("B", cyc(1, y, 1, 1, 100, 100, 1))
    # lo: sqrt(4 x 1) = 2; mid: 2; hi: 3
    checks = measures.compute("gain_largest", src, {"gpu": "lo", "others": ["mid", "hi"], "case": "QuCo",
                                                    "over": "NoATT/Fine-Tuned"})
    assert [(c.lhs, c.rhs) for c in checks] == [(pytest.approx(2.0), pytest.approx(2.0)), (pytest.approx(2.0),
                                                                                          pytest.approx(3.0))]
    assert [judge_checks([c], 0.0) for c in checks] == [DIFFERS, DIFFERS]     # a tie is not "larger"


def workload(fine, semi, quco, layers=()):
    return {"summary": {"fine_ns": fine, "semi_ns": semi, "quco_ns": quco}, "layers": list(layers)}


def test_fig8s_geomean_and_the_composite_kernels():
    src = {("workload", "m1"): workload(100, 100, 100), ("workload", "m2"): workload(100, 400, 100),
           ("workload", "c1"): workload(100, 100, 125)}
    g = measures.compute("geomean_highest", src, {"workloads": ["m1", "m2"]})
    # QuCo's geomean 1.0 ties Fine-Tuned's: "highest" holds at the tie (ours is exhaustive); Semi 0.5
    assert [(c.lhs, c.rhs) for c in g] == [(pytest.approx(1.0), 1.0), (pytest.approx(1.0), pytest.approx(0.5))]
    assert judge_checks(g, 0.0) == HOLDS
    (sub,) = measures.compute("gain_subtler", src, {"composite": ["c1"], "models": ["m1", "m2"]})
    assert (sub.lhs, sub.rhs) == (pytest.approx(0.8), pytest.approx(1.0)) and judge_checks([sub], 0.0) == HOLDS


def test_fig9_layers_and_fig11_configurations():
    layers = [{"type": "Conv1d-1", "name": "c1", "quco_ns": 10, "semi_ns": 10, "fine_ns": 9, "quco_config": "a"},
              {"type": "FC-1", "name": "q", "quco_ns": 10, "semi_ns": 12, "fine_ns": 10, "quco_config": "b"},
              {"type": "FC-1", "name": "k", "quco_ns": 10, "semi_ns": 12, "fine_ns": 10, "quco_config": "b"}]
    src = {("workload", "w"): workload(1, 1, 1, layers)}
    checks = measures.compute("layers_fastest", src, {"workload": "w", "layers": ["Conv1d-1", "FC-2"],
                                                      "others": ["semi", "fine"]})
    assert [c.label.split(":")[0] for c in checks] == ["Conv1d-1 (c1)"] * 2 + ["FC-2 (k)"] * 2
    assert [c.lhs for c in checks] == pytest.approx([1.0, 0.9, 1.2, 1.0])
    assert judge_checks(checks, 0.0) == DIFFERS and judge_checks(checks, 0.11) == WITHIN
    assert measures.compute("unique_configs", src, {"workloads": ["w"]}) == [2]


def dvfs(clocks, sw, hw):
    return {"rows": [{"clock_mhz": c, "sw_ns": s, "hw_ns": h, "hw_speedup": s / h} for c, s, h in zip(clocks, sw, hw)]}


def test_the_dvfs_measures_count_strict_gains_and_find_the_phases():
    clocks = (1500, 1200, 1000, 1000, 1000, 1000)
    src = {("dvfs", "t"): dvfs(clocks, (10, 10, 10, 10, 10, 10), (10, 9, 9, 10, 9, 11))}
    (most,) = measures.compute("dvfs_most_layers", src, {"traces": ["t"], "share": 0.5})
    assert most.lhs == pytest.approx(3 / 6) and judge_checks([most], 0.0) == DIFFERS   # half is not most; ties not gains
    assert [r["clock_mhz"] for r in measures.hold_phase(src[("dvfs", "t")]["rows"])] == [1000] * 4
    share, total = measures.compute("dvfs_hold_gains", src, {"trace": "t"})
    assert "4 layers at 1000 MHz" in share.label and share.lhs == pytest.approx(2 / 4)
    assert total.lhs == pytest.approx(40 / 39) and judge_checks([total], 0.0) == HOLDS
    assert len(measures.hold_phase(dvfs((900,) * 3, (1,) * 3, (1,) * 3)["rows"])) == 3   # a flat trace: all of it
    u = {("dvfs", "u"): dvfs((1500, 1500, 1200, 950, 1200, 1500, 1500), (10,) * 7, (10, 10.05, 5, 5, 5, 10, 9.95))}
    (edges,) = measures.compute("dvfs_edges_negligible", u, {"trace": "u", "within": 0.01})
    assert "4 layers at 1500 MHz (before layer 3, after layer 5)" in edges.label
    assert edges.lhs == pytest.approx(10 / 9.95 - 1) and judge_checks([edges], 0.0) == HOLDS


def test_the_memories_and_the_one_image():
    fw = {"rom_bytes": 4316, "data_static_bytes": 1300, "gst_region": 256, "gst_bytes": {"a": 256, "b": 256},
          "sha256": "ab" * 32}
    launch = {"firmware_sha256": "ab" * 32, "kernels": {"k": {"ok": True, "stack_bytes": 700},
                                                        "l": {"ok": True, "stack_bytes": 748}}}
    src = {("firmware",): fw, ("launch", "a"): launch, ("launch", "b"): {**launch, "firmware_sha256": "cd" * 32}}
    checks = {c.label: c for c in measures.compute("memories", src, {"gpus": ["a", "b"]})}
    assert checks["data: .bss + deepest stack (bytes)"].lhs == 1300 + 748
    assert judge_checks([checks["data: .bss + deepest stack (bytes)"]], 0.0) == HOLDS      # 2,048 exactly fits
    assert judge_checks([checks["a: the same image (sha256)"]], 0.0) == HOLDS
    assert judge_checks([checks["b: the same image (sha256)"]], 0.0) == DIFFERS


def test_the_hardware_hook_reads_a_column_of_the_rows():
    """The real-hardware section's column measure: a column, every row or some
    kernels', judged value by value as a range; a failed source is the row's reason."""
    from quco.paper import scorecard
    from quco.paper.claims import Claim
    rows = [{"kernel": "mm", "quco_cost_pct": 0.5}, {"kernel": "mv", "quco_cost_pct": 3.0}]
    src = {("hardware",): {"rows": rows}}
    assert measures.compute("hardware_column", src, {"column": "quco_cost_pct"}) == [0.5, 3.0]
    assert measures.compute("hardware_column", src, {"column": "quco_cost_pct", "kernels": ["mm"]}) == [0.5]
    c = Claim(id="hw", source="Real hardware (H100)", statement="s", paper="1.04%", kind="range",
              measure="hardware_column", reason="r", args={"column": "quco_cost_pct"}, hi=1.04, better="lower")
    r = scorecard.row(c, src)
    assert (r["verdict"], r["way"]) == (DIFFERS, "against")
    r = scorecard.row(c, {("hardware",): {"error": "FileNotFoundError: not in this tree"}})
    assert r["verdict"] == "could not compute" and "not in this tree" in r["why_missing"]
