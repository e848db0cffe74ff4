"""The memory system one CU sees: where a tile comes from (L2 or DRAM) and how long its
bytes take to arrive through the CU's share of the L2, the DRAM and the fill path.

- **L2 hits.** A pass that re-reads data the work-group already read (Matrix-Matrix's rows
  of A, once per column of B) hits in the L2 if what every resident work-group of the GPU
  touches between two reads of it still fits: hit fraction min(1, L2 / footprint). Data
  that `shared_by` work-groups read (B, x) comes from DRAM once and from the L2 for the
  others, under the same capacity rule. Everything else comes from DRAM. (A smooth
  capacity rule, not an LRU simulation: docs/perf-model.md.)
- **Bandwidth.** Three FIFO servers per CU, in issue order: the DRAM share (GPU bandwidth
  / CUs that get work, times the efficiency of the descriptor's size), the L2 share (the
  slices' bandwidth / CUs that get work: every byte passes an L2 slice, hit or miss) and the
  CU's fill path (FABRIC_BYTES_PER_CYCLE). A transfer is done when its DRAM part and all its
  bytes have gone through.
- **Latency.** ATT latency (ATT mode) plus an L2 round trip if every byte hits, else a DRAM
  round trip (the tile is complete when its last line is). Under load (`dram_queueing`, off in
  every preset: evaluated on the H100, docs/perf-model-not-shipped.md) the DRAM round trip grows as an M/M/1
  station's, S = the DRAM's part of the idle round trip: loaded_delay, queue_delay; or the DRAM
  share runs at the utilisation such a closed loop reaches: (3) loaded_utilisation, the
  open-queue form; (4) mva_utilisation, exact Mean Value Analysis of the closed loop.
"""
from __future__ import annotations

from collections import deque
import math
from dataclasses import dataclass, field

from .params import Machine, const, dram_efficiency


def hit_fractions(m: Machine, work, concurrent: int) -> list[tuple[float, float]]:
    """Per queue: (L2 hit fraction of a pass bringing new data, of a pass re-reading data),
    with `concurrent` work-groups resident on the whole GPU."""
    pass_bytes = sum(work.pass_length(i) * q.elem_size for i, q in enumerate(work.queues))
    private = concurrent * pass_bytes  # what the resident work-groups touch in one pass each
    out = []
    for i, q in enumerate(work.queues):
        reread = min(1.0, m.l2_bytes / private) if private else 1.0
        sharers = min(work.sharers(i), max(work.work_groups, 1))
        if sharers > 1:
            unique = work.pass_length(i) * q.elem_size * q.fresh_passes  # the shared operand's bytes
            fresh = (1.0 - 1.0 / sharers) * min(1.0, m.l2_bytes / (unique + private))
        else:
            fresh = 0.0
        out.append((fresh, max(reread, fresh)))
    return out


def _closed_loop(s: float, r0: float, w: float) -> tuple[float, float]:
    """(u, round trip) of an M/M/1 station (S, idle round trip r0) under a closed loop that keeps
    w cycles' worth of bytes in flight (s, w > 0): u (r0 + S u / (1 - u)) = w, i.e.
    (S - r0) u^2 + (r0 + w) u - w = 0, whose one root in (0, 1) is 2 w / (b + d) (b = r0 + w,
    d = sqrt(b^2 + 4 (S - r0) w)): the form without cancellation, also at S = r0 and deep in
    saturation; the round trip is w / u = (b + d) / 2 (Little's law)."""
    b = r0 + w
    d = math.sqrt(b * b + 4.0 * (s - r0) * w)
    return 2.0 * w / (b + d), (b + d) / 2.0


def loaded_utilisation(s: float, r0: float, w: float) -> float:
    """The utilisation u an M/M/1 station (S, idle round trip r0) reaches under a closed loop that
    keeps w cycles' worth of bytes in flight: u (r0 + S u / (1 - u)) = w (the root in (0, 1))."""
    if w <= 0:
        return 0.0
    if s <= 0:
        return min(1.0, w / r0)
    return _closed_loop(s, r0, w)[0]


def loaded_delay(s: float, r0: float, w: float) -> float:
    """Queueing delay S u / (1 - u) of a closed loop that keeps w cycles' worth of bytes in flight
    (bytes over the rate) with an idle round trip r0 (u: loaded_utilisation)."""
    if s <= 0 or w <= 0:
        return 0.0
    # the model's DRAM server already queues what a full pipe holds (the round trip max(r0, w)
    # for a closed loop): the delay is what the smooth curve adds over that sharp knee: 0 at no
    # load, the most near the knee (w = r0), one service S deep in saturation
    return max(0.0, _closed_loop(s, r0, w)[1] - max(r0, w))


MVA_TAIL = 1e-15        # 1 - U below this is 1 in double precision: the recursion stops there
MVA_KNEE_MAX = 1000.0   # N* = R0 / S past which the share is the FIFO's sharp knee (the S -> 0 limit)


