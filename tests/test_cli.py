"""quco-emu as a user runs it: output, JSON, exit codes, no tracebacks on bad input."""
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MM_KERNEL
from quco.gst import abi, tables
from quco.cli import main as cli

MM = str(MM_KERNEL)


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_launch_prints_the_queue_table(capsys, elf_path):
    code, out, _ = run(capsys, "launch", MM, "--firmware", elf_path)
    assert code == 0
    assert "tile 512" in out and "stationary" in out and "retired instructions: launch" in out


def test_launch_json_with_cycles(capsys, elf_path):
    code, out, _ = run(capsys, "launch", MM, "--json", "--cycles", "--firmware", elf_path)
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "OK" and doc["tile"] == 512
    # Little's 8 slots, x 32 / 64 CUs: 4; the stationary queue 4 too (tests/test_reference.py by hand)
    assert [q["slots"] for q in doc["queues"]] == [4] * 9
    cost = doc["cost"]
    assert cost["cycles"] > 0 and cost["ns"] == pytest.approx(cost["cycles"] * 1000 / 700)
    assert cost["energy_nj"] > 0 and cost["reads"]["ROM"] >= cost["instructions"]


def test_reference_and_firmware_print_the_same_configuration(capsys, elf_path):
    _, fw, _ = run(capsys, "launch", MM, "--json", "--firmware", elf_path)
    _, model, _ = run(capsys, "launch", MM, "--json", "--reference")
    strip = lambda d: {k: v for k, v in json.loads(d).items() if k not in ("engine", "boot_instructions", "instructions", "cost")}  # noqa: E731
    assert strip(fw) == strip(model)


def test_device_error_status_names_the_problem(capsys, tmp_path, elf_path):
    doc = json.loads(Path(MM).read_text())
    doc["partition"] = {"lds_bytes": 1024}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(doc))
    code, out, err = run(capsys, "launch", path, "--firmware", elf_path)
    assert code == cli.EXIT_STATUS and out == ""
    assert "no configuration fits the LDS" in err and "bytes" in err


def test_bad_kernel_file_exit_code_and_message(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"name": "x", "compute_intensity": 1, "queues": [{"type": "streaming", "length": 0, "elem_size": 2}]}')
    code, out, err = run(capsys, "check", path)
    assert code == cli.EXIT_INPUT and "queues[0].length" in err and "0" in err
    code, _, err = run(capsys, "launch", tmp_path / "absent.json")
    assert code == cli.EXIT_INPUT and "absent.json" in err


def test_unknown_gpu_and_missing_firmware(capsys, tmp_path):
    code, _, err = run(capsys, "launch", MM, "--gpu", "no-such-gpu")
    assert code == cli.EXIT_INPUT and "no-such-gpu" in err and "r9-nano" in err
    code, _, err = run(capsys, "launch", MM, "--firmware", tmp_path / "none.elf")
    assert code == cli.EXIT_FIRMWARE and "make firmware" in err


def test_gst_pack_show_check_round_trip(capsys, tmp_path):
    out_file = tmp_path / "nano.gst"
    code, _, _ = run(capsys, "gst", "pack", tables.PRESET_DIR / "r9-nano.toml", "-o", out_file)
    assert code == 0 and out_file.read_bytes() == tables.load("r9-nano")
    code, out, _ = run(capsys, "gst", "check", out_file)
    assert code == 0 and "R9 Nano" in out
    code, out, _ = run(capsys, "gst", "show", out_file, "--json")
    assert json.loads(out)["num_cus"] == 64


@pytest.mark.parametrize("gpu", tables.preset_names())
def test_every_preset_figure_names_its_source(gpu):
    src = tables.sources(gpu)
    assert {f.name for f in abi.GST_CHECKED} <= set(src)
    assert all(len(text) > 10 for text in src.values()), "a source must say where the figure is from"


