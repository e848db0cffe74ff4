"""Write output files atomically: a temporary file in the same folder, then a rename, so a
failed write leaves the previous file (if any) intact and no partial file behind."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_bytes(path, data: bytes) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))
