"""Write output files atomically: a temporary file in the same folder, then a rename, so a
failed write leaves the previous file (if any) intact and no partial file behind."""
from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to `path`; on success it replaces `path` in one step,
    on failure it is removed, so `path` is either the old file or the new one, whole."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as e:
        # an error about our temporary file names the file the caller asked for instead;
        # OSError(errno, ...) gives the same subclass back (IsADirectoryError, ...)
        if str(tmp) not in (str(e.filename), str(e.filename2)):
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
