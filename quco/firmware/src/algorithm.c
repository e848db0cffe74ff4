/* Per launch, after check.c: QuCo Algorithms 1-3 in float32 (the tile, then the slots).
 * host/reference.py is the executable specification; every expression here keeps its
 * operation order so the two agree bit for bit (built with -ffp-contract=off). */
#include "quco.h"

static uint32_t log2_u(uint32_t v)
{
    uint32_t k = 0;
    while (v >>= 1)
        k++;
    return k;
}

/* Everything Algorithms 1-3 need about one launch beyond the GST, derived once per
 * launch and passed to every step. Tiles are powers of two, handled as their log2. */
typedef struct {
    const groups_t *groups;  /* the launch's queues, grouped by launch_check */
    uint32_t flags;          /* QUCO_FLAG_* ablation switches */
    uint32_t ci_class;       /* QUCO_CI_CLASS_LOW / MEDIUM / HIGH */
    uint32_t cus;            /* active CUs, for roundBasedOnCUs */
    uint32_t little_n;       /* Little's slots (CU-stepped) at the chosen tile */
    uint32_t avail;          /* LDS bytes for queue blocks (after the metadata) */
    uint32_t meta;           /* LDS bytes of header and descriptors, aligned */
    uint32_t nominal;        /* 1: at the GST's clock, the boot-time merit table applies */
    uint32_t wfs;            /* consumer wavefronts */
    float cpb;               /* core cycles per byte of one CU's DRAM share */
    float lat;               /* latencyTotal: ATT + L2 + DRAM latency, core cycles */
    float inv_sched;         /* 1 / bestLatency per element: 1 / (SIMDMulsPerCycle x Wfs) */
    float overlap;           /* wavefronts whose work overlaps: min(Wfs - 1, pools) */
    uint32_t need_bytes;     /* what the last fits() counted: LDS bytes of the queue blocks */
    uint32_t need_slots;     /* ... and slots (each takes BARRIERS_PER_SLOT barriers) */
} planner_t;

/* v >= 1; clears low set bits until one is left (no clz instruction in RV32IMF) */
static uint32_t floor_pow2(uint32_t v)
{
    while (v & (v - 1u))
        v &= v - 1u;
    return v;
}

/* GST-derived values, computed once at boot (gst_derive) for every launch */
static float inv_cache_line;                 /* 1 / cache_line_bytes, exact (a power of two) */
static uint32_t min_tile_log2, max_tile_log2;
static uint32_t max_pow2_slots;              /* the largest power of two within max_slots */
static uint32_t plus_rules;                  /* this launch uses quco+ (FLAG_QUCO_PLUS): integer
                                                slots, no CU step (not the paper's rules) */
/* quco+ only, set per launch: each group's passes (0 read as 1) and the length bound's length,
 * min over groups of length x passes (saturated); the paper's rules never read them */
static uint16_t plus_passes[QUCO_MAX_QUEUES];
static uint32_t plus_min_len;

/* At the GST's nominal clock the merit scan depends only on Wfs (1..64) and the tile's
 * element size, so boot tabulates it; launches at another (DVFS) clock scan live. */
#define WFS_CLASSES QUCO_LAUNCH_CONSUMER_WAVEFRONTS_HI
static uint8_t merit_table[WFS_CLASSES][4]; /* [Wfs - 1][log2 elem_size] -> log2 tile */

/* The per-launch rates Algorithm 2 needs at a clock and for Wfs consumer wavefronts:
 * cycles per byte of one CU's DRAM share, latencyTotal, and bestLatency = T /
 * (SIMDMulsPerCycle x Wfs), QuCo's form, no cap on Wfs. The GST's latencies are core cycles
 * at its nominal clock (QuCo Table II: "cycles, CU round trip"); a round trip is a time, so
 * at a DVFS clock they scale by clock / nominal. Computed afresh at every launch (an FDIV and
 * a DIV) rather than kept for the nominal clock: the code is shared with boot and the ROM is
 * the scarcer budget (keeping cpb for the nominal clock saves 5 cycles on the R9 Nano for
 * 40 bytes). */
