"""Issue #24 part 5: the input surfaces added since the last hostile round, one test per class
of failure: sweep errors and their exit codes, a scheduler that accepts and never answers,
number parsing, deep workload groups, maximal sizes, messages that name what the user wrote,
GPUs named in workloads and traces, terminal escapes, closed pipes, signals, options that
were silently dropped, DVFS traces for another GPU or longer than the workload."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import MM_KERNEL, clean_error
from quco import examples
from quco.cli import run as cli_run
from quco.cli.fuzz_files import run_cli as _run_cli
from quco.perfmodel import sim_data
from quco.util import parallel

# A command that hangs is stopped after HANG_S: a bound for a hang, not for a slow machine (every
# command here takes seconds; under a load of 8 on 2 cores, ten times that). Whether work was
# done "at once" is checked by what ran (no_work_ran below), never by the seconds it took.
HANG_S = 300


def run_cli(argv, timeout=HANG_S):
    return _run_cli(argv, timeout=max(timeout, HANG_S))


MM = str(MM_KERNEL)
FAST_EVAL = ["evaluate", MM, "--gpu", "r9-nano", "--no-ablation", "--no-portability"]
GEMM = {"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64}}


def write(folder, doc, name="w.json"):
    path = folder / name
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def no_work_ran(monkeypatch, fresh_evaluations):
    """The calls a command made into the performance model's sweep and simulation: a refusal
    "up front" or "at once" leaves both lists empty (events, not seconds)."""
    calls = {"sweep": [], "simulation": []}
    real_run, real_init = parallel.run, sim_data.Environment.__init__
    # fresh_evaluations: an earlier test's evaluations would answer without simulating

    def counted_run(fn, tasks, *a, **kw):
        calls["sweep"].append(len(list(tasks)))
        return real_run(fn, tasks, *a, **kw)

    def counted_init(self, *a, **kw):
        calls["simulation"].append(1)
        real_init(self, *a, **kw)
    monkeypatch.setattr(parallel, "run", counted_run)
    monkeypatch.setattr(sim_data.Environment, "__init__", counted_init)
    return calls




# ---------------------------------------------------------------- sweeps
@pytest.mark.parametrize("argv,words", [
    (["--workers", "0"], ["--workers: '0': expected a whole number 1..1024"]),
    (["--workers", "\u00b2"], ["--workers", "in digits 0-9"]),
    (["--workers", "9" * 5000], ["--workers", "expected a whole number"]),
    (["--scheduler", "foo"], ["--scheduler 'foo': expected a Dask scheduler address PROTOCOL://HOST:PORT"]),
    (["--scheduler", ""], ["--scheduler"]),
    (["--scheduler", "tcp://127.0.0.1:8786", "--workers", "2"], ["--workers 2: local worker processes"]),
    (["--out", "{d}/x.xlsx"], ["x.xlsx: the table is written as CSV (.csv) or Parquet (.parquet)"]),
    (["--out", ""], ["no table file given (an empty name)"]),
    (["--out", "{d}/sub.csv"], ["sub.csv: is a folder"]),
    (["--plot", ""], ["no output folder given (an empty name)"]),
    (["--plot", "{d}/f.csv"], ["f.csv: is a regular file; expected a folder"]),
])
def test_evaluate_options_are_refused_before_the_sweep(tmp_path, argv, words, no_work_ran):
    (tmp_path / "f.csv").write_text("old")
    (tmp_path / "sub.csv").mkdir()
    o = run_cli(FAST_EVAL + [a.replace("{d}", str(tmp_path)) for a in argv], timeout=60)
    clean_error(o, 2, *words)
    assert no_work_ran == {"sweep": [], "simulation": []}  # up front: no sweep ran
    assert (tmp_path / "f.csv").read_text() == "old" and not (tmp_path / "x.xlsx").exists()


def test_parquet_without_pyarrow_is_refused_up_front(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    o = run_cli(FAST_EVAL + ["--out", str(tmp_path / "t.parquet")], timeout=60)
    clean_error(o, 2, "t.parquet: writing Parquet needs pyarrow (pip install pyarrow)")
    assert list(tmp_path.iterdir()) == []


def test_evaluate_writes_parquet(tmp_path, no_work_ran):
    import pyarrow.parquet as pq
    o = run_cli(FAST_EVAL + ["--workers", "1", "--out", str(tmp_path / "t.parquet")], timeout=120)
    assert o.code == 0, o.err
    assert no_work_ran["sweep"] and no_work_ran["simulation"]  # the counter sees what a sweep does
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert {r["case"] for r in rows} >= {"QuCo", "ATT/Fine-Tuned"} and {r["kernel"] for r in rows} == {"Matrix-Matrix"}


def test_an_unreachable_scheduler_is_exit_2(monkeypatch):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 0.5)  # its bound ends the wait: the test below
    o = run_cli(FAST_EVAL + ["--scheduler", "tcp://127.0.0.1:1"], timeout=30)
    clean_error(o, 2, "cannot reach Dask scheduler tcp://127.0.0.1:1")


def test_a_scheduler_that_accepts_and_never_answers_is_bounded(monkeypatch):
    """Something listens, accepts and says nothing (distributed waits for its handshake for ever)."""
    # a shorter bound than the real 3 s (1 s: a connection on this host is made well within it,
    # even loaded): what is checked is that the handshake's own bound
    # (CONNECT_TIMEOUT_S + 1, named in the message) ends the wait, whatever its value
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 1)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        t0 = time.perf_counter()
        o = run_cli(FAST_EVAL + ["--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}"], timeout=60)
        seconds = time.perf_counter() - t0
    finally:
        stop.set()
        thread.join(5)
        for c in held:
            c.close()
        server.close()
    clean_error(o, 2, "no answer within 2 s", "does not speak Dask's protocol")
    # the bound is the point here: the handshake's own (CONNECT_TIMEOUT_S), not distributed's
    # wait for ever; the margin is generous for a loaded machine and still far below HANG_S
    assert held and seconds < parallel.CONNECT_TIMEOUT_S + 60


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("share,words", [
    ("\u00b2", "CUS '\u00b2': expected a whole number 0..1024 in digits 0-9"),
    ("\u0663", "CUS '\u0663'"),                          # int() would read 3
    ("9" * 10_000, "CUS '9999"),
    ("8:\u0661\u0662\u0668", "LDS_BYTES"),
    ("8:1:2", "more than one ':'"),
    ("-1", "CUS '-1'"),
])
def test_tenant_shares_are_ascii_whole_numbers(tmp_path, share, words):
    w = write(tmp_path, {"name": "w", "layers": [GEMM]})
    o = run_cli(["run", f"{w}@{share}", "--no-baselines"])
    clean_error(o, 2, words, "expected WORKLOAD@CUS or WORKLOAD@CUS:LDS_BYTES")
    assert len(o.err) < 1000  # a 10,000-digit value is cut short


@pytest.mark.parametrize("value,words", [("\u0667\u0660\u0660", "is not a number in digits 0-9"),
                                         ("9" * 10_000, "9999... is out of range")])
def test_clock_values_are_ascii_and_short_in_messages(value, words):
    o = run_cli(["launch", MM, "--cycles", "--clock", value])
    assert o.code == 2 and words in o.err and len(o.err) < 1500, o.err


# ---------------------------------------------------------------- deep groups, maximal sizes
def nested(depth):
    inner = dict(GEMM)
    for i in range(depth):
        inner = {"name": f"g{i}", "layers": [inner]}
    return {"name": "deep", "layers": [inner]}


@pytest.mark.parametrize("depth", [33, 200, 400])
def test_deeply_nested_groups_are_refused(tmp_path, depth):
    o = run_cli(["run", write(tmp_path, nested(depth)), "--no-baselines"], timeout=60)
    clean_error(o, 2, "groups nested more than 32 deep")


def test_groups_32_deep_run(tmp_path):
    o = run_cli(["run", write(tmp_path, nested(32)), "--no-baselines", "--json"], timeout=60)
    assert o.code == 0, o.err
    assert json.loads(o.out)["layers"][0]["name"] == ".".join(f"g{i}" for i in reversed(range(32))) + ".fc"


@pytest.mark.parametrize("argv", [["search", "{k}"], ["launch", "{k}", "--model"], ["evaluate", "{k}", "--gpu", "r9-nano"],
                                  ["run", "{w}", "--no-baselines"]], ids=["search", "launch --model", "evaluate", "run"])
def test_sizes_the_model_would_take_hours_on_are_refused_at_once(tmp_path, argv, no_work_ran):
    k = write(tmp_path, {"name": "k", "compute_intensity": 1.0,
                         "queues": [{"type": "streaming", "length": 2**32 - 1, "elem_size": 2}]}, "k.json")
    w = write(tmp_path, {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 2**30, "n": 64}}]})
    o = run_cli([a.format(k=k, w=w) for a in argv], timeout=60)
    clean_error(o, 2, "the performance model walks every tile of a work-group", "tiles of 64 elements",
                "at most 4,096")
    assert ("67,108,864 tiles" if argv[0] != "run" else "33,554,432 tiles") in o.err
    assert no_work_ran["simulation"] == [] and sum(no_work_ran["sweep"]) == 0  # at once: nothing simulated


def test_the_unit_alone_takes_any_length(tmp_path):
    k = write(tmp_path, {"name": "k", "compute_intensity": 1.0,
                         "queues": [{"type": "streaming", "length": 2**32 - 1, "elem_size": 2}]}, "k.json")
    assert run_cli(["launch", k]).code == 0


def test_long_workloads_say_what_the_run_will_do(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_run, "PROGRESS_FROM", 3)
    w = write(tmp_path, {"name": "w", "layers": [dict(GEMM, repeat=3)]})
    o = run_cli(["run", w, "--no-baselines"], timeout=60)
    assert o.code == 0 and "running 3 layers" in o.err


def test_the_runner_reports_progress_per_layer():
    from quco.workloads import format, runner
    w = format.load(examples.WORKLOADS / "attention-score.json")
    seen = []
    runner.run(runner.Session("r9-nano"), [runner.Tenant(w)], lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


# ---------------------------------------------------------------- messages
def test_a_derived_kernel_error_names_the_sizes_the_user_wrote(tmp_path):
    w = write(tmp_path, {"name": "w", "layers": [{"name": "fc", "gemm": {"m": 2**30, "k": 64, "n": 2**30}}]})
    o = run_cli(["run", w, "--no-baselines"])
    clean_error(o, 2, "layers[0] (fc): gemm: m = 1073741824, k = 64, n = 1073741824: the kernel these sizes give")
    assert "Kernel(" not in o.err and "kernel_file" not in o.err


@pytest.mark.parametrize("where,words", [
    ("workload", "w.json: gpu: nope: no such file and no such preset"),
    ("trace", "t.json: gpu: nope: no such file and no such preset"),
    ("--dvfs", "--dvfs: nope: no such DVFS trace file and no bundled trace of that name (bundled: mi100-decrease-hold"),
])
def test_gpus_and_traces_are_reported_with_file_and_field(tmp_path, where, words):
    w = write(tmp_path, {"name": "w", "layers": [GEMM], **({"gpu": "nope"} if where == "workload" else {})})
    t = write(tmp_path, {"name": "t", "gpu": "nope", "clocks_mhz": [1000]}, "t.json")
    argv = ["run", w, "--no-baselines"] + {"workload": [], "trace": ["--dvfs", t], "--dvfs": ["--dvfs", "nope"]}[where]
    clean_error(run_cli(argv), 2, words)


def test_a_trace_for_another_gpu_is_refused(tmp_path):
    w = write(tmp_path, {"name": "w", "layers": [GEMM]})
    o = run_cli(["run", w, "--gpu", "r9-nano", "--dvfs", "mi100-u-shaped", "--no-baselines"])
    clean_error(o, 2, "mi100-u-shaped.json: gpu: the trace is made for mi100, but the run is on r9-nano (--gpu)")
    o = run_cli(["run", w, "--dvfs", "mi100-u-shaped", "--no-baselines", "--json"], timeout=60)  # the trace's GPU
    assert o.code == 0 and json.loads(o.out)["gpu"] == "mi100"


def test_a_trace_longer_than_the_workload_is_run_with_a_warning(tmp_path):
    w = write(tmp_path, {"name": "w", "layers": [dict(GEMM, repeat=3)]})
    t = write(tmp_path, {"name": "t", "clocks_mhz": [1000] * 100_000}, "t.json")
    o = run_cli(["run", w, "--gpu", "mi100", "--dvfs", t, "--no-baselines", "--json"], timeout=60)
    assert o.code == 0 and "warning:" in o.err and "clocks_mhz has 100,000 clocks for 3 layers" in o.err
    assert len(json.loads(o.out)["dvfs"]["rows"]) == 3


@pytest.mark.parametrize("doc,words", [
    ({"name": "w\x1b[2J", "layers": [GEMM]}, 'name: "w\\u001b[2J" contains the control character \\x1b'),
    ({"name": "w", "layers": [dict(GEMM, name="fc\x9b1m")]}, "layers[0] (fc\\x9b1m): name:"),
    ({"name": "w", "layer_types": {"t\u202e": GEMM["gemm"] and {"gemm": GEMM["gemm"]}}, "layers": [{"name": "a", "type": "t\u202e"}]},
     "contains the control character \\u202e"),
    ({"name": "w", "layers": [{"name": "g\x1b]0;x\x07", "layers": [GEMM]}]}, "layers[0]"),
])
def test_terminal_escapes_in_workload_names_are_refused(tmp_path, doc, words):
    clean_error(run_cli(["run", write(tmp_path, doc), "--no-baselines"]), 2, words)


def test_terminal_escapes_in_trace_names_are_refused(tmp_path):
    w = write(tmp_path, {"name": "w", "layers": [GEMM]})
    t = write(tmp_path, {"name": "t\x1b[2J", "clocks_mhz": [1000]}, "t.json")
    clean_error(run_cli(["run", w, "--dvfs", t, "--no-baselines"]), 2, "--dvfs:", 'name: "t\\u001b[2J"')


@pytest.mark.parametrize("option", ["--trace", "--plot"])
def test_empty_output_options_are_refused(tmp_path, option):
    w = write(tmp_path, {"name": "w", "layers": [GEMM]})
    clean_error(run_cli(["run", w, "--no-baselines", option, ""]), 2, "(an empty name)")


# ---------------------------------------------------------------- pipes and signals
CLI = [sys.executable, "-c", "import sys; from quco.cli.main import main; sys.exit(main(sys.argv[1:]))"]


def test_a_table_into_a_closed_pipe_ends_quietly():
    """`quco-emu evaluate | head -1`: rich's own handler exited 1 (the "disagree" code) silently."""
    read, write_end = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(CLI + FAST_EVAL + ["--workers", "1"], stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 0 and done.stderr == b"", done.stderr


def alive(session: int) -> list[str]:
    """Processes of a session that still run (zombies are dead, waiting for their parent), as
    "pid state name", read from /proc: a minimal Debian has no `ps` (procps)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        state, sid = rest[0], int(rest[3])  # proc(5): state ppid pgrp session ...
        if sid == session and state != "Z":
            found.append(f"{pid} {state} {name}")
    return found


def last_lines(data: bytes, n: int = 6) -> str:
    """The end of a child's stderr, enough to see what went wrong and no more."""
    return "\n".join(data.decode(errors="replace").strip().splitlines()[-n:])


def test_alive_reads_the_sessions_processes():
    """alive() itself: a child of a new session is seen, with its name, until it has ended."""
    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert [line.split()[0::2] for line in alive(p.pid)] == [[str(p.pid), "sleep"]]
    finally:
        p.kill()
        p.wait()
    assert alive(p.pid) == []


# How long a signalled evaluate may take to end: it ends its workers and exits in well under a
# second; the bound is generous for a loaded 2-core machine (load 8 and more), where the point
# is "it ends" rather than how fast.
END_BOUND_S = 120


@pytest.mark.parametrize("moment", [2, 5], ids=["while the pool starts", "while it runs"])
@pytest.mark.parametrize("sig,code,word,group", [(signal.SIGTERM, 143, "terminated", False),
                                                 (signal.SIGINT, 130, "interrupted", False),
                                                 (signal.SIGINT, 130, "interrupted", True)],
                         ids=["SIGTERM", "SIGINT", "Ctrl-C (the whole process group)"])
def test_signals_end_evaluate_and_its_workers(sig, code, word, group, moment):
    """A signal as soon as the pool's first process exists (`moment` 2: the CLI and the fork
    server), or once all run (5: with the 2 workers and the resource tracker): one word on
    stderr, the shell's exit code, and no process of the session left. The waits count
    processes, not seconds: the sweep is long enough (every preset x kernel) that it is still
    running when the signal comes, on any machine."""
    p = subprocess.Popen(CLI + ["evaluate", "--workers", "2", "--no-portability"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        while len(alive(p.pid)) < moment and p.poll() is None:
            time.sleep(0.02)
        assert p.poll() is None, f"evaluate ended before its pool started: {last_lines(p.stderr.read())}"
        if group:
            os.killpg(p.pid, sig)
        else:
            p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=END_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"evaluate still running {END_BOUND_S} s after {sig.name}; its session: {alive(p.pid)}",
                        pytrace=False)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == code and err.decode().strip() == word, (p.returncode, last_lines(err))
    deadline = time.monotonic() + END_BOUND_S
    while alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(p.pid) == []


def test_evaluate_writes_csv_to_stdout(capfdbinary):
    # In this process: /dev/stdout is descriptor 1, which capfd captures together with whatever
    # else reaches stdout (sys.stdout too). The same contract in a real process, its exit code and
    # its own stdout: test_output_targets.py's test_output_to_stdout_is_the_file_alone.
    from quco.cli.main import main
    assert main(FAST_EVAL + ["--workers", "1", "--out", "/dev/stdout"]) == 0
    out, err = capfdbinary.readouterr()
    lines = out.decode().splitlines()
    assert lines[0].startswith("gpu,kernel,case,") and len(lines) == 8, (out, err)
    assert b"wrote /dev/stdout (7 rows)" in err
