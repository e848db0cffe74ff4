import functools
import importlib.util
import itertools
import sys
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import HealthCheck, settings

from quco.gst import abi
from quco.host.device import Device, firmware_path

# Property tests: `make test` draws the same examples every run (derandomize: a bug is caught
# every time or never, not with some seeds); `make fuzz` (HYPOTHESIS_PROFILE=fuzz) draws new
# ones each run and more of them where a test does not fix its own count.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, deadline=None, max_examples=2000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = ROOT / "quco" / "examples" / "kernels"          # the bundled Table I kernels
EXAMPLE_KERNELS = sorted(EXAMPLES_DIR.glob("*.json"))  # the R9 Nano's (Table III sizes)
ALL_EXAMPLE_KERNELS = sorted(EXAMPLES_DIR.rglob("*.json"))  # + mi100/ and radeon-530/ at their sizes
MM_KERNEL = EXAMPLES_DIR / "matrix-matrix.json"        # the 9-queue Matrix-Matrix kernel


@functools.cache
def bench_module(name: str):
    """bench/<name>.py imported as a module (bench/ is scripts, not a package), once."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def elf_path():
    path = firmware_path()
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make firmware` (make test does it for you)")
    return path


@pytest.fixture(scope="session")
def devices(elf_path):
    """One booted Device per GST, created lazily and shared by the session."""
    cache = {}

    def get(gst) -> Device:
        key = gst if isinstance(gst, (str, bytes)) else str(gst)
        if key not in cache:
            cache[key] = Device(gst, elf_path)
        return cache[key]

    return get


AS, LD = "riscv64-unknown-elf-as", "riscv64-unknown-elf-ld"


@pytest.fixture(scope="session")
def gnu_as(tmp_path_factory):
    """gnu_as(source, ...) -> path of an ELF built by GNU as and ld from the firmware's
    toolchain, the assembler of record for test programs. `source` goes into .text, which
    is linked at `text` (ROM 0x0); entry point `_start`."""
    if not shutil.which(AS):
        pytest.fail(f"{AS} missing: make test installs binutils-riscv64-unknown-elf")
    tmp, names = tmp_path_factory.mktemp("asm"), itertools.count()

    def build(source: str, march="rv32imf", mabi="ilp32f", emulation="elf32lriscv",
              text=abi.ROM.base, data=abi.DATA.base):
        stem = tmp / f"p{next(names)}"
        stem.with_suffix(".S").write_text(".text\n" + source + "\n")
        subprocess.run([AS, f"-march={march}", f"-mabi={mabi}", "-o", stem.with_suffix(".o"),
                        stem.with_suffix(".S")], check=True)
        subprocess.run([LD, "-m", emulation, f"-Ttext=0x{text:x}", f"-Tdata=0x{data:x}", "-e", "_start",
                        "-o", stem.with_suffix(".elf"), stem.with_suffix(".o")], check=True)
        return stem.with_suffix(".elf")
    return build


def text_bytes(path) -> bytes:
    with open(path, "rb") as f:
        return ELFFile(f).get_section_by_name(".text").data()


# the hostile-input tests' verdict on a command run through quco.cli.fuzz_files.run_cli
def clean_error(o, code=2, *words):
    """A clean refusal: the exit code, the words, nothing on stdout, no traceback or control character."""
    assert o.kind in ("error", "ok") and o.code == code, (o.code, o.err, o.trace)
    assert o.out == "" and "Traceback" not in o.err and not o.leaked_control(), o.err
    for w in words:
        assert w in o.err, f"{w!r} not in {o.err!r}"


@pytest.fixture
def fresh_evaluations(monkeypatch):
    """search.evaluate with an empty cache of its own for this test, for a test that counts
    simulations (cache_info().misses, sim_data.Environment) or must see them run. The session's
    cache is put back afterwards, not cleared: every later test would simulate again what
    earlier ones had (about 4,000 simulations, 7 s of the suite). evaluate is a pure function
    of its key (perfmodel/search.py), so a later test answered from that cache checks the same
    numbers. hardware.py holds evaluate under its own name: both are replaced."""
    from quco.perfmodel import hardware, search
    fresh = functools.lru_cache(maxsize=search.evaluate.cache_parameters()["maxsize"])(search.evaluate.__wrapped__)
    for module in (search, hardware):
        monkeypatch.setattr(module, "evaluate", fresh)
    return fresh