static void set_rates(planner_t *p, uint32_t clock, uint32_t wfs)
{
    const quco_gst_t *g = GST;
    float cpb = (float)(clock * g->num_cus) / (float)g->dram_bw_mbps;
    uint32_t lat = g->lat_att_cycles + g->lat_l2_cycles + g->lat_dram_cycles;
    if (clock != g->core_clock_mhz) /* at the nominal clock x clock / nominal is exact: skip the DIV */
        lat = lat * clock / g->core_clock_mhz;
    p->cpb = cpb; /* stored after the DIV: the FDIV's latency overlaps the integer work (-5 cycles) */
    p->lat = (float)lat;
    p->wfs = wfs;
    p->inv_sched = 1.0f / (float)(g->simd_muls_per_cycle * wfs); /* one rounding: the product is exact */
    p->overlap = (float)min_u(wfs - 1u, g->wavefront_pools);
}

static uint32_t merit_scan(const planner_t *p, uint32_t elem_size);

void gst_derive(void)
{
    const quco_gst_t *g = GST;
    inv_cache_line = 1.0f / (float)g->cache_line_bytes;
    min_tile_log2 = log2_u(g->min_tile_elems);
    max_tile_log2 = log2_u(g->max_tile_elems);
    max_pow2_slots = floor_pow2(g->max_slots);
    planner_t p;
    for (uint32_t wfs = 1; wfs <= WFS_CLASSES; wfs++) {
        set_rates(&p, g->core_clock_mhz, wfs);
        for (uint32_t elem_log2 = 0; elem_log2 < 4u; elem_log2++)
            merit_table[wfs - 1][elem_log2] = (uint8_t)merit_scan(&p, 1u << elem_log2);
    }
}

/* procTime from bs = tile / bestLatency: the wavefronts beyond the first overlap; below
 * one scheduling round (bs < 1) nothing overlaps, so no negative time */
static float sched_time(const planner_t *p, float bs)
{
    float extra = bs - 1.0f;
    if (extra < 0.0f)
        extra = 0.0f;
    return bs + extra * p->overlap;
}

static float proc_time(const planner_t *p, uint32_t tile)
{
    return sched_time(p, (float)tile * p->inv_sched);
}

/* memTime cycles per tile element of elem_size bytes: the DRAM share plus twice the
 * bytes in cache lines */
static float slope(const planner_t *p, uint32_t elem_size)
{
    return (float)elem_size * p->cpb + (float)(2u * elem_size) * inv_cache_line;
}

static float mem_time(const planner_t *p, uint32_t tile, uint32_t elem_size)
{
    return p->lat + (float)tile * slope(p, elem_size);
}

/* 2^-k as a float, exactly (k < 127): the exponent field written directly */
static float inv_pow2(uint32_t k)
{
    union { uint32_t u; float f; } v = {(127u - k) << 23};
    return v.f;
}

/* Does the configuration fit the LDS and the barrier budget? Streaming groups at
 * slots[i] (or `all` slots when slots is NULL), stationary groups at one slot. Leaves
 * the bytes and the slots it counted in p->need_bytes and p->need_slots. */
static int fits(planner_t *p, uint32_t tile_log2, const uint8_t *slots, uint32_t all)
{
    const groups_t *gr = p->groups;
    uint32_t bytes = 0, n_slots = 0;
    for (uint32_t i = 0; i < gr->n_groups; i++) {
        const group_t *g = &gr->g[i];
        uint32_t s = g->stationary ? 1u : (slots ? slots[i] : all);
        bytes += g->count * align_up(s << (tile_log2 + g->elem_log2)); /* s x tile x elem_size */
        n_slots += g->count * s;
    }
    p->need_bytes = bytes;
    p->need_slots = n_slots;
    return bytes <= p->avail && QUCO_BARRIERS_PER_SLOT * n_slots <= GST->barrier_limit;
}

