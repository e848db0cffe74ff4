/* Per launch: validate the record, then QuCo Algorithms 1-3 in float32.
 * host/reference.py is the executable specification; every expression here keeps its
 * operation order so the two agree bit for bit (built with -ffp-contract=off). */
#include "quco.h"

#define OFF(f) __builtin_offsetof(quco_launch_header_t, f)

uint32_t meta_bytes(uint32_t n)
{
    return align_up(sizeof(quco_lds_header_t) + n * (sizeof(quco_queue_desc_t) + sizeof(quco_att_desc_t)));
}

static uint32_t min_u(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t log2_elem(uint32_t e) { return (e >> 1) - (e >> 3); } /* of 1, 2, 4, 8 */

/* The groups of the launch being configured: launch_check fills them, plan reads them. */
static groups_t groups;

/* Copies the record from the mailbox into l while validating it, so every word is read
 * once; groups identical consecutive queues on the way. */
uint32_t launch_check(const volatile uint32_t *src, launch_t *l, uint32_t *detail)
{
    groups_t *gr = &groups;
    const quco_launch_header_t *h = &l->h;
    uint32_t *dst = (uint32_t *)l;
    for (uint32_t i = 0; i < sizeof(quco_launch_header_t) / 4u; i += 4) { /* 2 steps, not 8 */
        uint32_t a = src[i], b = src[i + 1], c = src[i + 2], d = src[i + 3];
        dst[i] = a;
        dst[i + 1] = b;
        dst[i + 2] = c;
        dst[i + 3] = d;
    }
    float ci = h->compute_intensity;
    *detail = 0;
    if (h->magic != QUCO_LAUNCH_MAGIC)
        return QUCO_STATUS_RECORD_MAGIC;
    if (h->flags & ~QUCO_FLAGS_ALL) {
        *detail = h->flags;
        return QUCO_STATUS_BAD_FLAGS;
    }
    uint32_t bad = 0xffffffffu;
    if (!(ci >= 0.0f && ci <= QUCO_LAUNCH_COMPUTE_INTENSITY_HI)) /* false for NaN too */
        bad = OFF(compute_intensity);
    else if (h->ci_class > QUCO_LAUNCH_CI_CLASS_HI)
        bad = OFF(ci_class);
    else if (h->consumer_wavefronts < QUCO_LAUNCH_CONSUMER_WAVEFRONTS_LO ||
             h->consumer_wavefronts > QUCO_LAUNCH_CONSUMER_WAVEFRONTS_HI)
        bad = OFF(consumer_wavefronts);
    else if (h->core_clock_mhz > QUCO_LAUNCH_CORE_CLOCK_MHZ_HI)
        bad = OFF(core_clock_mhz);
    else if (h->active_cus > GST->num_cus)
        bad = OFF(active_cus);
    else if (h->lds_bytes > GST->lds_bytes || h->lds_bytes % QUCO_LDS_ALIGN)
        bad = OFF(lds_bytes);
    if (bad != 0xffffffffu) {
        *detail = bad;
        return QUCO_STATUS_RECORD_FIELD;
    }
    uint32_t n = h->num_queues;
    if (n < 1u || n > min_u(QUCO_MAX_QUEUES, GST->max_queues)) {
        *detail = n;
        return QUCO_STATUS_QUEUE_COUNT;
    }
    /* A queue identical to the one before joins its group without being checked again:
     * the first invalid queue is still the one reported. */
    const volatile uint32_t *w = src + sizeof(quco_launch_header_t) / 4u;
    uint32_t *q = dst + sizeof(quco_launch_header_t) / 4u;
    uint32_t ng = 0, prev0 = 0, prev1 = 0, e_stream = 0, e_all = 0, n_stat = 0;
    group_t *g = gr->g - 1;
    for (uint32_t i = 0; i < n; i++, w += 2, q += 2) {
        uint32_t w0 = w[0], w1 = w[1]; /* length; type | elem_size << 8 | reserved << 16 */
        q[0] = w0;
        q[1] = w1;
        if (ng && w0 == prev0 && w1 == prev1) {
            g->count++;
            n_stat += g->stat;
            continue;
        }
        uint32_t type = w1 & 0xffu, e = (w1 >> 8) & 0xffu, status = QUCO_STATUS_OK;
        if (type > QUCO_QUEUE_STATIONARY)
            status = QUCO_STATUS_QUEUE_TYPE;
        else if (w0 == 0u)
            status = QUCO_STATUS_QUEUE_LENGTH;
        else if (e != 1u && e != 2u && e != 4u && e != 8u)
            status = QUCO_STATUS_ELEM_SIZE;
        if (status != QUCO_STATUS_OK) {
            *detail = i;
            return status;
        }
        g++;
        ng++;
        g->count = 1;
        g->stat = (uint8_t)type;
        g->e = (uint8_t)e;
        g->es = (uint8_t)log2_elem(e);
        n_stat += type;
        e_all = e > e_all ? e : e_all;
        if (type != QUCO_QUEUE_STATIONARY)
            e_stream = e > e_stream ? e : e_stream;
        prev0 = w0;
        prev1 = w1;
    }
    gr->ng = ng;
    gr->n_stat = n_stat;
    gr->n_stream = n - n_stat;
    gr->e_tile = e_stream ? e_stream : e_all; /* largest streaming element, else largest */
    return QUCO_STATUS_OK;
}

/* Everything Algorithms 1-3 need beyond the groups and the GST, derived once per
 * launch. Tiles are powers of two, t = 1 << tk. */
typedef struct {
    uint32_t flags, cls, cu_shift, avail, meta, nominal, wfs, maxp;
    float cpb, lat, inv_sched, overlap, cost_const;
} planner_t;

static uint32_t log2_u(uint32_t v)
{
    uint32_t k = 0;
    while (v >>= 1)
        k++;
    return k;
}

/* v >= 1; clears low set bits until one is left (no clz instruction in RV32IMF) */
static uint32_t floor_pow2(uint32_t v)
{
    while (v & (v - 1u))
        v &= v - 1u;
    return v;
}

/* GST-derived values, computed once at boot (gst_derive); tiles are handled as their
 * log2, t = 1 << k, so the planner only shifts */
static float inv_cl;
static uint32_t min_k, max_k;

/* At the GST's nominal clock the merit scan depends only on Wfs (1..64) and the tile's
 * element size, so boot tabulates it; launches at another (DVFS) clock scan live. */
#define W_CLASSES QUCO_LAUNCH_CONSUMER_WAVEFRONTS_HI
static uint8_t scan_tab[W_CLASSES][4]; /* [Wfs - 1][log2 e] -> log2 tile */

/* The per-launch rates Algorithm 2 needs at a clock and for Wfs consumer wavefronts:
 * cycles per byte of one CU's DRAM share, latencyTotal, and bestLatency = T /
 * (SIMDMulsPerCycle x Wfs), QuCo's form, no cap on Wfs. DRAM latency is a time, so its
 * cycles (the GST's are at the nominal clock) follow the clock; the ATT and L2 run on the
 * core clock. Computed afresh at every launch (an FDIV and a DIV) rather than kept for the
 * nominal clock: the code is shared with boot and the ROM is the scarcer budget. */
static void set_rates(planner_t *p, uint32_t clock, uint32_t wfs)
{
    const quco_gst_t *g = GST;
    float cpb = (float)(clock * g->num_cus) / (float)g->dram_bw_mbps;
    p->cpb = cpb;
    p->lat = (float)(g->lat_att_cycles + g->lat_l2_cycles + g->lat_dram_cycles * clock / g->core_clock_mhz);
    p->wfs = wfs;
    p->inv_sched = 1.0f / (float)(g->simd_muls_per_cycle * wfs);
    p->overlap = (float)min_u(wfs - 1u, g->wavefront_pools);
    p->cost_const = QUCO_COST_A * cpb + QUCO_COST_B * inv_cl;
}

static uint32_t merit_scan(const planner_t *p, uint32_t e);

void gst_derive(void)
{
    const quco_gst_t *g = GST;
    inv_cl = 1.0f / (float)g->cache_line_bytes;
    min_k = log2_u(g->min_tile_elems);
    max_k = log2_u(g->max_tile_elems);
    planner_t p;
    for (uint32_t w = 1; w <= W_CLASSES; w++) {
        set_rates(&p, g->core_clock_mhz, w);
        for (uint32_t es = 0; es < 4u; es++)
            scan_tab[w - 1][es] = (uint8_t)merit_scan(&p, 1u << es);
    }
}

/* procTime from bs = t / bestLatency: the wavefronts beyond the first overlap; below one
 * scheduling round (bs < 1) nothing overlaps, so no negative time */
static float sched_time(const planner_t *p, float bs)
{
    float extra = bs - 1.0f;
    if (extra < 0.0f)
        extra = 0.0f;
    return bs + extra * p->overlap;
}

static float proc_time(const planner_t *p, uint32_t t) { return sched_time(p, (float)t * p->inv_sched); }

/* memTime cycles per tile element for element size e */
static float slope(const planner_t *p, uint32_t e)
{
    return (float)e * p->cpb + (float)(2u * e) * inv_cl;
}

static float mem_time(const planner_t *p, uint32_t t, uint32_t e)
{
    return p->lat + (float)t * slope(p, e);
}

/* 2^-k as a float, exactly (k < 127) */
static float inv_pow2(uint32_t k)
{
    union { uint32_t u; float f; } v = {(127u - k) << 23};
    return v.f;
}

/* Does the configuration fit the LDS and the barrier budget? Streaming groups at
 * slots[i] (or `all` slots when slots is NULL), stationary groups at one slot.
 * Leaves the bytes and the slots it counted in need_bytes and need_slots. */
static uint32_t need_bytes, need_slots;
static int fits(const planner_t *p, uint32_t tk, const uint8_t *slots, uint32_t all)
{
    uint32_t bytes = 0, nslots = 0;
    for (uint32_t i = 0; i < groups.ng; i++) {
        const group_t *g = &groups.g[i];
        uint32_t s = g->stat ? 1u : (slots ? slots[i] : all);
        bytes += g->count * align_up(s << (tk + g->es));
        nslots += g->count * s;
    }
    need_bytes = bytes;
    need_slots = nslots;
    return bytes <= p->avail && QUCO_BARRIERS_PER_SLOT * nslots <= GST->barrier_limit;
}

/* Algorithms 1 and 2: the weighted merit over the tile range; returns log2 of the best. */
static uint32_t merit_scan(const planner_t *p, uint32_t e)
{
    /* weighted = (procTime x cost) / memTime, kept as a fraction: cross-multiplying
     * replaces a 19-cycle FDIV per tile (host/reference.py does the same) */
    /* t doubles each step, so t/sched, t*slope and lat/t double or halve exactly: the
     * terms are updated by one addition or multiplication by 0.5 each, bit for bit the
     * values the model computes afresh */
    float best_num = -1.0f, best_den = 1.0f;
    uint32_t best_k = min_k;
    float bs = (float)(1u << min_k) * p->inv_sched;
    float tm = (float)(1u << min_k) * slope(p, e);
    float lat_t = p->lat * inv_pow2(min_k);
    for (uint32_t k = min_k; k <= max_k; k++, bs += bs, tm += tm, lat_t *= 0.5f) {
        float num = sched_time(p, bs) * (lat_t + p->cost_const), den = p->lat + tm;
        if (num * best_den > best_num * den) {
            best_num = num;
            best_den = den;
            best_k = k;
        }
    }
    return best_k;
}

/* Algorithm 1 in full: merit scan, CI scaling, LDS bound (room to double-buffer every
 * streaming queue). Returns log2 of the tile. */
static uint32_t choose_tile(const planner_t *p)
{
    uint32_t k = p->nominal ? scan_tab[p->wfs - 1u][log2_elem(groups.e_tile)] : merit_scan(p, groups.e_tile);
    if (!(p->flags & QUCO_FLAG_NO_CI_SCALING)) {
        if (p->cls == QUCO_CI_CLASS_LOW && k < max_k)
            k++;
        else if (p->cls == QUCO_CI_CLASS_HIGH && k > min_k)
            k--;
    }
    uint32_t bound = min_u(QUCO_TILE_BOUND_SLOTS, GST->max_slots);
    while (k > min_k) {
        fits(p, k, 0, bound);
        if (need_bytes <= p->avail)
            break;
        k--;
    }
    return k;
}

/* roundToPowerOfTwo: the nearest power of two to r (ties up), within 1..max_slots */
static uint32_t round_pow2(const planner_t *p, float r)
{
    float max = (float)GST->max_slots;
    if (!(r >= 1.0f))
        return 1u;
    uint32_t q = floor_pow2((uint32_t)(r < max ? r : max));
    if (q < p->maxp && r >= 1.5f * (float)q)
        q <<= 1;
    return q;
}

/* roundBasedOnCUs: one halving per doubling of the active CUs beyond CU_SLOT_REF */
static uint32_t cu_step(const planner_t *p, uint32_t n)
{
    n >>= p->cu_shift;
    return n ? n : 1u;
}

/* Algorithm 3, streaming queues: Little's law (memTime / procTime), power of two, CU
 * step; when that does not fit, the CI fallback halved until it fits. Returns whether it
 * fits: it always does unless one slot per queue of the smallest tile does not (the tile
 * bound leaves room for one slot of this tile, or the tile is the smallest). */
static int streaming_slots(const planner_t *p, uint32_t tk, uint8_t *slots)
{
    uint32_t t = 1u << tk;
    float inv_proc = 1.0f / proc_time(p, t);
    for (uint32_t i = 0; i < groups.ng; i++) {
        const group_t *g = &groups.g[i];
        float ratio = (p->flags & QUCO_FLAG_NO_LITTLE) ? (float)GST->max_slots : mem_time(p, t, g->e) * inv_proc;
        slots[i] = (uint8_t)cu_step(p, round_pow2(p, ratio)); /* stationary entries are ignored */
    }
    if (fits(p, tk, slots, 0))
        return 1;
    /* the fallback values are powers of two: rounding them only caps them at maxp */
    int low = p->cls == QUCO_CI_CLASS_LOW && !(p->flags & QUCO_FLAG_NO_CI_SCALING);
    uint32_t n = min_u(low ? QUCO_FALLBACK_SLOTS_LOW_CI : QUCO_FALLBACK_SLOTS, p->maxp);
    int ok;
    while (!(ok = fits(p, tk, 0, n)) && n > 1u)
        n >>= 1;
    for (uint32_t i = 0; i < groups.ng; i++)
        slots[i] = (uint8_t)n;
    return ok;
}

uint32_t plan(const launch_t *l, config_t *out, uint32_t *detail)
{
    const quco_gst_t *g = GST;
    const quco_launch_header_t *h = &l->h;
    const groups_t *gr = &groups;
    planner_t p;
    uint8_t *gslots = out->slots;
    p.flags = h->flags;
    uint32_t clock = h->core_clock_mhz ? h->core_clock_mhz : g->core_clock_mhz;
    uint32_t cus = h->active_cus ? h->active_cus : g->num_cus;
    uint32_t lds = h->lds_bytes ? h->lds_bytes : g->lds_bytes;
    p.meta = meta_bytes(h->num_queues);
    p.avail = lds > p.meta ? lds - p.meta : 0u;
    p.maxp = floor_pow2(g->max_slots);
    p.cu_shift = (p.flags & QUCO_FLAG_NO_CU_AWARE) ? 0u : log2_u(cus / QUCO_CU_SLOT_REF);
    /* the CI class: given by the host, else from the number */
    float ci = h->compute_intensity;
    uint32_t cls = h->ci_class;
    if (cls == QUCO_CI_CLASS_NUMBER)
        cls = ci < QUCO_CI_LOW ? QUCO_CI_CLASS_LOW : ci > QUCO_CI_HIGH ? QUCO_CI_CLASS_HIGH : QUCO_CI_CLASS_MEDIUM;
    p.cls = cls;
    p.nominal = clock == g->core_clock_mhz;
    set_rates(&p, clock, h->consumer_wavefronts);

    uint32_t tk = choose_tile(&p);
    if (!streaming_slots(&p, tk, gslots)) {
        /* nothing fits: not even one slot of the smallest tile per queue (the model checks
         * this first; the answer is the same, the common path is shorter) */
        uint32_t barriers = QUCO_BARRIERS_PER_SLOT * h->num_queues;
        if (barriers > g->barrier_limit) {
            *detail = barriers;
            return QUCO_STATUS_BARRIER_LIMIT;
        }
        fits(&p, min_k, 0, 1u);
        *detail = p.meta + need_bytes;
        return QUCO_STATUS_LDS_NO_FIT;
    }
    /* the last fits() counted the final streaming slots */
    /* stationary queues share what the streaming queues left, evenly: each already has
     * one slot; Algorithm 3 rounds and CU-steps their count like the streaming ones' */
    if (gr->n_stat) {
        uint32_t spare = p.avail - need_bytes;
        uint32_t spare_barriers = g->barrier_limit - QUCO_BARRIERS_PER_SLOT * need_slots;
        if (gr->n_stat > 1u) { /* skip two 35-cycle divisions in the common case */
            spare /= gr->n_stat;
            spare_barriers /= gr->n_stat;
        }
        uint32_t room_barriers = spare_barriers / QUCO_BARRIERS_PER_SLOT;
        for (uint32_t i = 0; i < gr->ng; i++) {
            const group_t *q = &gr->g[i];
            if (!q->stat)
                continue;
            uint32_t block_k = tk + q->es > 7u ? tk + q->es : 7u; /* align_up(t*e) = 2^block_k */
            uint32_t room = 1u + min_u(spare >> block_k, room_barriers);
            uint32_t s = cu_step(&p, round_pow2(&p, (float)min_u(room, g->max_slots)));
            while (s > room)
                s >>= 1;
            gslots[i] = (uint8_t)s;
        }
    }
    for (uint32_t i = 0; i < gr->ng; i++)
        out->count[i] = gr->g[i].count;
    out->ng = gr->ng;
    out->tile = 1u << tk;
    *detail = 0;
    return QUCO_STATUS_OK;
}