def test_gst_show_of_a_preset_prints_the_sources(capsys):
    code, out, _ = run(capsys, "gst", "show", "h100-sxm")
    assert code == 0 and "source" in out and "1,980" in out and "estimate" in out


@pytest.mark.parametrize("gpu", tables.preset_names())
def test_the_readme_gst_commands_make_a_preset_of_ones_own(capsys, tmp_path, gpu):
    # README: gst show NAME --toml > my-gpu.toml; gst check my-gpu.toml; gst pack my-gpu.toml -o my-gpu.gst
    code, text, _ = run(capsys, "gst", "show", gpu, "--toml")
    mine = tmp_path / "my-gpu.toml"
    mine.write_text(text)
    assert code == 0 and tables.load(mine) == tables.load(gpu)          # the same 256 bytes
    assert tables.sources(mine) == tables.sources(gpu)                  # and every source kept
    code, out, _ = run(capsys, "gst", "check", mine)
    assert code == 0 and out.startswith(f"{mine}: ok")
    edited = tmp_path / "edited.toml"  # an edit takes: the values are what the file says
    edited.write_text(text.replace(f"[num_cus]\nvalue = {tables.unpack(tables.load(gpu))['num_cus']}",
                                   "[num_cus]\nvalue = 4"))
    assert tables.unpack(tables.load(edited))["num_cus"] == 4
    code, _, _ = run(capsys, "gst", "pack", mine, "-o", tmp_path / "my-gpu.gst")
    code2, again, _ = run(capsys, "gst", "show", tmp_path / "my-gpu.gst", "--toml")  # a binary: sources say so
    assert code == code2 == 0 and tables.load(tmp_path / "my-gpu.gst") == tables.load(gpu)
    assert f"copied from {tmp_path / 'my-gpu.gst'}" in again


def test_gst_check_rejects_a_bad_table(capsys, tmp_path):
    raw = bytearray(tables.load("r9-nano"))
    raw[abi.GST.offset("num_cus")] = 0  # 64 -> 0, checksum now wrong too
    bad = tmp_path / "bad.gst"
    bad.write_bytes(bytes(raw))
    code, _, err = run(capsys, "gst", "check", bad)
    assert code == cli.EXIT_INPUT and "checksum" in err
    g = tables.unpack(tables.load("r9-nano"))
    g["num_cus"] = 0
    bad.write_bytes(tables.pack(g))
    code, _, err = run(capsys, "gst", "check", bad)
    assert code == cli.EXIT_INPUT and "num_cus" in err and "1..1024" in err
    toml = tmp_path / "bad.toml"
    toml.write_text((tables.PRESET_DIR / "r9-nano.toml").read_text().replace("value = 64\nsource = \"QuCo Table II: 64 compute", "value = 0\nsource = \"QuCo Table II: 64 compute"))
    code, _, err = run(capsys, "gst", "check", toml)
    assert code == cli.EXIT_INPUT and "num_cus = 0" in err


def test_profile_writes_a_chrome_trace(capsys, tmp_path, elf_path):
    trace = tmp_path / "t.json"
    code, out, _ = run(capsys, "profile", MM, "--trace", trace, "--firmware", elf_path)
    assert code == 0 and "plan" in out and "layout_write" in out
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["name"] for e in events if e.get("ph") == "X"}
    assert {"plan", "layout_write", "launch_check"} <= names
    total = sum(e["args"]["cycles"] for e in events if e.get("ph") == "X" and e["name"] == "main")
    assert total > 0


def test_diff_reports_agreement(capsys, elf_path):
    code, out, _ = run(capsys, "diff", MM, "--gpu", "r9-nano", "--firmware", elf_path)
    assert code == 0 and "yes" in out and "NO" not in out