/* Algorithms 1 and 2: the weighted merit over the tile range; returns log2 of the best. */
static uint32_t merit_scan(const planner_t *p, uint32_t elem_size)
{
    /* weighted = (procTime x cost) / memTime, kept as a fraction: cross-multiplying
     * replaces a 19-cycle FDIV per tile (host/reference.py does the same) */
    /* the tile doubles each step, so tile/sched, tile*slope and lat/tile double or halve
     * exactly: the terms are updated by one addition or multiplication by 0.5 each, bit
     * for bit the values the model computes afresh */
    /* the tile-independent part of the cost function: only the scan needs it, so a launch
     * that reads the boot-time merit table does not compute it */
    float cost_const = QUCO_COST_A * p->cpb + QUCO_COST_B * inv_cache_line;
    float best_num = -1.0f, best_den = 1.0f;
    uint32_t best_log2 = min_tile_log2;
    float bs = (float)(1u << min_tile_log2) * p->inv_sched;
    float tile_mem = (float)(1u << min_tile_log2) * slope(p, elem_size);
    float lat_per_elem = p->lat * inv_pow2(min_tile_log2);
    for (uint32_t k = min_tile_log2; k <= max_tile_log2;
         k++, bs += bs, tile_mem += tile_mem, lat_per_elem *= 0.5f) {
        float num = sched_time(p, bs) * (lat_per_elem + cost_const), den = p->lat + tile_mem;
        if (num * best_den > best_num * den) {
            best_num = num;
            best_den = den;
            best_log2 = k;
        }
    }
    return best_log2;
}

static uint32_t round_pow2(float r);
static uint32_t little_slots(const planner_t *p, uint32_t tile_log2);

/* Algorithm 1 in full: merit scan, CI scaling, then the length bound (every queue is
 * streamed in at least MIN_BUFFERS transfers, the last one possibly partial) and the LDS bound (the slots Little's law asks for fit). Returns log2
 * of the tile. */
static uint32_t choose_tile(planner_t *p)
{
    uint32_t elem_size = p->groups->tile_elem_size;
    uint32_t k = p->nominal ? merit_table[p->wfs - 1u][log2_elem(elem_size)] : merit_scan(p, elem_size);
    if (!(p->flags & QUCO_FLAG_NO_CI_SCALING)) {
        if (p->ci_class == QUCO_CI_CLASS_LOW && k < max_tile_log2)
            k++;
        else if (p->ci_class == QUCO_CI_CLASS_HIGH && k > min_tile_log2)
            k--;
    }
    const groups_t *gr = p->groups;
    uint32_t min_len = plus_rules ? plus_min_len : gr->min_len; /* quco+: across the passes */
    for (;;) {
        uint32_t n = p->little_n = little_slots(p, k);
        if (k == min_tile_log2)
            break;
        if (((QUCO_MIN_BUFFERS - 1u) << k) < min_len) { /* ceil(len / tile) >= MIN_BUFFERS */
            /* no more slots than the barrier limit gives: a smaller tile would not buy them */
            while (n > 1u && QUCO_BARRIERS_PER_SLOT * (n * gr->n_streaming + gr->n_stationary) > GST->barrier_limit)
                n >>= 1;
            fits(p, k, 0, n);
            if (p->need_bytes <= p->avail)
                break;
        }
        k--;
    }
    return k;
}

/* roundToPowerOfTwo: the nearest power of two to r (ties up), within 1..max_slots (quco+:
 * the next integer up) */
static uint32_t round_pow2(float r)
{
    float max = (float)GST->max_slots;
    if (!(r >= 1.0f))
        return 1u;
    uint32_t q = (uint32_t)(r < max ? r : max);
    if (plus_rules) /* quco+: rounded up (Little's ratio is the fewest tiles that cover the latency) */
        return q < GST->max_slots && r > (float)q ? q + 1u : q;
    q = floor_pow2(q);
    if (q < max_pow2_slots && r >= 1.5f * (float)q)
        q <<= 1;
    return q;
}

/* roundBasedOnCUs: slots x CU_SLOT_REF / active CUs, to the nearest power of two; never
 * more than before, never below double buffering unless already there */
__attribute__((noinline)) static uint32_t cu_step(const planner_t *p, uint32_t n)
{
    if ((p->flags & QUCO_FLAG_NO_CU_AWARE) || plus_rules)
        return n;
    /* n is a power of two: the largest power of two s <= n within a factor 4/3 above
     * r = n x REF / CUs (s <= 4r/3: r rounds to s or more), in integers */
    uint32_t s = n, r4 = 4u * n * QUCO_CU_SLOT_REF;
    while (s > QUCO_MIN_BUFFERS && r4 < 3u * s * p->cus)
        s >>= 1;
    return s;
}

