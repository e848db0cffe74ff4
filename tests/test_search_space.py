"""perfmodel/space.py (issue #35): the size of the tile x slots space, the method that searches
it, bounded work on many distinct queues, and the refusal of a space no method covers."""
import json

import pytest

from conftest import EXAMPLES_DIR
from quco.cli.main import main
from quco.gst import tables
from quco.kernel.format import load_kernel
from quco.perfmodel import search, space
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work


def kernel_file(tmp_path, name, queues):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"name": name, "compute_intensity": 10.0, "consumer_wavefronts": 7, "queues": queues}))
    return path


def distinct(n, length):
    """n queues that differ in length (so n runs of identical queues), the last stationary."""
    return [{"name": f"Q{i}", "type": "streaming" if i < n - 1 else "stationary", "length": length + 64 * i,
             "elem_size": 2} for i in range(n)]


def model(path, gpu="r9-nano"):
    g = tables.unpack(tables.load(gpu))
    k = load_kernel(path)
    return machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), g, Work.of(k)


THREE_RUNS = [{"name": "A", "type": "streaming", "length": 2048, "elem_size": 2, "count": 4},
              {"name": "B", "type": "streaming", "length": 1024, "elem_size": 4, "count": 2},
              {"name": "C", "type": "stationary", "length": 2048, "elem_size": 2}]


@pytest.mark.parametrize("queues", [THREE_RUNS, distinct(3, 1024)], ids=["3 runs", "3 distinct"])
def test_the_fitting_count_equals_the_listed_candidates(tmp_path, queues):
    # the count is made run by run over (bytes, barriers); the listing checks each configuration
    m, g, work = model(kernel_file(tmp_path, "k", queues))
    p = space.plan(m, g, work)
    assert p.size == len(p.tiles) * 8 ** 3 == 4096
    assert p.fitting == len(search.candidates(work, m, p.tiles, p.slot_choices))
    assert p.method == space.DESCENT  # over EXHAUSTIVE_MAX fit


def test_eight_distinct_queues_take_bounded_evaluations(tmp_path, fresh_evaluations):
    # the case: 8 distinct queues of about 1,024 elements (134 million configurations)
    m, g, work = model(kernel_file(tmp_path, "eight", distinct(8, 1024)))
    p = space.plan(m, g, work)
    assert p.size == 8 * 8 ** 8 and p.method == space.DESCENT
    assert p.max_evaluations == 8 * (8 + space.SWEEPS * 8 * 7)  # tiles x (starts + sweeps x runs x other counts)
    res = space.search_space(m, g, work)
    simulated = search.evaluate.cache_info().misses
    assert res.evaluations == simulated <= p.max_evaluations
    # never worse than any start: every configuration that gives all queues the same slots
    for t in p.tiles:
        for s in p.slot_choices:
            cfg = search.Config(t, (s,) * 8)
            if search.fits(work, cfg, m.lds_bytes, m.barrier_limit):
                assert res.ranked[0].outcome.cycles <= search.evaluate(m, work, cfg).cycles


def test_the_descent_equals_the_exhaustive_answer_on_a_three_run_kernel(tmp_path):
    m, g, work = model(kernel_file(tmp_path, "k", THREE_RUNS))
    exact = space.search_space(m, g, work, space.EXHAUSTIVE)
    heur = space.search_space(m, g, work, space.DESCENT)
    assert heur.evaluations < exact.evaluations / 5
    assert heur.ranked[0].config == exact.ranked[0].config


# the kernels with two runs of queues; on one run the descent's starts are the whole space
# (every slot count for every queue), so it is the exhaustive search. bench/perfmodel.py
# compares the two on every preset x bundled kernel.
MULTI_RUN = ("batched-matrix-matrix", "matrix-matrix-reduction", "matrix-matrix", "matrix-vector")
BUNDLED = [(gpu, folder / f"{name}.json") for gpu, folder in (("r9-nano", EXAMPLES_DIR), ("mi100", EXAMPLES_DIR / "mi100"))
           for name in MULTI_RUN]


def test_the_kernels_left_out_have_one_run():
    for p in EXAMPLES_DIR.glob("*.json"):
        if p.stem not in MULTI_RUN:
            assert len(Work.of(load_kernel(p)).runs()) == 1, p


@pytest.mark.parametrize("gpu,path", BUNDLED, ids=[f"{g}-{p.stem}" for g, p in BUNDLED])
def test_the_descent_equals_the_exhaustive_answer_on_the_bundled_kernels(gpu, path):
    m, g, work = model(path, gpu)
    exact = space.search_space(m, g, work, space.EXHAUSTIVE)
    heur = space.search_space(m, g, work, space.DESCENT)
    assert exact.plan.method == space.plan(m, g, work).method == space.EXHAUSTIVE  # what they get by default
    assert heur.ranked[0].config == exact.ranked[0].config
    assert heur.ranked[0].outcome.cycles == exact.ranked[0].outcome.cycles


def test_search_says_the_space_and_the_method(tmp_path, capsys):
    path = kernel_file(tmp_path, "eight", distinct(8, 1024))
    assert main(["search", str(path), "--top", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())   # (on a terminal, stderr says it before the search too)
    assert "134,217,728 configurations" in out and "coordinate descent over the 8 runs" in out
    assert "(coordinate descent)" in out and "QuCo's pick: " in out and "of the 551 evaluated configurations" in out
    assert main(["search", str(path), "--json", "--top", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["space"]["method"] == space.DESCENT and doc["space"]["size"] == 8 * 8 ** 8
    assert doc["evaluated"] <= doc["space"]["max_evaluations"]
    assert doc["quco"]["rank"] >= 1


def test_a_space_past_the_bound_is_refused_naming_the_file_and_its_size(tmp_path, capsys, fresh_evaluations):
    path = kernel_file(tmp_path, "sixteen", distinct(16, 8192))  # within model_bound (about 16 x 128 tiles a pass)
    assert main(["search", str(path)]) == 2
    msg = capsys.readouterr().err
    assert str(path) in msg and f"{8 * 8 ** 16:,} configurations" in msg and "--config" in msg
    assert search.evaluate.cache_info().misses == 0  # refused before any evaluation
    # the option it names narrows it: one configuration, evaluated alone
    assert main(["search", str(path), "--config", "512/1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["searched"] is False and doc["evaluated"] == 1 and doc["config"]["cycles"] > 0
    # evaluate refuses it too, before its sweep
    assert main(["evaluate", str(path), "--gpu", "r9-nano", "--no-ablation", "--no-portability"]) == 2
    assert str(path) in capsys.readouterr().err
