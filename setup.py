"""What pyproject.toml cannot declare: the firmware image in the wheel and the emulator's
counting hooks in C.

The package is the folder quco/ (pyproject.toml finds quco and its subpackages there):
`quco.emulator.soc` is quco/emulator/soc.py. A new package is a new folder with an __init__.py.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ELF = "quco/firmware/build/quco.elf"
# made elsewhere: the committed generated files (make test checks them against quco/gst/abi.py),
# and the Makefile's installers, which have no place in a pip build
NOT_REMADE = ("quco/firmware/include/quco_abi.h", "quco/firmware/regions.ld", "docs/abi-tables.md",
              "quco/kernel/kernel.schema.json", "toolchain", "venv")


class BuildPyWithFirmware(build_py):
    """Brings quco/firmware/build/quco.elf up to date with the Makefile's own rule before it is
    copied into the wheel as package data of quco.firmware. Without make or the RISC-V
    compiler an existing image is shipped as it is; with no image at all the wheel has no
    firmware and quco-emu asks for --firmware or $QUCO_FIRMWARE."""

    def run(self):
        if not self.editable_mode:  # an editable install reads quco/firmware/build/ in place
            self.make_firmware()
            # setuptools packs all of build/lib: drop what an earlier build left there
            shutil.rmtree(os.path.join(self.build_lib, "quco"), ignore_errors=True)
        super().run()

    def make_firmware(self):
        if not (os.path.exists("Makefile") and shutil.which("make") and shutil.which("riscv64-unknown-elf-gcc")):
            self.announce("make or riscv64-unknown-elf-gcc missing: the wheel ships "
                          f"{ELF} only if it was built before", level=3)
            return
        old = [arg for name in NOT_REMADE for arg in ("-o", name)]
        subprocess.run(["make", "--no-print-directory", "-s", *old, ELF], check=True)


# quco/emulator/_fastcount.c: Unicorn hooks in C that the Soc loads with ctypes (plain C, no
# Python API; quco/emulator/fastcount.py says why). Optional: without a C compiler the install
# goes on and the Soc counts with its Python hooks, the same counts, slower.
FASTCOUNT = Extension("quco.emulator._fastcount", ["quco/emulator/_fastcount.c"], optional=True,
                      extra_compile_args=["-O2"])

setup(
    cmdclass={"build_py": BuildPyWithFirmware},
    ext_modules=[FASTCOUNT],
)
