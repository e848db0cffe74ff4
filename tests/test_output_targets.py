"""Issue #24 part 2: what every writing command does with an output path that already exists
and is not a regular file (util/atomic.py; README "Output files"). Each command is run on each
kind of target, as root and as the unprivileged user `nobody` (a child process that drops its
privileges): regular and missing files are written atomically, a symbolic link is followed and
stays a link, a FIFO is written through to its reader, a character device is written through
and never replaced (a private 1,7 device, /dev/full: "No space left on device", exit 2), a
folder is refused with exit 2 naming it."""
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import MM_KERNEL
from quco import examples
from quco.gst import tables
from quco.util import atomic

ROOT = os.geteuid() == 0
OLD = b"the previous output\n"
WORKLOAD = str(examples.WORKLOADS / "attention-score.json")
FAST_EVAL = ["--gpu", "r9-nano", "--no-ablation", "--no-portability", "--workers", "1"]
# command -> (argv with {o} for the output path, the output file's suffix)
COMMANDS = {
    "gst pack -o": (["gst", "pack", "r9-nano", "-o", "{o}"], ".gst"),
    "profile --trace": (["profile", str(MM_KERNEL), "--trace", "{o}"], ".json"),
    "launch --model-trace": (["launch", str(MM_KERNEL), "--model", "--model-trace", "{o}"], ".json"),
    "evaluate --out": (["evaluate", str(MM_KERNEL), *FAST_EVAL, "--out", "{o}"], ".csv"),
    "run --trace": (["run", WORKLOAD, "--no-baselines", "--trace", "{o}"], ".json"),
    "import -o": (["import", "{onnx}", "-o", "{o}"], ".json"),
}
KINDS = ("regular", "missing", "folder", "symlink", "fifo", "chardev")


def make_target(folder: Path, kind: str, suffix: str) -> Path:
    """The output path `t<suffix>` in `folder`, made as `kind`."""
    path = folder / f"t{suffix}"
    if kind == "regular":
        path.write_bytes(OLD)
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink":
        (folder / f"real{suffix}").write_bytes(OLD)
        path.symlink_to(f"real{suffix}")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "chardev":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # private /dev/full
    return path


def onnx_model(folder: Path) -> str:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto as T, helper
    w = helper.make_tensor("w", T.FLOAT16, [64, 32], [0] * 64 * 32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT16, [16, 64])],
                          [helper.make_tensor_value_info("y", T.FLOAT16, None)], initializer=[w])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(g), path)
    return str(path)


# The child: runs every case in one process (imports paid once), a reader thread on each FIFO,
# and prints [{case, code, out, err, fifo_bytes}] as JSON.
CHILD = r"""
import json, os, sys, threading
uid, staged = int(sys.argv[1]), sys.argv[2]
if staged:  # the package's copy the unprivileged user can read (run_as)
    sys.path.insert(0, staged)
from quco.cli.fuzz_files import run_cli
import quco.gst.tables
assert not staged or quco.gst.tables.__file__.startswith(staged + "/"), quco.gst.tables.__file__
cases, warm = json.loads(sys.stdin.read())
if uid:
    # Python and the venv may live under /root (mode 0700, as here and in a clone there): run
    # each command once as root, so every module it imports is loaded, then drop to the
    # unprivileged user for the cases
    for argv in warm:
        run_cli(argv, timeout=60)
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
results = []
for case in cases:
    got = []
    reader = None
    if case["fifo"]:
        def read(path=case["path"]):
            with open(path, "rb") as f:
                got.append(f.read())
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
    o = run_cli(case["argv"], timeout=60)
    if reader:
        reader.join(1)
        if reader.is_alive():  # the command never opened the FIFO: release the reader
            os.close(os.open(case["path"], os.O_WRONLY | os.O_NONBLOCK))
            reader.join(5)
    results.append({"case": case["case"], "kind": o.kind, "code": o.code, "out": o.out, "err": o.err + o.trace,
                    "fifo_bytes": len(got[0]) if got else None})
print(json.dumps(results))
"""


CHECKOUT = Path(__file__).resolve().parent.parent