/* a queue is streamed in ceil(length / 2^k) transfers: no more slots than that (the
 * largest power of two within; quco+: that count x the group's passes, the ring filling on
 * with the next pass's tiles). length >= 1, so no overflow; quco+ multiplies only when
 * transfers < n <= max_slots (16), so the product fits. g is group i. */
__attribute__((always_inline)) static inline uint32_t cap(const group_t *g, uint32_t i, uint32_t tile_log2,
                                                         uint32_t n)
{
    uint32_t transfers = ((g->length - 1u) >> tile_log2) + 1u;
    if (n > transfers) {
        if (plus_rules)
            transfers *= plus_passes[i];
        if (n > transfers)
            n = transfers;
    }
    return plus_rules ? n : floor_pow2(n);
}

/* Little's law per kernel: memTime of one step (a tile of every streaming queue) over the
 * procTime of a tile, x LITTLE_SCALE (max_slots with FLAG_NO_LITTLE) */
static float little(const planner_t *p, uint32_t tile)
{
    if (p->flags & QUCO_FLAG_NO_LITTLE)
        return (float)GST->max_slots;
    return mem_time(p, tile, p->groups->step_bytes) * (1.0f / proc_time(p, tile)) * QUCO_LITTLE_SCALE;
}

static uint32_t little_slots(const planner_t *p, uint32_t tile_log2)
{
    return cu_step(p, round_pow2(little(p, 1u << tile_log2)));
}

__attribute__((noinline)) static void fill(const planner_t *p, uint32_t tile_log2, uint32_t n, uint8_t *slots)
{
    for (uint32_t i = 0; i < p->groups->n_groups; i++)
        slots[i] = (uint8_t)cap(&p->groups->g[i], i, tile_log2, n); /* stationary entries are ignored */
}

/* Algorithm 3, streaming queues: Little's law, power of two, CU step, capped by the tiles a
 * queue holds; when that does not fit, the CI fallback halved until it fits. Returns whether
 * it fits: it always does unless one slot per queue of the smallest tile does not (the LDS
 * bound leaves room for Little's slots of this tile, or the tile is the smallest). */
/* quco+ only: the ring deepens a slot at a time, up to max_slots, while the CU still holds as
 * many work-groups (LDS partition over the footprint, and barriers) as at n slots, at least one.
 * floor(avail / bytes) >= r0 is tested as r0 x bytes <= avail: two divisions, not one per slot. */
static uint32_t neighbours(planner_t *p, uint32_t tile_log2, uint32_t n)
{
    fits(p, tile_log2, 0, n);
    uint32_t r0 = min_u(p->avail / p->need_bytes, GST->barrier_limit / (QUCO_BARRIERS_PER_SLOT * p->need_slots));
    while (r0 && n < GST->max_slots) {
        fits(p, tile_log2, 0, n + 1u);
        if (r0 * p->need_bytes > p->avail || r0 * QUCO_BARRIERS_PER_SLOT * p->need_slots > GST->barrier_limit)
            break;
        n++;
    }
    return n;
}

static int streaming_slots(planner_t *p, uint32_t tile_log2, uint8_t *slots)
{
    uint32_t n = p->little_n;
    if (plus_rules && p->groups->n_streaming)
        n = neighbours(p, tile_log2, n);
    fill(p, tile_log2, n, slots);
    if (fits(p, tile_log2, slots, 0))
        return 1;
    /* the fallback values are powers of two: rounding them only caps them at max_pow2_slots */
    int low = p->ci_class == QUCO_CI_CLASS_LOW && !(p->flags & QUCO_FLAG_NO_CI_SCALING);
    n = min_u(low ? QUCO_FALLBACK_SLOTS_LOW_CI : QUCO_FALLBACK_SLOTS, max_pow2_slots);
    int ok;
    for (;;) {
        fill(p, tile_log2, n, slots);
        if ((ok = fits(p, tile_log2, slots, 0)) || n <= 1u)
            break;
        n >>= 1;
    }
    return ok;
}

/* Stationary queues share what the streaming queues left (p->need_* of the last fits),
 * evenly: each already has one slot; Algorithm 3 rounds and CU-steps their count like the
 * streaming ones', capped by the tiles the queue holds. */
