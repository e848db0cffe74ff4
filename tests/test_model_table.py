"""Issue #32 part 3: a user's TOML preset brings its own [model] table to the performance model,
in this process and in every sweep worker, and a bad entry is refused naming file, key, value
and range (perfmodel/model_table.py)."""
import json
import re
import tomllib

import pytest

from conftest import EXAMPLES_DIR, clean_error
from quco.cli.fuzz_files import run_cli
from quco.cli.main import main
from quco.gst import tables
from quco.perfmodel import model_table
from quco.perfmodel.model_table import RANGES, described
from quco.perfmodel.params import GPU_FIELDS, machine

DOT, EW = EXAMPLES_DIR / "dot-product.json", EXAMPLES_DIR / "elementwise.json"


def renamed(tmp_path, preset: str, name: str, model: str | None = "keep", file="my.toml"):
    """The bundled `preset` under another GST name (so no preset carries it); `model`: "keep" its
    [model] table, None drop it, or TOML text for a table of our own."""
    text = (tables.PRESET_DIR / f"{preset}.toml").read_text()
    text = re.sub(r'(?m)^name = ".*"$', f'name = "{name}"', text, count=1)
    if model != "keep":  # the table and its heading comment are the preset's last lines
        cut = text.find("# ---- The performance model")
        text = text[:cut if cut >= 0 else text.index("[model")] + ("" if model is None else "\n" + model)
    path = tmp_path / file
    path.write_text(text)
    return path


def test_every_field_has_a_range_and_every_preset_keeps_to_it():
    """A field added to params.GPU_FIELDS needs its range here (else a user's value goes unchecked);
    the bundled presets' own tables pass the user's check."""
    assert set(RANGES) == set(GPU_FIELDS)
    for name in tables.preset_names():
        table = model_table.model_table(name)
        assert table is not None and set(table) <= set(GPU_FIELDS), name
        assert all(RANGES[k][0] <= v <= RANGES[k][1] for k, v in table.items()), name
    assert all(RANGES[k][0] <= v <= RANGES[k][1] for k, v in GPU_FIELDS.items())  # GCN's defaults too


def test_a_users_toml_under_a_new_name_brings_its_model_table(tmp_path):
    """The H100 preset renamed: the model sees the H100 (its own table), not GCN's defaults; the
    same file without the table gets GCN's (no preset carries the name), as before."""
    bundled = machine(tables.unpack(tables.load("h100-sxm")))
    mine = renamed(tmp_path, "h100-sxm", "My Hopper")
    assert machine(described(mine, tables.load(mine))) == bundled
    bare = renamed(tmp_path, "h100-sxm", "My Hopper", model=None, file="bare.toml")
    assert "model" not in described(bare, tables.load(bare))
    gcn = machine(tables.unpack(tables.load(bare)))
    assert (gcn.waves_per_pool, gcn.wave_instr, gcn.l2_bytes) == (10, 4.0, 16 * (256 << 10))  # GPU_FIELDS
    assert gcn != bundled


def test_partial_table_fills_from_the_defaults_and_a_binary_gst_keeps_the_name_lookup(tmp_path):
    mine = renamed(tmp_path, "r9-nano", "Half Nano", model="[model]\nl2_slices = { value = 2, source = \"test\" }\n")
    m = machine(described(mine, tables.load(mine)))
    assert m.l2_bytes == 2 * GPU_FIELDS["l2_slice_bytes"] and m.waves_per_pool == GPU_FIELDS["waves_per_pool"]
    gst = tmp_path / "nano.gst"
    gst.write_bytes(tables.load("mi100"))
    assert described(gst, gst.read_bytes()) == tables.unpack(tables.load("mi100"))  # no table: by name
    assert machine(described(gst, gst.read_bytes())) == machine(tables.unpack(tables.load("mi100")))


def test_search_with_a_renamed_preset_ranks_as_the_preset(tmp_path, capsys):
    mine = renamed(tmp_path, "h100-sxm", "My Hopper")

    def ranked(gpu):
        assert main(["search", str(DOT), "--gpu", str(gpu), "--json", "--top", "5"]) == 0
        doc = json.loads(capsys.readouterr().out)
        return [(t["label"], t["cycles"]) for t in doc["top"]]
    assert ranked(mine) == ranked("h100-sxm")


def test_a_workload_run_with_a_renamed_preset_is_the_presets_run(tmp_path, capsys):
    """`run` (the unit, the model and the ATT baselines' cached searches) on the renamed H100:
    every figure the bundled preset gives, only the GPU's name differs."""
    mine = renamed(tmp_path, "h100-sxm", "My Hopper")
    workload = str(EXAMPLES_DIR.parent / "workloads" / "attention-score.json")

    def run(gpu):
        assert main(["run", workload, "--gpu", str(gpu), "--json"]) == 0
        return {k: v for k, v in json.loads(capsys.readouterr().out).items() if k != "gpu"}
    assert run(mine) == run("h100-sxm")