def stage_package(folder: Path) -> Path:
    """A copy of the package (code, firmware image, presets, examples: what quco.X reads from
    its folder) laid out as installed, quco/X/, in `folder`, readable by every user: a checkout
    under a private folder (a clone in /root, mode 0700) is not, and the package reads its data
    files (presets, the firmware, the kernels) when a command runs, not at import."""
    shutil.copytree(CHECKOUT / "quco", folder / "quco", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IRGRP | stat.S_IROTH | (0o055 if path.is_dir() else 0))
    return folder


def run_as(uid: int, cases: list[dict]) -> dict:
    """Run the cases in one child as `uid`. An unprivileged child runs the package from a
    copy it can read (stage_package), the checkout's example files in the cases' command
    lines replaced by theirs; the code, and so what the cases check, is the checkout's."""
    warm = tempfile.mkdtemp(prefix="quco-warm-")
    staged = ""
    if uid:
        staged = str(stage_package(Path(tempfile.mkdtemp(prefix="quco-staged-"))))
        to_staged = lambda a: a.replace(f"{CHECKOUT}/", f"{staged}/")  # noqa: E731
        cases = [{**c, "argv": [to_staged(a) for a in c["argv"]]} for c in cases]
    firsts = {}
    for i, c in enumerate(cases):  # each command once, into a folder of root's
        argv = c["argv"]
        key = tuple(a for a in argv if not a.startswith("/"))
        firsts.setdefault(key, [a if a != c["path"] else os.path.join(warm, f"{i}{Path(a).suffix}") for a in argv])
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(uid), staged],
                              input=json.dumps([cases, list(firsts.values())]), capture_output=True,
                              text=True, timeout=600, env={**os.environ, "HOME": "/tmp"})
    finally:
        for folder in (warm, staged):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return {r["case"]: r for r in json.loads(done.stdout)}


USERS = [pytest.param(0, id="root", marks=pytest.mark.skipif(not ROOT, reason="the root case needs root (CI runs as root)")),
         pytest.param(pwd.getpwnam("nobody").pw_uid if ROOT else os.geteuid(), id="non-root")]
NOBODY = pwd.getpwnam("nobody").pw_uid


def shared_folder() -> Path:
    """A folder the unprivileged child can use (pytest's tmp_path is root's own, mode 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="quco-targets-"))
    os.chmod(folder, 0o755)
    return folder


def writing_cases(top: Path, uid: int):
    """Every writing command on every kind of target: the cases and where each writes."""
    if not ROOT and "chardev" in KINDS:
        kinds = [k for k in KINDS if k != "chardev"]  # mknod needs root; CI (root) runs it
    else:
        kinds = list(KINDS)
    model = onnx_model(top)
    cases, where = [], {}
    for command, (argv, suffix) in COMMANDS.items():
        for kind in kinds:
            folder = top / f"{command.split()[0]}-{command.split()[-1].strip('-')}-{kind}"
            folder.mkdir()
            path = make_target(folder, kind, suffix)
            if uid:
                subprocess.run(["chown", "-R", "-h", f"{uid}:{uid}", str(folder)], check=True)
            name = f"{command} / {kind}"
            where[name] = (folder, path, kind)
            cases.append({"case": name, "fifo": kind == "fifo", "path": str(path),
                          "argv": [a.replace("{o}", str(path)).replace("{onnx}", model) for a in argv]})
    return cases, where


def plot_cases(top: Path, uid: int):
    """--plot on each kind of target, with the exit code each must give."""
    kinds = {"missing": 0, "folder": 0, "symlink": 0, "regular": 2, "fifo": 2} | ({"chardev": 2} if ROOT else {})
    cases, where = [], {}
    for command in ("run", "evaluate"):
        for kind, code in kinds.items():
            folder = top / f"{command}-plot-{kind}"
            folder.mkdir()
            if kind == "symlink":
                (folder / "real").mkdir()
                path = folder / "figs"
                path.symlink_to("real")
            else:
                path = make_target(folder, "folder" if kind == "folder" else kind, "") if kind != "missing" \
                    else folder / "figs"
            if uid:
                subprocess.run(["chown", "-R", "-h", f"{uid}:{uid}", str(folder)], check=True)
            argv = (["run", WORKLOAD, "--no-baselines", "--plot", str(path)] if command == "run" else
                    ["evaluate", str(MM_KERNEL), *FAST_EVAL, "--plot", str(path)])
            if command == "evaluate" and code == 0 and kind != "missing":
                continue  # figures are slow to draw; the missing case draws them once
            where[f"{command} {kind}"] = (path, kind, code)
            cases.append({"case": f"{command} {kind}", "fifo": False, "path": str(path), "argv": argv})
    return cases, where


def read_only_case(top: Path):
    """A read-only file of the unprivileged user's, in a folder of theirs."""
    path = top / "t.gst"
    path.write_bytes(OLD)
    os.chmod(path, 0o444)
    os.chown(top, NOBODY, NOBODY)
    os.chown(path, NOBODY, NOBODY)
    return [{"case": "ro", "fifo": False, "path": str(path), "argv": ["gst", "pack", "r9-nano", "-o", str(path)]}], path