def mva_utilisation(s: float, r0: float, w: float) -> float:
    """The DRAM share's utilisation U under a closed loop that keeps w cycles' worth of bytes in
    flight (bytes over the share's rate), by exact Mean Value Analysis (dram_queueing 4): one FCFS
    station, the share, whose customer is a chunk of S x rate bytes (S cycles of service each),
    and one delay station, the rest of the idle round trip, Z = r0 - S (0 where S >= r0); N = w / S
    chunks circulate. MVA: R(n) = S (1 + Q(n - 1)), X(n) = n / (Z + R(n)), Q(n) = X(n) R(n),
    U = X S. N <= 1: no queue, U = w / r0 (N = 1 is one lone chunk, S / r0); a real N between
    integers interpolates U linearly. Past N* = r0 / S, 1 - U falls faster than geometrically
    (1 - U is Erlang B at N servers and load Z / S), not as S / w (_closed_loop's open-queue
    form). S <= 0, or N* > MVA_KNEE_MAX: the FIFO's knee min(1, w / r0), the limit as S -> 0 (at
    N* = MVA_KNEE_MAX the exact U is within 2.5% of it at w = r0, 0.8% at 0.9 r0, 0.01% at 1.1 r0)."""
    if w <= 0:
        return 0.0
    if s <= 0 or r0 > MVA_KNEE_MAX * s:
        return min(1.0, w / r0)
    z, n = max(r0 - s, 0.0), w / s
    if n <= 1.0:
        return n * s / (z + s)
    k, q, u, u_k = math.floor(n), 0.0, 0.0, 0.0
    for i in range(1, k + 2):
        r = s * (1.0 + q)
        x = i / (z + r)
        q, u = x * r, x * s
        if 1.0 - u < MVA_TAIL:
            return u if i <= k else u_k + (n - k) * (u - u_k)
        if i == k:
            u_k = u
    return u_k + (n - k) * (u - u_k)


def queue_delay(s: float, r0: float, u: float) -> float:
    """loaded_delay at a known utilisation u: the closed loop's round trip RT = r0 + S u / (1 - u)
    over the FIFO's max(r0, u RT); 0 at u = 0, S at u = 1."""
    if s <= 0 or u <= 0:
        return 0.0
    if u >= 1.0:
        return s
    rt = r0 + s * u / (1.0 - u)
    return max(0.0, rt - max(r0, u * rt))


@dataclass
class Pipes:
    """One CU's memory servers; rates in bytes per cycle."""
    dram_rate: float   # the CU's share of DRAM bandwidth at peak efficiency
    l2_rate: float
    fabric: float
    dram_free: float = 0.0
    l2_free: float = 0.0
    fabric_free: float = 0.0
    dram_bytes: float = 0.0
    track: bool = False  # keep the DRAM share's service intervals (utilisation; latency under load)
    busy: deque = field(default_factory=deque)  # those intervals (start, end), in order

    @classmethod
    def of(cls, m: Machine, cus_used: float, dram_factor: float = 1.0) -> "Pipes":
        fabric = float(min(const("FABRIC_BYTES_PER_CYCLE"), m.cache_line * 1e9))
        return cls(min(m.dram_bytes_per_cycle * dram_factor / cus_used, fabric), min(m.l2_bytes_per_cycle / cus_used, fabric), fabric)

    def transfer(self, nbytes: float, hit: float, ready: float, desc_bytes: float) -> float:
        """`nbytes` (a fraction `hit` from the L2) whose first byte may move at `ready`,
        in descriptors of `desc_bytes` contiguous bytes; returns when the last byte is in."""
        done = ready
        dram = nbytes * (1.0 - hit)
        if dram > 0:
            start = max(ready, self.dram_free)
            self.dram_free = start + dram / (self.dram_rate * dram_efficiency(desc_bytes))
            if self.track:
                self.busy.append((start, self.dram_free))
            self.dram_bytes += dram
            done = self.dram_free
        # every byte a CU reads passes through an L2 slice, hit or miss (a miss fills it)
        start = max(ready, self.l2_free)
        self.l2_free = start + nbytes / self.l2_rate
        done = max(done, self.l2_free)
        start = max(ready, self.fabric_free)
        self.fabric_free = start + nbytes / self.fabric
        return max(done, self.fabric_free)

    def write(self, nbytes: float, ready: float) -> float:
        """Results written back: through the fill path and the DRAM share (streaming writes)."""
        start = max(ready, self.dram_free)
        self.dram_free = start + nbytes / self.dram_rate
        if self.track:
            self.busy.append((start, self.dram_free))
        self.dram_bytes += nbytes
        return self.dram_free

    def utilisation(self, t: float, window: float) -> float:
        """The fraction of [t - window, t] the DRAM share served (the service booked so far;
        `t` does not go back in time between calls: older intervals are dropped)."""
        busy, lo = self.busy, t - window
        while busy and busy[0][1] <= lo:
            busy.popleft()
        served = sum(max(0.0, min(e, t) - max(s, lo)) for s, e in busy if s < t)
        return min(1.0, served / window) if window > 0 else 0.0

    @property
    def free(self) -> float:
        return max(self.dram_free, self.l2_free, self.fabric_free)
