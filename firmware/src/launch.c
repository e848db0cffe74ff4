/* Per launch: validate the record, then QuCo Algorithms 1-3 in float32.
 * host/reference.py is the executable specification; every expression here keeps its
 * operation order so the two agree bit for bit (built with -ffp-contract=off). */
#include "quco.h"

#define OFF(f) __builtin_offsetof(quco_launch_header_t, f)

uint32_t align_up(uint32_t n) { return (n + QUCO_LDS_ALIGN - 1u) & ~(QUCO_LDS_ALIGN - 1u); }

uint32_t meta_bytes(uint32_t n)
{
    return align_up(sizeof(quco_lds_header_t) + n * (sizeof(quco_queue_desc_t) + sizeof(quco_att_desc_t)));
}

static uint32_t min_u(uint32_t a, uint32_t b) { return a < b ? a : b; }

uint32_t launch_check(const launch_t *l, uint32_t *detail)
{
    const quco_launch_header_t *h = &l->h;
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
    for (uint32_t i = 0; i < n; i++) {
        const quco_queue_t *q = &l->q[i];
        uint32_t e = q->elem_size, status = QUCO_STATUS_OK;
        if (q->type > QUCO_QUEUE_STATIONARY)
            status = QUCO_STATUS_QUEUE_TYPE;
        else if (q->length == 0u)
            status = QUCO_STATUS_QUEUE_LENGTH;
        else if (e != 1u && e != 2u && e != 4u && e != 8u)
            status = QUCO_STATUS_ELEM_SIZE;
        if (status != QUCO_STATUS_OK) {
            *detail = i;
            return status;
        }
    }
    return QUCO_STATUS_OK;
}

/* Everything Algorithms 1-3 need, derived once per launch. */
typedef struct {
    const launch_t *l;
    uint32_t n, n_stream, n_stat, flags, cus, avail, meta, e_tile;
    uint32_t min_tile, max_tile, max_slots, barrier_limit;
    float ci, bw, lat, cl, sched, overlap, cost_const;
} planner_t;

static float proc_time(const planner_t *p, uint32_t t)
{
    float bs = (float)t / p->sched;
    float extra = bs - 1.0f;
    if (extra < 0.0f)
        extra = 0.0f;
    return bs + extra * p->overlap;
}

static float mem_time(const planner_t *p, uint32_t t, uint32_t e)
{
    return p->lat + (float)(t * e) / p->bw + (float)(2u * t * e) / p->cl;
}

/* LDS bytes with streaming queues at slots[] (or `all` slots if slots is NULL) and one
 * slot for every stationary queue. */
static uint32_t bytes_needed(const planner_t *p, uint32_t t, const uint8_t *slots, uint32_t all)
{
    uint32_t total = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        const quco_queue_t *q = &p->l->q[i];
        uint32_t s = q->type == QUCO_QUEUE_STATIONARY ? 1u : (slots ? slots[i] : all);
        total += align_up(s * t * q->elem_size);
    }
    return total;
}

static uint32_t barriers_needed(const planner_t *p, const uint8_t *slots)
{
    uint32_t total = 0;
    for (uint32_t i = 0; i < p->n; i++)
        total += p->l->q[i].type == QUCO_QUEUE_STATIONARY ? 1u : slots[i];
    return QUCO_BARRIERS_PER_SLOT * total;
}

static int fits(const planner_t *p, uint32_t t, const uint8_t *slots)
{
    return bytes_needed(p, t, slots, 0) <= p->avail && barriers_needed(p, slots) <= p->barrier_limit;
}

static uint32_t tiles_in(uint32_t length, uint32_t t) { return length / t + (length % t ? 1u : 0u); }

/* v >= 1; clears low set bits until one is left (no clz instruction in RV32IMF) */
static uint32_t floor_pow2(uint32_t v)
{
    while (v & (v - 1u))
        v &= v - 1u;
    return v;
}

/* Algorithms 1 and 2: weighted merit over the tile range, CI scaling, LDS bound. */
static uint32_t choose_tile(const planner_t *p)
{
    float best_w = -1.0f;
    uint32_t best_t = p->min_tile;
    for (uint32_t t = p->min_tile; t <= p->max_tile; t *= 2u) {
        float merit = proc_time(p, t) / mem_time(p, t, p->e_tile);
        float w = merit * (p->lat / (float)t + p->cost_const);
        if (w > best_w) {
            best_w = w;
            best_t = t;
        }
    }
    if (!(p->flags & QUCO_FLAG_NO_CI_SCALING)) {
        if (p->ci < QUCO_CI_LOW && best_t < p->max_tile)
            best_t *= 2u;
        else if (p->ci > QUCO_CI_HIGH && best_t > p->min_tile)
            best_t /= 2u;
    }
    while (best_t > p->min_tile && bytes_needed(p, best_t, 0, QUCO_TILE_BOUND_SLOTS) > p->avail)
        best_t /= 2u;
    return best_t;
}