def test_profile_accounts_for_every_cycle_and_sees_inlined_functions(elf_path):
    from quco.host import profile
    from quco.host.device import Device
    from quco.kernel.format import load_kernel
    dev = Device("r9-nano", elf_path, profile="cv32e40p", trace=True)
    res = dev.launch(load_kernel(MM))
    steps = profile.attribute(dev.image, dev.timer, res.cost.trace)
    rows = {r.name: r for r in profile.by_function(steps)}
    assert sum(r.cycles for r in rows.values()) == res.cost.cycles
    assert sum(r.instructions for r in rows.values()) == res.instructions
    # LTO inlines these into main; DWARF still tells them apart
    assert {"launch_check", "plan", "layout_write", "fits", "cache_find"} <= set(rows)
    assert rows["main"].total_cycles == res.cost.cycles
    assert rows["plan"].total_cycles > rows["plan"].cycles > 0



def test_explain_shows_each_step_of_the_pick(capsys, tmp_path):
    doc = json.loads(Path(MM).read_text())
    doc["name"] = "[red]MM[/red]"  # user text is shown literally, not as markup
    path = tmp_path / "mm.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "explain", path, "--gpu", "r9-nano")
    assert code == 0 and "[red]MM[/red] on r9-nano" in out
    # by hand: procTime(512) = 512/448 + (512/448 - 1) x 4 = 1.71429; memTime of a step (8 queues x
    # 2 B) = 850 + 512 x (16 / 8 + 32 / 64) = 2130; Little's ratio 2130 / 1.71429 / 16 = 77.6562 -> 8
    # -> x 32 / 64 CUs -> 4
    assert "1.71429" in out and "2130" in out and "77.6562" in out
    assert "high CI (> CI_HIGH): halved" in out and "tile 512, slots 4/4/4/4/4/4/4/4/4" in out
    for heading in ("merit", "cost", "weighted merit", "Little's ratio", "power of two", "CU step", "length bound",
                    "LDS bound"):
        assert heading in out


def test_explain_names_the_fallback_and_errors(capsys, tmp_path):
    doc = json.loads(Path(MM).read_text())
    doc["ablation"] = {"cu_aware": False}
    doc["queues"] = [{"type": "streaming", "length": 65536, "elem_size": 2, "count": 16}]
    path = tmp_path / "mm.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "explain", path)
    # Little's 8 slots x 16 queues need 256 barriers (limit 128): the high-CI fallback 4 fits
    assert code == 0 and "CI fallback 4 slots each" in out
    doc["partition"] = {"lds_bytes": 1024}
    path.write_text(json.dumps(doc))
    code, out, err = run(capsys, "explain", path)
    assert code == cli.EXIT_STATUS and out == "" and "no configuration fits the LDS" in err


# ---------------------------------------------------------------- hostile input (first five of issue #13)
@pytest.mark.parametrize("argv,code,words", [
    (["check", "{deep}"], 2, "nested too deeply"),
    (["launch", "/dev/zero"], 2, "not a regular file"),
    (["launch", str(MM_KERNEL), "--cycles", "--clock", "0"], 2, "--clock: 0 is out of range"),
    (["launch", str(MM_KERNEL), "--cycles", "--clock", "nan"], 2, "out of range"),
    (["gst", "pack", "r9-nano", "-o", "{dir}"], 2, "is a folder"),
])
def test_hostile_input_gets_a_clear_error(tmp_path, capsys, argv, code, words):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 1000 + "]" * 1000)
    argv = [a.format(deep=deep, dir=tmp_path) for a in argv]
    with contextlib.suppress(SystemExit):  # argparse exits with 2 for a bad option
        assert cli.main(argv) == code
    text = capsys.readouterr().err
    assert words in text and "Traceback" not in text


def test_user_text_is_shown_literally(tmp_path, capsys):
    k = tmp_path / "markup.json"
    k.write_text('{"name": "[/]", "compute_intensity": 1, '
                 '"queues": [{"type": "streaming", "length": 64, "elem_size": 2}]}')
    assert cli.main(["check", str(k)]) == 0
    assert f"{k}: ok ([/], 1 queues)" in capsys.readouterr().out.splitlines()