def locked_case(top: Path):
    """An output in a folder of root's the unprivileged user may not create files in."""
    locked = top / "locked"
    locked.mkdir(mode=0o755)
    return [{"case": "locked", "fifo": False, "path": str(locked / "t.json"),
             "argv": ["profile", str(MM_KERNEL), "--trace", str(locked / "t.json")]}], locked


@pytest.fixture(scope="module")
def outcomes():
    """outcomes(uid) -> {group: (results, where)}: every case of this module's tests that runs
    as `uid` (each writing command on each kind of target, --plot on each kind, and as the
    unprivileged user the read-only file and the locked folder), run in one child for that
    user. A child pays the package's imports and the commands' first runs (about 2 s, the
    Matrix-Matrix evaluation most of it): one per user rather than one per test. Each case
    has its own folder, so what one case leaves is no other's to see."""
    done, tops = {}, []

    def get(uid: int) -> dict:
        if uid not in done:
            top = shared_folder()
            tops.append(top)
            groups = {}
            for group, make in (("writing", writing_cases), ("plot", plot_cases)):
                (top / group).mkdir(mode=0o755)
                groups[group] = make(top / group, uid)
            if ROOT and uid == NOBODY:
                for group, make in (("ro", read_only_case), ("locked", locked_case)):
                    (top / group).mkdir(mode=0o755)
                    groups[group] = make(top / group)
            results = run_as(uid, [c for cases, _ in groups.values() for c in cases])
            done[uid] = {group: (results, where) for group, (_, where) in groups.items()}
        return done[uid]
    yield get
    for top in tops:
        subprocess.run(["rm", "-rf", str(top)], check=False)


@pytest.mark.parametrize("uid", USERS)
def test_every_writing_command_on_every_kind_of_target(uid, outcomes):
    results, where = outcomes(uid)["writing"]
    for name, (folder, path, kind) in where.items():
        r = results[name]
        assert "Traceback" not in r["err"], (name, r["err"])
        if kind in ("regular", "missing"):
            assert r["code"] == 0, (name, r["err"])
            assert path.is_file() and not path.is_symlink() and path.read_bytes() != OLD and path.stat().st_size > 0, name
        elif kind == "symlink":
            assert r["code"] == 0, (name, r["err"])
            assert path.is_symlink(), f"{name}: the link was replaced"
            real = path.resolve()
            assert real.name.startswith("real") and real.read_bytes() != OLD, name
        elif kind == "fifo":
            assert r["code"] == 0, (name, r["err"])
            assert stat.S_ISFIFO(os.lstat(path).st_mode), f"{name}: the FIFO was replaced"
            assert r["fifo_bytes"], f"{name}: the reader got nothing"
        elif kind == "chardev":
            assert r["code"] == 2 and "No space left on device" in r["err"] and str(path) in r["err"], (name, r)
            st = os.lstat(path)
            assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 7), f"{name}: the device was replaced"
        elif kind == "folder":
            assert r["code"] == 2 and f"{path}: is a folder" in r["err"], (name, r)
            assert path.is_dir() and list(path.iterdir()) == [], name
        assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")], f"{name}: temporary file left"


