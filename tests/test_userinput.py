"""util/userinput.py on its own: how a user's file is read (bounded, regular files only, every
problem naming the file and what was expected) and how a typed number is taken. The words
and bounds are written out by hand; the campaign of issue #24 part 6 showed which of them no
test stated."""
import errno
import os

import pytest

from quco.util import userinput
from quco.util.userinput import UserFileError, escaped, read_bytes, read_json, read_text, read_toml, whole_number


def refusal(read, *args) -> str:
    with pytest.raises(UserFileError) as e:
        read(*args)
    return str(e.value)


def test_an_empty_file_name_is_refused_as_no_file_given():
    assert refusal(read_bytes, "", 100, "kernel.json") == "no kernel.json given (an empty file name)"
    assert refusal(read_bytes, "", 100) == "no file given (an empty file name)"


def test_a_folder_is_refused_naming_what_was_expected(tmp_path):
    assert refusal(read_text, tmp_path, 100) == f"{tmp_path}: is a folder; expected a file"
    assert refusal(read_json, tmp_path, 100) == f"{tmp_path}: is a folder; expected a JSON file"
    assert refusal(read_toml, tmp_path, 100) == f"{tmp_path}: is a folder; expected a TOML file"
    assert refusal(read_toml, tmp_path, 100, "GST preset (.toml)") == (
        f"{tmp_path}: is a folder; expected a GST preset (.toml)")


def test_a_file_larger_than_memory_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(1 << 40)  # 1 TiB, sparse: only a bounded read can refuse it
    assert refusal(read_bytes, path, 100, "kernel.json") == f"{path}: larger than 100 bytes; expected a kernel.json"


def test_a_read_error_is_named_by_its_reason(tmp_path, monkeypatch):
    path = tmp_path / "k.json"
    path.write_text("{}")

    def failing(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(userinput.os, "fdopen", failing)
    assert refusal(read_bytes, path, 100) == f"{path}: cannot read: Input/output error"


def test_json_nested_too_deeply_names_what_was_expected(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert refusal(read_json, path, 1 << 20) == f"{path}: nested too deeply to be a JSON file"


@pytest.mark.parametrize("field,shown", [("d" * 40, "d" * 40), ("d" * 41, "d" * 37 + "...")])
def test_a_duplicate_field_is_named_cut_past_40_characters(tmp_path, field, shown):
    path = tmp_path / "dup.json"
    path.write_text(f'{{"{field}": 1, "{field}": 2}}')
    assert refusal(read_json, path, 1000) == f'{path}: not JSON: duplicate field "{shown}"'


def test_toml_names_the_file_and_what_was_expected(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text("x = 1" + "0" * 5000)  # Python's limit on the digits of an int
    assert refusal(read_toml, path, 1 << 20).startswith(f"{path}: not valid TOML: Exceeds the limit (4300 digits)")


@pytest.mark.parametrize("text,value", [("64", 64), ("1", 1), (" 7\n", 7), ("064", 64)])
def test_whole_numbers_in_range_with_at_most_one_leading_zero_are_taken(text, value):
    assert whole_number(text, 1, 64, "CUS") == value


@pytest.mark.parametrize("text,shown", [
    ("65", "'65'"), ("0", "'0'"), ("0064", "'0064'"), ("٣", "'٣'"), ("", "''"),
    ("x" * 40, repr("x" * 40)), ("x" * 41, repr("x" * 37 + "...")),  # cut past 40 characters
])
def test_other_whole_numbers_are_refused_naming_the_text_and_the_range(text, shown):
    with pytest.raises(ValueError) as e:
        whole_number(text, 1, 64, "CUS")
    assert str(e.value) == f"CUS {shown}: expected a whole number 1..64 in digits 0-9"


def test_a_character_is_escaped_in_the_shortest_python_form_that_holds_its_code():
    assert [escaped(c) for c in "\x1b\xff\u0100\uffff\U00010000"] == [
        "\\x1b", "\\xff", "\\u0100", "\\uffff", "\\U00010000"]