def test_the_table_travels_to_the_sweeps_worker_processes(tmp_path, capsys):
    """evaluate on a file whose [model] no preset has: one process and two give the same rows, and
    not the rows of the same file without the table (the workers did get it)."""
    own = "[model]\nwave_instr_cycles = 2\nl2_slices = 4\nwaves_per_pool = 6\n"
    mine = renamed(tmp_path, "r9-nano", "Odd Nano", model=own)
    bare = renamed(tmp_path, "r9-nano", "Odd Nano", model=None, file="bare.toml")

    def rows(gpu, workers):
        assert main(["evaluate", str(DOT), str(EW), "--gpu", str(gpu), "--no-ablation", "--no-portability",
                     "--json", "--workers", str(workers)]) == 0
        doc = json.loads(capsys.readouterr().out)
        return [(r["kernel"], r["case"], r["config"], r["cycles"]) for r in doc["rows"]]
    one, two = rows(mine, 1), rows(mine, 2)
    assert one == two and len(one) >= 12
    assert one != rows(bare, 2)


@pytest.mark.parametrize("table, words", [
    ("l2_slices = 0", "[model].l2_slices = 0: out of range 1..1024"),
    ("waves_per_pool = { value = 100, source = \"x\" }", "[model].waves_per_pool = 100: out of range 1..64"),
    ("dram_sustained = 1.5", "[model].dram_sustained = 1.5: out of range 0.01..1"),
    ("dep_instr_cycles = nan", "[model].dep_instr_cycles = nan: out of range 0..1024"),
    ("att_box_rows = 2.5", "[model].att_box_rows: 2.5 is a float, not an integer; expected an integer 1..256"),
    ("wave_instr_cycles = \"fast\"", "[model].wave_instr_cycles: \"fast\" is a string, not a number"),
    ("code_on_pools = true", "[model].code_on_pools: true is a boolean, not an integer"),
    ("l2_size = 4", "[model].l2_size: unknown field (known: waves_per_pool"),
    ("l2_slices = { value = 4, sauce = \"x\" }", "[model].l2_slices.sauce: unknown key (allowed: value, source)"),
    ("l2_slices = { source = \"x\" }", "[model].l2_slices.value: missing; expected an integer 1..1024"),
])
def test_a_bad_entry_names_file_key_value_and_range(tmp_path, table, words):
    bad = renamed(tmp_path, "r9-nano", "Bad Nano", model=f"[model]\n{table}\n")
    with pytest.raises(tables.GstFileError) as e:
        described(bad, tables.load(bad))
    assert str(e.value).startswith(f"{bad}: ") and words in str(e.value), str(e.value)


def test_a_bad_model_table_is_exit_2_for_every_command_that_reads_it(tmp_path):
    bad = renamed(tmp_path, "r9-nano", "Bad Nano", model="[model]\nl2_slices = 0\n")
    words = f"{bad}: [model].l2_slices = 0: out of range 1..1024"
    for argv in (["gst", "check", str(bad)], ["search", str(DOT), "--gpu", str(bad)],
                 ["launch", str(DOT), "--gpu", str(bad), "--model"],
                 ["evaluate", str(DOT), "--gpu", str(bad), "--no-ablation", "--workers", "1"]):
        clean_error(run_cli(argv), 2, words)
    not_a_table = tmp_path / "m.toml"  # a top-level key: before the first table
    not_a_table.write_text(bad.read_text().replace('name = "Bad Nano"', 'name = "Bad Nano"\nmodel = 3', 1)
                           .replace("[model]\nl2_slices = 0\n", ""))
    assert tomllib.loads(not_a_table.read_text())["model"] == 3
    clean_error(run_cli(["gst", "check", str(not_a_table)]), 2, "model: 3 is an integer; expected a table [model]")


def test_gst_variants_keep_the_table_in_every_worker(tmp_path):
    """The library's sweep (harness/sweep.py) on a described GST: each task carries the table, so
    a pool of two gives the rows of one process, and not the rows of the name lookup."""
    from quco.harness.sweep import make_tasks, sweep_task
    from quco.kernel.format import Kernel
    from quco.util.parallel import run
    mine = renamed(tmp_path, "r9-nano", "Odd Nano", model="[model]\nwave_instr_cycles = 2\nl2_slices = 4\n")
    small = Kernel("small-dot", 0.5, consumer_wavefronts=8, queues=[(2048, 0, 2)] * 2, work_groups=64, output_bytes=2)
    g = described(mine, tables.load(mine))
    tasks = make_tasks(g, {"dram_bw_mbps": [256000, 512000]}, [small])
    assert all(t.gst["model"] == g["model"] for t in tasks)
    one, two = run(sweep_task, tasks, workers=1), run(sweep_task, tasks, workers=2)
    bare = run(sweep_task, make_tasks(tables.unpack(tables.load(mine)), {"dram_bw_mbps": [256000, 512000]}, [small]),
               workers=2)
    assert one == two and one != bare