static void stationary_slots(const planner_t *p, uint32_t tile_log2, uint8_t *slots)
{
    const groups_t *gr = p->groups;
    uint32_t spare = p->avail - p->need_bytes;
    uint32_t spare_barriers = GST->barrier_limit - QUCO_BARRIERS_PER_SLOT * p->need_slots;
    if (gr->n_stationary > 1u) { /* skip two 35-cycle divisions in the common case */
        spare /= gr->n_stationary;
        spare_barriers /= gr->n_stationary;
    }
    uint32_t room_barriers = spare_barriers / QUCO_BARRIERS_PER_SLOT;
    for (uint32_t i = 0; i < gr->n_groups; i++) {
        const group_t *q = &gr->g[i];
        if (!q->stationary)
            continue;
        /* align_up(tile x elem_size) = 2^block_log2: a shift instead of a division */
        uint32_t block_log2 = tile_log2 + q->elem_log2;
        if (block_log2 < QUCO_LDS_ALIGN_LOG2)
            block_log2 = QUCO_LDS_ALIGN_LOG2;
        uint32_t room = 1u + min_u(spare >> block_log2, room_barriers);
        uint32_t s = cap(q, i, tile_log2, cu_step(p, round_pow2((float)min_u(room, GST->max_slots))));
        while (s > room)
            s >>= 1;
        slots[i] = (uint8_t)s;
    }
}

uint32_t plan(const launch_t *l, const groups_t *groups, config_t *out, uint32_t *detail)
{
    const quco_gst_t *g = GST;
    const quco_launch_header_t *h = &l->h;
    planner_t p;
    p.groups = groups;
    p.flags = h->flags;
    plus_rules = h->flags & QUCO_FLAG_QUCO_PLUS;
    if (plus_rules) { /* quco+ reads each group's passes (its first queue's): the paper's rules do not */
        uint32_t min_len = 0xffffffffu;
        const quco_queue_t *q = l->q;
        for (uint32_t i = 0; i < groups->n_groups; q += groups->g[i].count, i++) {
            uint32_t passes = q->passes ? q->passes : 1u;
            uint64_t len = (uint64_t)groups->g[i].length * passes; /* two transfers across the passes */
            plus_passes[i] = (uint16_t)passes;
            if (len < min_len)
                min_len = (uint32_t)len;
        }
        plus_min_len = min_len;
    }
    uint32_t clock = h->core_clock_mhz ? h->core_clock_mhz : g->core_clock_mhz;
    uint32_t cus = h->active_cus ? h->active_cus : g->num_cus;
    uint32_t lds = h->lds_bytes ? h->lds_bytes : g->lds_bytes;
    p.meta = meta_bytes(h->num_queues);
    p.avail = lds > p.meta ? lds - p.meta : 0u;
    p.cus = cus;
    /* the CI class: given by the host, else from the number */
    float ci = h->compute_intensity;
    uint32_t ci_class = h->ci_class;
    if (ci_class == QUCO_CI_CLASS_NUMBER)
        ci_class = ci < QUCO_CI_LOW ? QUCO_CI_CLASS_LOW : ci > QUCO_CI_HIGH ? QUCO_CI_CLASS_HIGH : QUCO_CI_CLASS_MEDIUM;
    p.ci_class = ci_class;
    p.nominal = clock == g->core_clock_mhz;
    set_rates(&p, clock, h->consumer_wavefronts);

    uint32_t tile_log2 = choose_tile(&p);
    if (!streaming_slots(&p, tile_log2, out->slots)) {
        /* nothing fits: not even one slot of the smallest tile per queue (the model checks
         * this first; the answer is the same, the common path is shorter) */
        uint32_t barriers = QUCO_BARRIERS_PER_SLOT * h->num_queues;
        if (barriers > g->barrier_limit) {
            *detail = barriers;
            return QUCO_STATUS_BARRIER_LIMIT;
        }
        fits(&p, min_tile_log2, 0, 1u);
        *detail = p.meta + p.need_bytes;
        return QUCO_STATUS_LDS_NO_FIT;
    }
    /* the last fits() counted the final streaming slots */
    if (groups->n_stationary)
        stationary_slots(&p, tile_log2, out->slots);
    for (uint32_t i = 0; i < groups->n_groups; i++)
        out->count[i] = groups->g[i].count;
    out->n_groups = groups->n_groups;
    out->tile = 1u << tile_log2;
    *detail = 0;
    return QUCO_STATUS_OK;
}