@pytest.mark.parametrize("uid", USERS)
def test_plot_folders_by_kind(uid, outcomes):
    """--plot takes a folder: missing (created), a folder or a link to one; a file, FIFO or
    device is refused before the run, naming it."""
    results, where = outcomes(uid)["plot"]
    for name, (path, kind, code) in where.items():
        r = results[name]
        assert r["code"] == code and "Traceback" not in r["err"], (name, r)
        if code:
            assert str(path) in r["err"] and "expected a folder" in r["err"], (name, r["err"])
        elif name != "run missing":  # run --no-baselines draws no figure and makes no folder
            assert path.is_dir(), name
    assert stat.S_ISFIFO(os.lstat(where["run fifo"][0]).st_mode)


def test_descriptors_are_written_through(tmp_path):
    """/dev/stdout and /dev/fd/N: the open descriptor itself (the shell's file, its offset and
    O_APPEND), not a file put in place of whatever it points to."""
    log = tmp_path / "log"
    with open(log, "ab") as f:
        f.write(b"kept\n")
        f.flush()
        atomic.write_bytes(f"/dev/fd/{f.fileno()}", b"table\n")
        atomic.write_bytes(f"/proc/self/fd/{f.fileno()}", b"again\n")
    assert log.read_bytes() == b"kept\ntable\nagain\n"
    read, write = os.pipe()
    got = []
    t = threading.Thread(target=lambda: got.append(os.read(read, 100)))
    t.start()
    atomic.write_bytes(f"/dev/fd/{write}", b"through a pipe")
    t.join(5)
    os.close(read)
    os.close(write)
    assert got == [b"through a pipe"]


@pytest.mark.parametrize("make,words", [
    (lambda p: p.symlink_to("nowhere"), "a symbolic link to a missing file"),
    (lambda p: (p.with_name("d").mkdir(), p.symlink_to("d")), "is a folder (a symbolic link to"),
    (lambda p: None, None),
])
def test_links_to_nothing_or_to_a_folder_are_refused(tmp_path, make, words):
    path = tmp_path / "out.json"
    make(path)
    if words is None:
        atomic.check_target(path)  # a missing file is fine
        return
    with pytest.raises(atomic.TargetError, match=words.replace("(", r"\(")):
        atomic.check_target(path)


def test_a_fifo_without_a_reader_is_refused_in_bounded_time(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic, "FIFO_WAIT_S", 0.3)
    os.mkfifo(tmp_path / "f")
    with pytest.raises(OSError, match="cannot write .*f: No such device or address"):
        atomic.write_bytes(tmp_path / "f", b"x")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "f").st_mode) and list(tmp_path.iterdir()) == [tmp_path / "f"]


@pytest.mark.skipif(not ROOT, reason="a read-only file is writable by root; the check is for other users")
def test_a_read_only_file_is_not_replaced_by_another_user(outcomes):
    """As with `>` in a shell: a file its owner made read-only is refused, though the folder
    would allow a rename over it."""
    results, path = outcomes(NOBODY)["ro"]
    r = results["ro"]
    assert r["code"] == 2 and "read-only" in r["err"] and path.read_bytes() == OLD


@pytest.mark.skipif(not ROOT, reason="needs root to make a folder the unprivileged user cannot write")
def test_a_folder_the_user_cannot_write_is_refused_up_front(outcomes):
    """Before any work: the temporary file could not be made there."""
    results, locked = outcomes(NOBODY)["locked"]
    r = results["locked"]
    assert r["code"] == 2 and "Permission denied (the folder" in r["err"] and r["out"] == "", r
    assert list(locked.iterdir()) == []


@pytest.mark.parametrize("argv,parse", [
    (["gst", "pack", "r9-nano", "-o", "/dev/stdout"], lambda b: b == tables.load("r9-nano")),
    (["profile", str(MM_KERNEL), "--trace", "/dev/stdout"], lambda b: bool(json.loads(b)["traceEvents"])),
    (["run", WORKLOAD, "--no-baselines", "--trace", "/dev/fd/1"], lambda b: bool(json.loads(b)["traceEvents"])),
], ids=["gst pack", "profile --trace", "run --trace"])
def test_output_to_stdout_is_the_file_alone(argv, parse):
    """`-o /dev/stdout > t.gst`: stdout holds the file and nothing else; the report goes to stderr."""
    done = subprocess.run([sys.executable, "-c", "import sys; from quco.cli.main import main; sys.exit(main(sys.argv[1:]))",
                           *argv], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert parse(done.stdout) and b"wrote" in done.stderr
