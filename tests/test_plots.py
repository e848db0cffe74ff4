"""quco.perfmodel.plots: each figure writes a PNG and an SVG from hand-made rows, skips
missing cases, repeats byte for byte, and fails cleanly on an unwritable folder."""
import re

import pytest

from quco.perfmodel import plots

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fig6_rows():
    rows = []
    for gpu in ("R9 Nano", "MI100"):
        for kernel, base in (("Dot-Product", 1000.0), ("Matrix-Matrix", 4000.0)):
            for i, case in enumerate(plots.FIG6_CASES):
                rows.append(dict(gpu=gpu, kernel=kernel, case=case, cycles=base * (2.0 - 0.15 * i),
                                 ideal_cycles=base))
    return rows


def fig7_rows():
    return [dict(gpu="R9 Nano", kernel=k, case=c, cycles=100.0 + 10 * i, fine_cycles=100.0)
            for k in ("Elementwise", "SumVectors") for i, c in enumerate(plots.FIG7_CASES)]


def fig1_rows():
    gpus, kernels = ("R9 Nano", "MI100", "H100"), ("Dot-Product", "Matrix-Vector")
    rows = [dict(kind="gpu", scope="Dot-Product", source=s, target=t,
                 slowdown=1.0 if s == t else (None if t == "R9 Nano" else 1.4)) for s in gpus for t in gpus]
    rows += [dict(kind="kernel", scope="MI100", source=s, target=t, slowdown=1.0 if s == t else 2.5)
             for s in kernels for t in kernels]
    return rows


def svg_texts(path):
    return re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())


def check_written(paths, out_dir, stem):
    png, svg = paths
    assert (png, svg) == (out_dir / f"{stem}.png", out_dir / f"{stem}.svg")
    assert png.read_bytes().startswith(PNG_SIGNATURE) and png.stat().st_size > 1000
    assert svg.read_text().lstrip().startswith("<?xml") and "</svg>" in svg.read_text()
    assert not [p for p in out_dir.iterdir() if p.suffix == ".tmp"]
    return svg_texts(svg)


@pytest.mark.parametrize("fig, rows, stem, names", [
    (plots.fig6, fig6_rows(), "fig6",
     ["R9 Nano", "MI100", "Dot-Product", "Matrix-Matrix", "geomean", *plots.FIG6_CASES]),
    (plots.fig7, fig7_rows(), "fig7", ["R9 Nano", "Elementwise", "SumVectors", *plots.FIG7_CASES[1:],
                                       "QuCo with all its heuristics", "cycles over the full QuCo (%)"]),
    (lambda rows, out: plots.fig1(rows, out)[:2], fig1_rows(), "fig1-gpus",
     ["Dot-Product: across GPUs", "H100", "n/a", "1.40"]),
    (lambda rows, out: plots.fig1(rows, out)[2:], fig1_rows(), "fig1-kernels",
     ["MI100: across kernels", "Matrix-Vector", "2.50"]),
])
def test_each_figure_writes_png_and_svg_with_its_labels(tmp_path, fig, rows, stem, names):
    texts = check_written(fig(rows, tmp_path / "figs"), tmp_path / "figs", stem)
    for name in names:
        assert name in texts, name


def test_fig1_marks_configurations_that_do_not_fit(tmp_path):
    _, svg, _, _ = plots.fig1(fig1_rows(), tmp_path)
    # R9 Nano's column of the GPU panel: the two foreign configurations do not fit
    assert svg_texts(svg).count("n/a") == 2


def test_fig1_draws_the_two_kinds_apart_each_on_its_own_scale(tmp_path):
    _, gpus, _, kernels = plots.fig1(fig1_rows(), tmp_path)
    g, k = svg_texts(gpus), svg_texts(kernels)
    assert "MI100: across kernels" not in g and "Dot-Product: across GPUs" not in k
    # each colour bar ends at its own worst slowdown: 1.4 between GPUs, 2.5 between kernels
    assert "2.5" not in " ".join(g) and "1.4" in " ".join(g) and "2.5" in " ".join(k)
    only_gpus = [r for r in fig1_rows() if r["kind"] == "gpu"]
    assert [p.name for p in plots.fig1(only_gpus, tmp_path / "one")] == ["fig1-gpus.png", "fig1-gpus.svg"]


