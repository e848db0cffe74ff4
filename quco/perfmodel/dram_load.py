"""The DRAM round trip under load, for a configuration on the model of one CU (`dram_queueing`
1, 3 and 4, off in every preset: evaluated on the H100, docs/perf-model-not-shipped.md). The closed loop of
the configuration's reads in flight sets the DRAM share's utilisation (3: memory.loaded_utilisation,
the open-queue form; 4: memory.mva_utilisation, exact MVA) and the round trip's queueing delay
(1: memory.loaded_delay); `dram_queueing` 2 takes the
utilisation from the simulation instead (memory.queue_delay, in the model's fetch). `model`:
the model of one CU (cu_model.Model), which calls these as it is built."""
from __future__ import annotations

from .memory import loaded_delay, loaded_utilisation, mva_utilisation
from .params import Machine, dram_efficiency


def idle_round_trip(m: Machine, mode: str) -> float:
    """A DRAM read's idle round trip: the ATT's path (ATT, Ideal) or the own loads' (NoATT)."""
    return m.lat_att + m.lat_dram if mode != "noatt" else m.lat_dram


def reads_in_flight(model) -> tuple[float, float, float]:
    """The closed loop of the configuration's DRAM reads on a CU (dram_queue_mode 1, 3, 4): the
    bytes of reads it keeps in flight (each queue's slots, at most its tiles a pass, of the
    bytes that miss the L2; NoATT: a step's loads; times the resident work-groups), the reads'
    share of the DRAM traffic (stores take the rest) and the idle round trip R0 (cycles)."""
    w, inflight = model.work, 0.0
    for g in model.groups:
        if not g.resident:
            inflight += (1 if model.mode == "noatt" else min(g.slots, g.tiles)) * g.tile_bytes * (1.0 - g.hit_fresh)
    reads = sum(w.pass_length(i) * q.elem_size * q.fresh_passes for i, q in enumerate(w.queues))
    read_share = reads / (reads + w.output_bytes) if reads else 1.0
    return model.occ * inflight, read_share, idle_round_trip(model.m, model.mode)


def closed_loop(model) -> tuple[float, float]:
    """(R0, w) of the configuration's closed loop of reads (dram_queue_mode 3, 4): the idle round
    trip and w, its bytes in flight (reads_in_flight) over the DRAM share's rate for reads (the
    DRAM's own rate before the streams' cost), in cycles; w = 0 where nothing is in flight. Neither
    depends on the DRAM's service time S (sharefit scans S over them)."""
    inflight, read_share, r0 = reads_in_flight(model)
    if inflight <= 0:
        return r0, 0.0
    rate = model.m.dram_bytes_per_cycle / model.share_cus * dram_efficiency(model.request_bytes) * read_share
    return r0, inflight / rate


def closed_loop_utilisation(model) -> float:
    """The DRAM share's utilisation under the closed loop of the configuration's reads in flight
    (closed_loop), by the machine's dram_queue_mode: 3 the open-queue form (loaded_utilisation), 4
    exact Mean Value Analysis (mva_utilisation); 1 with no queueing or nothing in flight."""
    s = model.m.dram_queue_service
    if s <= 0:
        return 1.0
    r0, w = closed_loop(model)
    return utilisation_at(model.m.dram_queue_mode, s, r0, w)


def utilisation_at(mode: int, s: float, r0: float, w: float) -> float:
    """closed_loop_utilisation at a given S, R0 and w (cycles): 1 with no queueing (S <= 0) or
    nothing in flight; dram_queue_mode 4 mva_utilisation, else (3) loaded_utilisation."""
    if s <= 0 or w <= 0:
        return 1.0
    return mva_utilisation(s, r0, w) if mode == 4 else loaded_utilisation(s, r0, w)


def loaded_dram_delay(model) -> float:
    """The DRAM round trip's queueing delay under load (m.dram_queue_service = S, cycles;
    dram_queue_mode 1): at utilisation u of the CU's share of DRAM for reads the round trip is
    R0 + S u / (1 - u), and the closed loop of reads_in_flight moves its W bytes per round
    trip: u x rate = W / (R0 + S u / (1 - u)) (loaded_delay)."""
    inflight, read_share, r0 = reads_in_flight(model)
    rate = model.pipes.dram_rate * dram_efficiency(model.request_bytes) * read_share
    return loaded_delay(model.m.dram_queue_service, r0, inflight / rate)
