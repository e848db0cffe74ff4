"""Firmware against the reference model, bit for bit: presets x examples, then random inputs."""
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quco.gst import tables
from quco.host import reference as ref
from quco.host.kernel import load_kernel

import strategies

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples" / "kernels").glob("*.json"))


def assert_same(dev, record):
    fw = dev.launch(record)
    model = ref.configure(dev.gst, record, fw.generation if fw.ok else 1)
    assert (fw.status, fw.detail) == (model.status, model.detail), f"status differs for {record.hex()}"
    assert fw.lds == model.lds, f"LDS bytes differ for {record.hex()}"
    return fw


@pytest.mark.parametrize("gpu", tables.preset_names())
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_presets_x_examples(devices, gpu, path):
    fw = assert_same(devices(gpu), load_kernel(path).record())
    assert fw.ok


def test_there_are_enough_presets_and_examples():
    assert len(tables.preset_names()) >= 5 and len(EXAMPLES) == 8


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_valid_gst_and_records(devices, data):
    fields = data.draw(strategies.gst_fields())
    dev = devices(tables.pack(fields))
    for _ in range(3):
        assert_same(dev, data.draw(strategies.records(fields)))


@settings(max_examples=100, deadline=None)
@given(strategies.records())
def test_random_records_on_r9_nano(devices, record):
    assert_same(devices("r9-nano"), record)


def test_relaunch_hits_the_cache_and_writes_the_same_bytes(devices):
    dev = devices("mi100")
    rec = load_kernel(EXAMPLES[0]).record()
    first, second = dev.launch(rec), dev.launch(rec)
    assert second.cache_hit and second.generation == first.generation + 1
    assert second.lds[8:] == first.lds[8:] and second.instructions < first.instructions
