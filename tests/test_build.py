"""The link script refuses firmware that does not fit the unit's memories."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CC = ["riscv64-unknown-elf-gcc", "-march=rv32imf", "-mabi=ilp32f", "-Os", "-nostdlib", "-ffreestanding",
      "-Wl,-T,quco/firmware/quco.ld", str(ROOT / "quco" / "firmware" / "src" / "crt0.S")]


def link(tmp_path, c_source: str):
    src = tmp_path / "big.c"
    src.write_text(c_source)
    return subprocess.run(CC + [str(src), "-o", str(tmp_path / "big.elf")], cwd=ROOT,
                          capture_output=True, text=True)


@pytest.mark.parametrize("source,message", [
    ("const volatile char blob[9000] = {1};\nint main(void) { return blob[8999]; }",
     "exceed the 8 KiB ROM"),
    ("volatile char buf[1700];\nint main(void) { return buf[1]; }",
     "data plus the reserved stack exceed the 2 KiB data buffer"),
])
def test_overflowing_firmware_does_not_link(tmp_path, source, message):
    r = link(tmp_path, source)
    assert r.returncode != 0 and message in r.stderr


def test_a_small_program_links(tmp_path):
    r = link(tmp_path, "volatile char buf[64];\nint main(void) { return buf[1]; }")
    assert r.returncode == 0, r.stderr


def test_two_builds_of_the_same_sources_give_the_same_elf(tmp_path):
    """Determinism: the firmware ELF (not only its ROM bytes) is a function of the sources.
    Built twice with the Makefile's own rule into two folders, it must match the one in use."""
    elves = []
    for name in ("a", "b"):
        r = subprocess.run(["make", "-s", f"BUILD={tmp_path / name}", "firmware"], cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        elves.append((tmp_path / name / "quco.elf").read_bytes())
    assert elves[0] == elves[1] == (ROOT / "quco" / "firmware" / "build" / "quco.elf").read_bytes()


def test_the_elf_does_not_depend_on_the_checkout_folder(tmp_path):
    """The same sources checked out elsewhere give the same ELF byte for byte: the debug
    information names sources relative to the checkout (Makefile: REPRO), not by its path."""
    import shutil
    copy = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(ROOT / "quco" / "firmware", copy / "quco" / "firmware", ignore=shutil.ignore_patterns("build"))
    shutil.copy2(ROOT / "Makefile", copy / "Makefile")
    # the generated headers are committed; assume them current (-o) instead of regenerating
    # them, which needs the whole package
    keep = [a for f in ("quco/firmware/include/quco_abi.h", "quco/firmware/regions.ld", "docs/abi-tables.md",
                     "quco/kernel/kernel.schema.json", "toolchain")
            for a in ("-o", f)]
    r = subprocess.run(["make", "-s", *keep, "firmware"], cwd=copy, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    elf = (copy / "quco" / "firmware" / "build" / "quco.elf").read_bytes()
    assert str(tmp_path).encode() not in elf
    assert elf == (ROOT / "quco" / "firmware" / "build" / "quco.elf").read_bytes()
