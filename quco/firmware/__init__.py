"""quco.firmware: the firmware as a Python package, so that its image travels with it.

The build output build/quco.elf (make firmware) is package data: an editable install
reads it here in the source tree, a wheel carries a copy (setup.py builds it when the
RISC-V toolchain is there). quco.host.device loads it unless --firmware or $QUCO_FIRMWARE
names another image. The C sources are in src/ and include/ and are not shipped.
"""
from importlib.resources import files
from pathlib import Path

IMAGE = Path(files(__name__) / "build" / "quco.elf")