/* Algorithm 3, streaming queues: Little's law, CU-aware rounding, length cap. */
static uint32_t little_slots(const planner_t *p, const quco_queue_t *q, uint32_t t)
{
    uint32_t s;
    if (p->flags & QUCO_FLAG_NO_LITTLE) {
        s = p->max_slots;
    } else {
        float ratio = (float)p->n_stream * mem_time(p, t, q->elem_size) / proc_time(p, t);
        if (!(p->flags & QUCO_FLAG_NO_CU_AWARE))
            ratio = ratio * (float)QUCO_CU_SLOT_REF / (float)p->cus;
        if (!(ratio >= 1.0f))
            s = 1u;
        else if (ratio >= (float)p->max_slots)
            s = p->max_slots;
        else
            s = (uint32_t)ratio;
    }
    return min_u(floor_pow2(s), tiles_in(q->length, t));
}

static void streaming_slots(const planner_t *p, uint32_t t, uint8_t *slots)
{
    for (uint32_t i = 0; i < p->n; i++)
        slots[i] = p->l->q[i].type == QUCO_QUEUE_STREAMING ? (uint8_t)little_slots(p, &p->l->q[i], t) : 0u;
    if (fits(p, t, slots))
        return;
    int low = p->ci < QUCO_CI_LOW && !(p->flags & QUCO_FLAG_NO_CI_SCALING);
    uint32_t fallback = low ? QUCO_FALLBACK_SLOTS_LOW_CI : QUCO_FALLBACK_SLOTS;
    uint32_t any_above_one = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (slots[i] > fallback)
            slots[i] = (uint8_t)fallback;
        any_above_one |= slots[i] > 1u;
    }
    while (any_above_one && !fits(p, t, slots)) {
        any_above_one = 0;
        for (uint32_t i = 0; i < p->n; i++) {
            if (slots[i] > 1u)
                slots[i] /= 2u;
            any_above_one |= slots[i] > 1u;
        }
    }
}

uint32_t plan(const launch_t *l, config_t *out, uint32_t *detail)
{
    const volatile quco_gst_t *g = GST;
    const quco_launch_header_t *h = &l->h;
    planner_t p;
    p.l = l;
    p.n = h->num_queues;
    p.flags = h->flags;
    p.ci = h->compute_intensity;
    uint32_t clock = h->core_clock_mhz ? h->core_clock_mhz : g->core_clock_mhz;
    p.cus = h->active_cus ? h->active_cus : g->num_cus;
    uint32_t lds = h->lds_bytes ? h->lds_bytes : g->lds_bytes;
    p.meta = meta_bytes(p.n);
    p.avail = lds > p.meta ? lds - p.meta : 0u;
    p.min_tile = g->min_tile_elems;
    p.max_tile = g->max_tile_elems;
    p.max_slots = g->max_slots;
    p.barrier_limit = g->barrier_limit;
    p.bw = (float)g->dram_bw_mbps / (float)clock / (float)g->num_cus;
    p.lat = (float)(g->lat_att_cycles + g->lat_l2_cycles + g->lat_dram_cycles);
    p.cl = (float)g->cache_line_bytes;
    uint32_t wfs = h->consumer_wavefronts;
    p.sched = (float)(g->simd_muls_per_cycle * min_u(wfs, QUCO_WF_SCHED_CAP));
    p.overlap = (float)min_u(wfs - 1u, g->wavefront_pools);
    p.cost_const = QUCO_COST_A / p.bw + QUCO_COST_B / p.cl;
    p.n_stream = p.n_stat = 0;
    uint32_t e_stream = 0, e_all = 0;
    for (uint32_t i = 0; i < p.n; i++) {
        uint32_t e = l->q[i].elem_size;
        e_all = e > e_all ? e : e_all;
        if (l->q[i].type == QUCO_QUEUE_STREAMING) {
            p.n_stream++;
            e_stream = e > e_stream ? e : e_stream;
        } else {
            p.n_stat++;
        }
    }
    p.e_tile = p.n_stream ? e_stream : e_all;

    uint8_t *slots = out->slots;
    for (uint32_t i = 0; i < QUCO_MAX_QUEUES; i++)
        slots[i] = 0;
    for (uint32_t i = 0; i < p.n; i++)
        slots[i] = 1u;
    uint32_t need = barriers_needed(&p, slots);
    if (need > p.barrier_limit) {
        *detail = need;
        return QUCO_STATUS_BARRIER_LIMIT;
    }
    need = bytes_needed(&p, p.min_tile, 0, 1u);
    if (need > p.avail) {
        *detail = p.meta + need;
        return QUCO_STATUS_LDS_NO_FIT;
    }
    uint32_t t = choose_tile(&p);
    streaming_slots(&p, t, slots);
    while (!fits(&p, t, slots)) { /* terminates: the smallest tile with one slot fits */
        t /= 2u;
        streaming_slots(&p, t, slots);
    }
    /* stationary queues share what the streaming queues left, evenly */
    if (p.n_stat) {
        uint32_t spare = (p.avail - bytes_needed(&p, t, slots, 0)) / p.n_stat;
        uint32_t spare_barriers = (p.barrier_limit - barriers_needed(&p, slots)) / p.n_stat;
        for (uint32_t i = 0; i < p.n; i++) {
            const quco_queue_t *q = &l->q[i];
            if (q->type != QUCO_QUEUE_STATIONARY)
                continue;
            uint32_t s = 1u + spare / align_up(t * q->elem_size);
            s = min_u(s, 1u + spare_barriers / QUCO_BARRIERS_PER_SLOT);
            s = min_u(min_u(s, p.max_slots), tiles_in(q->length, t));
            slots[i] = (uint8_t)s;
        }
    }
    out->tile = t;
    *detail = 0;
    return QUCO_STATUS_OK;
}