PIPED = "import sys; from quco.cli.main import main; sys.exit(main(sys.argv[1:]))"


def test_piped_output_keeps_each_line_whole(tmp_path, elf_path):
    """`quco-emu ... > file`, `| grep`, `| awk`: each line as the command made it, however long,
    and a table's cells uncut (a pipe used to get rich's wrap at 100 columns: a line broken in
    two, a no-wrap cell cut with "…")."""
    folder = tmp_path / ("d" * 150)
    folder.mkdir()
    k, name = folder / "k.json", "a kernel " + "x" * 110
    queue = "the rows of a rather long operand, named in sixty-four letters.."
    k.write_text(json.dumps({"name": name, "compute_intensity": 1,
                             "queues": [{"name": queue, "type": "streaming", "length": 4096, "elem_size": 4}]}))
    assert len(queue) == 64   # the schema's longest queue name
    for argv in (["check", k], ["launch", k, "--firmware", elf_path]):
        done = subprocess.run([sys.executable, "-c", PIPED, *map(str, argv)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        lines = done.stdout.splitlines()
        if argv[0] == "check":
            assert lines == [f"{k}: ok ({name}, 1 queues)"]
        else:
            assert "…" not in done.stdout
            row = [line for line in lines if queue in line]
            assert len(row) == 1 and "│ streaming │" in row[0] and row[0].endswith("│")


def test_a_terminal_keeps_its_width_and_a_pipe_gets_none(capsys):
    """The console asks the file it writes to: a terminal wraps at its width (COLUMNS here),
    anything else gets the line whole."""
    from rich.text import Text
    from quco.cli.common import PipeAwareConsole

    class Tty(io.StringIO):
        def isatty(self):
            return True
    line = " ".join(f"word{i}" for i in range(40))    # 270 characters
    for file, width in ((Tty(), 60), (io.StringIO(), None)):
        con = PipeAwareConsole(file=file, markup=False, emoji=False, highlight=False, _environ={"COLUMNS": "60", "TERM": "xterm"})
        con.print(Text(line))
        printed = file.getvalue().splitlines()
        if width is None:
            assert printed == [line]
        else:
            assert len(printed) > 1 and max(map(len, printed)) <= 60 and "".join(printed) == line


def test_failed_pack_leaves_the_old_table(tmp_path, capsys, monkeypatch):
    good = tmp_path / "g.gst"
    assert cli.main(["gst", "pack", "r9-nano", "-o", str(good)]) == 0
    before = good.read_bytes()

    def disk_full(src, dst):
        raise OSError(28, "No space left on device", str(src))
    monkeypatch.setattr(os, "replace", disk_full)
    assert cli.main(["gst", "pack", "mi100", "-o", str(good)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert good.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["g.gst"]  # no temporary file left behind


@pytest.mark.parametrize("model", ["resnet18", "mobilenet-v2"])
def test_import_names_a_fused_convolution_after_the_convolution(capsys, tmp_path, model):
    # the dynamo export fuses each BatchNorm into its Conv, which then carries the BatchNorm's
    # module (layer1.0.bn1); the TorchScript export names the Conv module itself: the two agree
    pytest.importorskip("onnx")
    fixtures = Path(__file__).parent / "fixtures" / "onnx"
    names = {}
    for variant in (model, f"{model}-torchscript"):
        out = tmp_path / f"{variant}.json"
        code, _, _ = run(capsys, "import", fixtures / f"{variant}.onnx", "-o", out)
        assert code == 0
        names[variant] = [lay["name"] for lay in json.loads(out.read_text())["layers"]]
    assert names[model] == names[f"{model}-torchscript"]
    assert not [n for n in names[model] if ".bn" in n]   # no BatchNorm names a layer
    if model == "resnet18":
        assert names[model][:3] == ["conv1", "layer1.0.conv1", "layer1.0.conv2"]


def _terminal(monkeypatch, module):
    from rich.console import Console
    buf = io.StringIO()
    monkeypatch.setattr(module, "err", Console(file=buf, force_terminal=True, width=100, highlight=False, markup=False))
    return buf


def test_run_shows_progress_and_what_it_searches_on_a_terminal(capsys, monkeypatch):
    from quco.cli import run as cli_run
    from quco import examples
    bar = _terminal(monkeypatch, cli_run)
    monkeypatch.setattr(cli_run, "BAR_FROM", 2)   # Whisper's 827 layers draw it; two layers are quicker
    code, out, _ = run(capsys, "run", examples.WORKLOADS / "residual-mlp.json")
    drawn = bar.getvalue()
    assert code == 0 and "layers" in drawn and "2/2" in drawn
    assert "ATT/Fine-Tuned baselines: 2 searches" in drawn and "exhaustive on 2" in drawn
    assert "ATT/Fine-Tuned and Semi-Tuned baselines: searching" in drawn       # the spinner while they run
    lines = out.splitlines()
    totals = [i for i, line in enumerate(lines) if line.startswith("Residual-MLP: ")]
    assert totals and " us on the model, 2 layers" in lines[totals[0]]         # the headline first
    speed = [line for line in lines if line.startswith("QuCo's speedup over ATT/Fine-Tuned ")]
    assert speed and speed[0].split()[4].endswith("x:")                         # ... its number right after
    # the totals, short lines as made (a pipe no longer wraps them), up to the baselines' search
    end = next(i for i, line in enumerate(lines) if line.startswith("ATT/Fine-Tuned baselines: "))
    assert max(len(line) for line in lines[totals[0]:end]) <= 100


def test_the_dvfs_table_keeps_whole_layer_names_and_short_lines(capsys):
    from quco import examples
    code, out, _ = run(capsys, "run", examples.WORKLOADS / "whisper-tiny.json", "--gpu", "mi100", "--dvfs",
                       "mi100-u-shaped", "--no-baselines")
    assert code == 0 and "…" not in out
    table = out[out.index("DVFS trace"):]
    joined = "".join(line.strip("│ ") for line in table.splitlines())     # names fold onto lines, never cut
    assert "encoder.layers[2].out_proj" in joined.replace("│", "").replace(" ", "")
    summary = table[table.index("DVFS: QuCo-HW's speedup over QuCo-SW "):].splitlines()
    assert summary[0].split()[5].endswith("x") and all(len(line) <= 100 for line in summary)


def test_diff_says_why_its_counts_are_above_launchs(capsys, elf_path):
    code, out, _ = run(capsys, "diff", "--gpu", "r9-nano", "--firmware", elf_path)
    assert code == 0 and "after the ones above it on one booted unit" in " ".join(out.split())


def test_a_good_profile_names_no_function_after_a_failure(capsys, elf_path):
    code, out, _ = run(capsys, "profile", MM, "--firmware", elf_path)
    assert code == 0 and "check_header_ranges" in out and "bad_" not in out


def test_the_documented_outputs_are_ignored_by_git():
    # every file or folder the README's commands write (-o, --out, --plot, --trace, ..., > FILE)
    # with a relative path lands in the checkout: git must not offer it for a commit
    import re
    import shutil
    import subprocess
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout")
    readme = (root / "README.md").read_text()
    written = set()
    for line in readme.splitlines():
        if line.startswith("quco-emu ") or line.startswith("make "):
            for m in re.finditer(r"(?:-o|--out|--plot|--trace|--model-trace)\s+(\S+)|>\s*(\S+)", line.split("#")[0]):
                path = m.group(1) or m.group(2)
                if not path.startswith("/"):
                    written.add(path)
    assert {"my-gpu.toml", "my-gpu.gst", "trace.json", "model.json"} <= written
    ignored = subprocess.run(["git", "check-ignore", *sorted(written)], cwd=root, capture_output=True, text=True).stdout
    assert set(ignored.split()) == written
