"""util/atomic.py's two planted bugs of issues #33 and #34 that no test caught: another process's
/proc/PID/fd/N taken as one of our own descriptors, and the writability of a symbolic link's
folder checked instead of its target's (the temporary file goes next to the target)."""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from quco.util import atomic

ROOT = os.geteuid() == 0


def closed_descriptor() -> int:
    for n in range(100, 1000):
        try:
            os.fstat(n)
        except OSError:
            return n
    raise AssertionError("no closed descriptor below 1000")


@pytest.fixture
def other_process(tmp_path):
    """A child whose descriptor 1 is a regular file of ours and whose descriptor n is the same
    file, while this process's n is closed: (child, file, n)."""
    target, n = tmp_path / "childs-stdout.txt", closed_descriptor()
    with open(target, "wb") as f:
        child = subprocess.Popen([sys.executable, "-c", f"import os, sys; os.dup2(1, {n}); sys.stdin.read()"],
                                 stdout=f, stdin=subprocess.PIPE)
    try:
        for _ in range(500):  # until the child has its n
            if os.path.exists(f"/proc/{child.pid}/fd/{n}"):
                break
            time.sleep(0.02)
        yield child, target, n
    finally:
        child.stdin.close()
        child.wait(10)


def test_another_processs_descriptor_is_not_ours(other_process):
    """Taken as ours, /proc/PID/fd/1 would be our stdout and /proc/PID/fd/n "descriptor n is
    not open"; it is the file the child's descriptor leads to."""
    child, target, n = other_process
    for fd in (1, n):
        assert atomic.plan(f"/proc/{child.pid}/fd/{fd}") == ("replace", target.resolve())
    assert not atomic.is_stdout(f"/proc/{child.pid}/fd/1")


def test_our_own_descriptors_by_every_name():
    r, w = os.pipe()
    try:
        for path in (f"/dev/fd/{w}", f"/proc/self/fd/{w}", f"/proc/{os.getpid()}/fd/{w}"):
            assert atomic.plan(path) == ("fd", w), path
        assert atomic.plan("/dev/stdout") == ("fd", 1)
    finally:
        os.close(r)
        os.close(w)


def test_writing_to_another_processs_descriptor_writes_its_file_not_our_stdout(other_process, capfd):
    child, target, _ = other_process
    atomic.write_text(f"/proc/{child.pid}/fd/1", "written\n")
    assert target.read_text() == "written\n"
    assert capfd.readouterr().out == ""


def plan_as(uid: int, path: Path) -> str:
    """atomic.plan(path) in a child that dropped to `uid`: its repr, or 'refused: <message>'."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover -- the child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            try:
                text = repr(atomic.plan(path))
            except OSError as e:
                text = f"refused: {e}"
            os.write(w, text.encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        return f.read().decode()


@pytest.fixture
def folders():
    """Two folders `nobody` can reach: `mine` (nobody's, writable) and `root` (root's, 0755)."""
    top = Path(tempfile.mkdtemp(prefix="quco-link-"))
    os.chmod(top, 0o755)
    nobody = pwd.getpwnam("nobody").pw_uid
    mine, root = top / "mine", top / "root"
    mine.mkdir()
    root.mkdir(mode=0o755)
    os.chown(mine, nobody, nobody)
    yield nobody, mine, root
    shutil.rmtree(top)


@pytest.mark.skipif(not ROOT, reason="needs root to make folders the unprivileged user cannot write")
def test_a_link_is_checked_at_its_targets_folder(folders):
    """A link in a folder the user may write, to a file (the user's) in one they may not: the
    temporary file would go next to the target, so it is refused; the other way round it is
    accepted (the link's folder is never written)."""
    nobody, mine, root = folders
    (root / "t.gst").write_bytes(b"old")
    os.chown(root / "t.gst", nobody, nobody)
    (mine / "link.gst").symlink_to(root / "t.gst")
    got = plan_as(nobody, mine / "link.gst")
    assert got.startswith("refused:") and f"the folder {root} is not writable" in got, got

    (mine / "t.gst").write_bytes(b"old")
    os.chown(mine / "t.gst", nobody, nobody)
    (root / "link.gst").symlink_to(mine / "t.gst")
    assert plan_as(nobody, root / "link.gst") == repr(("replace", mine / "t.gst"))
