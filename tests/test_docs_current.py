"""Docs held to the code: docs/gst-presets.md's table of the `[model]` fields quotes each field's
H100 value, which must be the preset's (a refit that moves a constant and leaves the table behind
fails here), and docs/testing.md's table has a row for every test file."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _h100_cells() -> dict:
    """field(s) -> the H100 / H200 cell, for the rows whose cell starts with numbers."""
    out = {}
    for line in (ROOT / "docs" / "gst-presets.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and re.match(r"[\d.,e+-]+( |$)", cells[2]):
            fields = tuple(re.findall(r"`(\w+)`", cells[0]))
            numbers = re.findall(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?", cells[2].split("(")[0])
            values = [float(n.replace(",", "")) for n in numbers]
            if " KB" in cells[2].split("(")[0]:   # "80 x 640 KB": the slice in KiB
                values[-1] *= 1024
            out[fields] = values
    return out


def test_the_h100_column_is_the_presets():
    model = tomllib.loads((ROOT / "quco" / "gst" / "presets" / "h100-sxm.toml").read_text())["model"]
    cells = _h100_cells()
    checked = 0
    for fields, numbers in cells.items():
        values = [model[f]["value"] for f in fields if f in model]
        if len(values) != len(fields):
            continue
        assert numbers[:len(values)] == values, f"docs/gst-presets.md: {', '.join(fields)}: {numbers} != preset {values}"
        checked += 1
    assert checked >= 12   # the fitted constants among them: launch, chain, stream cost, the instructions


def test_every_test_file_has_a_row_in_docs_testing():
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((ROOT / "tests").glob("test_*.py")) if f"`{p.name}`" not in text]
    assert not missing, f"docs/testing.md has no row for {', '.join(missing)}"
