"""sharefit.fit_share (issue #29, dram_queueing 3 calibrated jointly; evaluated, not shipped): S and the
stream cost by least squares of log(model / measured) over bandwidth-bound rows. Synthetic rows
made from known constants through the closed form are recovered; the terms read from the H100
rows give the model's own loaded share at an S other than the one they were read at."""
from __future__ import annotations

import dataclasses
import types

import pytest

from quco.gst import tables
from quco.perfmodel import fit, hardware, sharefit
from quco.perfmodel.dram_load import utilisation_at
from quco.perfmodel.memory import loaded_utilisation
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work

H100 = machine(tables.unpack(tables.load("h100-sxm")))
R0 = 1000.0


def synthetic(s: float, cost: float) -> list[tuple]:
    """Rows of fit_share_terms' shape whose measured time is the closed form at (s, cost):
    (DRAM bound / u + launch) x (1 + cost x streams), u the M/M/1 closed loop's utilisation."""
    out = []
    for i, (w_r0, streams, dram) in enumerate((a, n, d) for a in (0.6, 1.0, 1.5, 2.5, 4.0, 8.0)
                                               for n in (2_000, 9_000, 30_000) for d in (150.0, 900.0)):
        w = w_r0 * R0
        u = loaded_utilisation(s, R0, w) if s > 0 else 1.0
        t = (dram / u + 5.0) * (1.0 + cost * streams)
        out.append((types.SimpleNamespace(time_us=t, index=i), streams, dram, 5.0, R0, w))
    return out


@pytest.mark.parametrize("s,cost", [(400.0, 1.2e-5), (150.0, 3e-6), (900.0, 0.0), (0.0, 1.36e-5)])
def test_planted_constants_are_recovered(s, cost):
    got_s, got_c, rms = sharefit.fit_share_terms(synthetic(s, cost))
    assert rms < 1e-6
    assert got_s == pytest.approx(s, abs=0.5)
    assert got_c == pytest.approx(cost, rel=1e-3, abs=1e-9)


def test_too_few_rows_is_a_clear_error():
    with pytest.raises(ValueError, match="at least 3"):
        sharefit.fit_share_terms(synthetic(400.0, 1e-5)[:2])


def test_the_residuals_are_zero_at_the_planted_point_and_not_elsewhere():
    terms = synthetic(400.0, 1e-5)
    assert max(abs(sharefit.share_residuals((400.0, 1e-5), terms))) < 1e-12
    assert max(abs(sharefit.share_residuals((200.0, 1e-5), terms))) > 1e-3


def test_with_service_changes_only_s():
    m = fit.with_service(H100, 123.0)
    assert fit.service(m) == 123.0
    assert dataclasses.replace(m, dram_queue_service=H100.dram_queue_service) == H100


def test_the_h100_terms_give_the_models_share_at_another_s():
    """w is read back at the GST's S; at twice that S the closed form must give what the model's
    own dram_load.closed_loop_utilisation gives there (w does not depend on S)."""
    rows = hardware.read(str(hardware.DEFAULT_DATA))
    terms, residency = sharefit.share_terms(H100, rows), fit._residencies(H100, rows)
    assert len(terms) >= 50
    m3 = dataclasses.replace(H100, dram_queue_mode=3)
    other = fit.with_service(m3, 2 * fit.service(H100))
    for r, _, _, _, r0, w in terms[::9]:
        work = Work.of(hardware.scaled_kernel(r.kernel, r.work_groups))
        occ = min(residency(work, r), fit.per_cu(H100, r.work_groups))
        assert utilisation_at(3, fit.service(other), r0, w) == pytest.approx(
            fit.loaded_share(other, work, r.tile, r.slots, occ), rel=1e-9)