def test_the_ablation_is_drawn_as_extra_cycles_over_the_full_quco(tmp_path):
    # hand-made: QuCo 200 cycles; the steps 200.2 (+0.1%), 201 (+0.5%), 260 (+30%)
    rows = [dict(gpu="G", kernel="k", case=c, cycles=v, fine_cycles=190.0)
            for c, v in zip(plots.FIG7_CASES, (200.0, 200.2, 201.0, 260.0))]
    assert plots.ablation_pct(rows) == pytest.approx(
        {("G", "k", plots.FIG7_CASES[1]): 0.1, ("G", "k", plots.FIG7_CASES[2]): 0.5, ("G", "k", plots.FIG7_CASES[3]): 30.0})
    _, svg = plots.fig7(rows, tmp_path)
    # the y axis is in percent: its ticks reach 30, not a 0-1 scale on which 0.1% vanishes
    ticks = [float(t.replace("\u2212", "-")) for t in svg_texts(svg) if re.fullmatch(r"[\u2212-]?\d+(\.\d+)?", t)]
    assert max(ticks) >= 30 and "cycles over the full QuCo (%)" in svg_texts(svg)


def test_missing_cases_are_left_out_not_drawn_as_zero(tmp_path):
    full = fig6_rows()
    # MI100 lacks QuCo for Matrix-Matrix; Dot-Product's NoATT/Fine-Tuned did not fit (no cycles)
    rows = [dict(r, cycles=None) if r["kernel"] == "Dot-Product" and r["case"] == "NoATT/Fine-Tuned" else r
            for r in full if not (r["gpu"] == "MI100" and r["kernel"] == "Matrix-Matrix" and r["case"] == "QuCo")]
    _, svg_full = plots.fig6(full, tmp_path / "full")
    _, svg_some = plots.fig6(rows, tmp_path / "some")
    def bars(svg):
        return len(re.findall(r'<g id="patch_\d+">', svg.read_text()))
    # 1 + 2 bars fewer; the geomeans of both cases remain (another kernel has them)
    assert bars(svg_full) - bars(svg_some) == 3


def test_geomean_is_over_the_kernels_that_have_the_case():
    values = {("a", "QuCo"): 0.5, ("b", "QuCo"): 2.0, ("a", "ATT/Fine-Tuned"): 0.8}
    groups, out = plots._with_geomean(values, plots.FIG6_CASES)
    assert groups == ["a", "b", "geomean"]
    assert out[("geomean", "QuCo")] == pytest.approx(1.0)
    assert out[("geomean", "ATT/Fine-Tuned")] == pytest.approx(0.8)
    assert ("geomean", "NoATT/Non-Tuned") not in out


def test_figures_repeat_byte_for_byte(tmp_path):
    a = plots.fig6(fig6_rows(), tmp_path / "a")
    b = plots.fig6(fig6_rows(), tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_unknown_case_is_named():
    rows = fig7_rows() + [dict(gpu="R9 Nano", kernel="x", case="QuCo -Cache", cycles=1.0, fine_cycles=1.0)]
    with pytest.raises(ValueError, match="QuCo -Cache"):
        plots.fig7(rows, "/nonexistent-never-written")


def test_unwritable_folder_raises_and_leaves_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match="cannot create the figure folder"):
        plots.fig6(fig6_rows(), blocker / "figs")
    # a folder where fig6.svg should go: the PNG is not left behind either
    out = tmp_path / "out"
    (out / "fig6.svg").mkdir(parents=True)
    with pytest.raises(OSError, match="fig6.svg: is a folder"):
        plots.fig6(fig6_rows(), out)
    assert sorted(p.name for p in out.iterdir()) == ["fig6.svg"]
    assert blocker.read_text() == "not a folder"
