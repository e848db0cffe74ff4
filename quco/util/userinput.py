"""Files and text a user gives: read them with a bound, show them back literally.

Every command-line input file (kernel.json, GST presets and tables, timing profiles) is
read through `read_bytes` / `read_text` / `read_json` / `read_toml`: only regular files (a FIFO would block for ever,
/dev/zero never ends), at most a stated size, UTF-8 checked. Text a user wrote goes
through `printable` before it reaches a terminal, so control characters (an escape
sequence in a kernel name or an unknown key) are shown as escapes instead of acting.
"""
from __future__ import annotations

import json
import os
import stat
import tomllib
import unicodedata


# Unicode categories written as escapes: control, format, line and paragraph separator
ESCAPED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")


class UserFileError(Exception):
    """A user's file cannot be read; the message names it and says why."""


def read_bytes(path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file `path`, refused if longer than `limit` bytes."""
    where = printable(str(path))
    if str(path) == "":
        raise UserFileError(f"no {what} given (an empty file name)")
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise UserFileError(f"{where}: cannot read: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UserFileError(f"{where}: is a folder; expected a {what}")
        if not stat.S_ISREG(mode):
            raise UserFileError(f"{where}: not a regular file (a device, FIFO or socket); expected a {what}")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise UserFileError(f"{where}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UserFileError(f"{where}: larger than {limit:,} bytes; expected a {what}")
    return data


def read_text(path, limit: int, what: str = "file") -> str:
    """The UTF-8 text of the regular file `path` (see read_bytes)."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserFileError(f"{printable(str(path))}: not UTF-8 text: byte {e.start} "
                            f"(0x{data[e.start]:02x}); expected a {what}") from None


def read_json(path, limit: int, what: str = "JSON file"):
    """The decoded JSON file `path` (see read_bytes); a duplicate key, nesting deeper than the
    decoder goes and an integer of thousands of digits are errors naming the file."""
    text, where = read_text(path, limit, what), printable(str(path))

    def no_duplicates(pairs):
        doc = dict(pairs)
        if len(doc) != len(pairs):
            seen = set()
            k = next(k for k, _ in pairs if k in seen or seen.add(k))
            shown = printable(k) if len(k) <= 40 else printable(k[:37]) + "..."
            raise ValueError(f'duplicate field "{shown}"')
        return doc
    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as e:
        raise UserFileError(f"{where}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise UserFileError(f"{where}: nested too deeply to be a {what}") from None
    except ValueError as e:  # a duplicate field, an integer of thousands of digits
        raise UserFileError(f"{where}: not JSON: {printable(str(e))[:200]}") from None


def read_toml(path, limit: int, what: str = "TOML file") -> dict:
    """The decoded TOML file `path` (see read_bytes); every problem names the file."""
    text, where = read_text(path, limit, what), printable(str(path))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserFileError(f"{where}: not valid TOML: {printable(str(e))}") from None
    except RecursionError:
        raise UserFileError(f"{where}: nested too deeply to be a {what}") from None
    except ValueError as e:  # an integer of thousands of digits
        raise UserFileError(f"{where}: not valid TOML: {printable(str(e))[:200]}") from None


def escaped(ch: str) -> str:
    """One character as a Python-style escape: \\x1b, \\u202e, \\U000e0041."""
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, keep: str = "") -> str:
    """`text` with control and format characters (escape, carriage return, bidirectional
    overrides...) and the line and paragraph separators U+2028 / U+2029 (line breaks to
    some terminals and editors) written as \\x1b-style escapes; characters in `keep` (e.g. a
    newline between messages) stay."""
    if text.isprintable():  # the common case, in one C loop
        return text
    return "".join(ch if ch in keep or unicodedata.category(ch) not in ESCAPED_CATEGORIES else escaped(ch)
                   for ch in text)


def whole_number(text: str, lo: int, hi: int, what: str) -> int:
    """A whole number a user typed, in ASCII digits (int() would take "٣" and fail on "²")
    and within lo..hi; ValueError says what was expected, naming `what`."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > len(str(hi)) + 1 or not lo <= int(t) <= hi:
        shown = printable(text) if len(text) <= 40 else printable(text[:37]) + "..."
        raise ValueError(f"{what} {shown!r}: expected a whole number {lo}..{hi} in digits 0-9")
    return int(t)


def int_option(lo: int, hi: int):
    """An argparse `type` for a whole number lo..hi (see whole_number); argparse names the option."""
    import argparse

    def parse(text: str) -> int:
        try:
            return whole_number(text, lo, hi, "")
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e).lstrip()) from None
    parse.__name__ = "whole number"
    return parse
