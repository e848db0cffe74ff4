import pytest

from quco.host.device import Device, firmware_path


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
