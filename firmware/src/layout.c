/* Write the configuration at the LDS base: descriptors first, the header last, and the
 * header's generation word very last, so a reader that sees the new generation sees a
 * complete configuration. Only called after planning succeeded: failures touch nothing. */
#include "quco.h"

#define QD_WORDS (sizeof(quco_queue_desc_t) / 4u)
#define AD_WORDS (sizeof(quco_att_desc_t) / 4u)

void layout_write(const launch_t *l, const config_t *c, uint32_t generation)
{
    uint32_t n = l->h.num_queues, t = c->tile, meta = meta_bytes(n);
    volatile uint32_t *d = LDS_WORDS + sizeof(quco_lds_header_t) / 4u; /* queue descriptors */
    volatile uint32_t *a = d + n * QD_WORDS;                            /* ATT descriptors */
    const uint32_t *w = (const uint32_t *)l->q;
    uint32_t offset = meta, barrier = 0;
    uint32_t prev0 = 0, prev1 = 0, prev_s = 0, slot_bytes = 0, d2 = 0, a3 = 0, block = 0, count = 0;
    for (uint32_t i = 0; i < n; i++, w += 2, d += QD_WORDS, a += AD_WORDS) {
        uint32_t s = c->slots[i];
        if (!i || w[0] != prev0 || w[1] != prev1 || s != prev_s) { /* not a repeat of the last queue */
            uint32_t type = w[1] & 0xffu, e = (w[1] >> 8) & 0xffu;
            prev0 = w[0];
            prev1 = w[1];
            prev_s = s;
            slot_bytes = t * e;
            d2 = s | type << 16 | e << 24;
            a3 = s | e << 16;
            block = align_up(s * slot_bytes);
            count = QUCO_BARRIERS_PER_SLOT * s;
        }
        d[0] = offset;
        d[1] = slot_bytes;
        d[2] = d2;
        d[3] = barrier | count << 16;
        a[0] = offset;
        a[1] = t;
        a[2] = slot_bytes;
        a[3] = a3;
        a[4] = prev0;
        a[5] = barrier | i << 16;
        offset += block;
        barrier += count;
    }
    /* the gap up to meta is not part of the configuration: left as it is */
    volatile quco_lds_header_t *hd = (volatile quco_lds_header_t *)QUCO_LDS_BASE;
    hd->magic = QUCO_LDS_MAGIC;
    hd->num_queues = n;
    hd->tile_elems = t;
    hd->meta_bytes = meta;
    hd->used_bytes = offset;
    hd->barriers_used = barrier;
    hd->compute_intensity = l->h.compute_intensity;
    hd->generation = generation;
}
