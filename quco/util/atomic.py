"""Write output files atomically: a temporary file in the same folder, then a rename, so a
failed write leaves the previous file (if any) intact and no partial file behind.

What an output path may be, and what happens (docs/README.md, "Output files"):

    missing                  created (atomically; its folder must exist)
    regular file             replaced atomically (it must be writable, as for `>` in a shell)
    symbolic link            followed: the rules below apply to what it points to; a regular
                             file is replaced at its own place and the link stays a link; a
                             link to nothing is refused
    /dev/stdout, /dev/fd/N   written to that open descriptor (a pipe, terminal or file)
    FIFO                     written through, whole, once a reader has opened it
    character device         written through (/dev/null, a terminal; /dev/full: "No space
                             left on device", exit 2); never replaced by a file
    folder, block device,    refused, naming the path and what it is
    socket

Every command checks its output paths with `check_target` (files) or `check_folder`
(--plot folders) before it starts working, and writes through `atomic_path`.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import time
import uuid
from pathlib import Path

FIFO_WAIT_S = 10  # a FIFO without a reader: wait this long for one, then refuse
# paths that name one of this process's open descriptors (/dev/stdout -> /proc/self/fd/1)
_DESCRIPTOR = re.compile(r"^/(?:proc/(?:self|thread-self|\d+)|dev)/fd/(\d+)$")
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


class TargetError(OSError):
    """An output path that cannot be written: TargetError(errno, message), the message
    (strerror) whole, naming the path."""


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "a regular file" if stat.S_ISREG(mode) else "a special file")


def _descriptor(path: str) -> int | None:
    """The open descriptor `path` names (/dev/stdout, /dev/fd/3, /proc/self/fd/1), following
    symbolic links that lead to one; None for any other path."""
    for _ in range(40):  # the kernel's own limit on a chain of links
        if path in _STD:
            return _STD[path]
        m = _DESCRIPTOR.match(path)
        if m and (not path.startswith("/proc/") or path.split("/")[2] in ("self", "thread-self", str(os.getpid()))):
            return int(m.group(1))
        if not os.path.islink(path):
            return None
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    return None


def plan(path) -> tuple[str, object]:
    """How `path` is written: ("replace", real path) for a missing or regular file (through
    any symbolic links), ("fd", n) for one of our open descriptors, ("through", path) for a
    FIFO or character device; a folder, block device, socket or broken link raises
    TargetError naming the path and what it is."""
    text = str(path)
    if text == "":
        raise TargetError(errno.ENOENT, "no output file given (an empty name)")
    fd = _descriptor(os.path.abspath(text))
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError:
            raise TargetError(errno.EBADF, f"{text}: descriptor {fd} is not open") from None
        return "fd", fd
    try:
        mode = os.stat(text).st_mode  # follows links
    except FileNotFoundError:
        if os.path.islink(text):
            raise TargetError(errno.ENOENT, f"{text}: a symbolic link to a missing file "
                                            f"({os.readlink(text)}); expected a file to write") from None
        _check_folder_writable(text, os.path.dirname(text) or ".")
        return "replace", Path(text)
    except OSError as e:
        raise TargetError(e.errno or errno.EIO, f"{text}: cannot write: {e.strerror or e}") from None
    real = Path(os.path.realpath(text))
    if stat.S_ISREG(mode):
        if not os.access(real, os.W_OK):
            raise TargetError(errno.EACCES, f"{text}: cannot write: Permission denied (the file is read-only)")
        _check_folder_writable(text, str(real.parent))  # the temporary file goes there
        return "replace", real
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "through", real
    link = f" (a symbolic link to {real})" if os.path.islink(text) else ""
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    raise TargetError(code, f"{text}: is {_kind(mode)}{link}; expected a file to write "
                            "(or a FIFO or character device to write through)")


def _check_folder_writable(text: str, folder: str) -> None:
    if not os.path.isdir(folder):
        raise TargetError(errno.ENOENT, f"cannot write {text}: No such file or directory (no folder {folder})")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise TargetError(errno.EACCES, f"cannot write {text}: Permission denied (the folder {folder} is not writable)")


def is_stdout(path) -> bool:
    """Whether `path` names this process's standard output (/dev/stdout, /dev/fd/1, ...)."""
    try:
        return path is not None and plan(path) == ("fd", 1)
    except OSError:
        return False


def check_target(path) -> None:
    """Refuse an output file path before any work is done (see `plan`); None passes."""
    if path is not None:
        plan(path)


def check_folder(path) -> None:
    """A --plot folder: missing (it will be created) or a folder (through links); anything
    else refuses with TargetError naming the path and what it is."""
    if path is None:
        return
    text = str(path)
    if text == "":
        raise TargetError(errno.ENOENT, "no output folder given (an empty name)")
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        if os.path.islink(text):
            raise TargetError(errno.ENOENT, f"{text}: a symbolic link to a missing folder "
                                            f"({os.readlink(text)})") from None
        return
    except OSError as e:
        raise TargetError(e.errno or errno.EIO, f"{text}: cannot use as a folder: {e.strerror or e}") from None
    if not stat.S_ISDIR(mode):
        raise TargetError(errno.ENOTDIR, f"{text}: is {_kind(mode)}; expected a folder for the figures")


def _open_fifo(path: Path) -> int:
    """The FIFO's write end, once a reader has it open (O_NONBLOCK: no wait for ever)."""
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        return fd


def _copy_into(tmp: Path, how: str, where) -> None:
    """The finished temporary file's bytes written into a descriptor, FIFO or device."""
    if how == "fd":
        fd = os.dup(where)
    elif stat.S_ISFIFO(os.stat(where).st_mode):
        fd = _open_fifo(where)
    else:
        fd = os.open(where, os.O_WRONLY)  # a device: no O_TRUNC, no O_CREAT
    with open(fd, "wb", closefd=True) as dst, open(tmp, "rb") as src:
        shutil.copyfileobj(src, dst)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to `path`'s file; on success it replaces that file in one
    step (or is copied into a FIFO, device or descriptor: see `plan`), on failure it is
    removed, so `path` is either the old file or the new one, whole."""
    how, where = plan(path)
    folder = where.parent if how == "replace" else Path(os.environ.get("TMPDIR", "/tmp"))
    name = where.name if how == "replace" else "out"
    tmp = folder / f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        yield tmp
        if how == "replace":
            os.replace(tmp, where)
        else:
            _copy_into(tmp, how, where)
    except TargetError:
        raise
    except OSError as e:
        # an error about our temporary file, the target or the device names the path the
        # caller asked for; OSError(errno, ...) gives the same subclass back (IsADirectoryError, ...)
        if e.filename is not None and str(e.filename) not in (str(tmp), str(where), str(path)):
            raise
        raise OSError(e.errno, f"cannot write {path}: {e.strerror}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_bytes(path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(data)


def write_text(path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))
